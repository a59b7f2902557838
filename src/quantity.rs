//! Exact Kubernetes quantities.
//!
//! A [`Quantity`] is a whole number of nano-units held in an `i128`: every value Kubernetes
//! can serialise at its finest scale (`1n`) is exact, sums never round, and the range
//! (about 1.7e29 units) is far beyond any real quota, so an overflow is an input to reject,
//! not a value to saturate. Parsing follows the grammar of `k8s.io/apimachinery`'s
//! `resource.ParseQuantity`, including its rule that precision finer than `1n` rounds *up*.
//!
//! Written by hand because the one Kubernetes quantity crate for Rust (`kube_quantity`) is
//! built on a 96-bit decimal and pins a k8s-openapi release other than the one the
//! Kubewarden SDK needs.

/// Nano-units per unit.
const NANO: i128 = 1_000_000_000;
/// Longest input accepted: far longer than any real quantity, short enough to bound work.
const MAX_LEN: usize = 128;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity(i128);

/// Why a quantity string was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("an empty string is not a quantity")]
    Empty,
    #[error("a quantity longer than {MAX_LEN} characters")]
    TooLong,
    #[error("{0:?} is not a valid quantity")]
    Malformed(String),
    #[error("{0:?} is negative")]
    Negative(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// Why a JSON value is not a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JsonQuantityError {
    /// Neither a string nor a number: the caller names what it found.
    #[error("not a string or a number")]
    WrongType,
    #[error(transparent)]
    Invalid(#[from] QuantityError),
}

/// How a quantity is printed: CPU and device counts read best in decimal SI (`1500m`, `2`),
/// memory and storage in binary SI where exact (`8Gi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    Decimal,
    Binary,
}

impl Quantity {
    pub const ZERO: Quantity = Quantity(0);

    pub const fn from_nanos(nanos: i128) -> Self {
        Quantity(nanos)
    }

    pub const fn nanos(self) -> i128 {
        self.0
    }

    /// A whole number of units.
    pub fn from_units(units: u64) -> Self {
        Quantity(i128::from(units) * NANO)
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    pub fn is_positive(self) -> bool {
        self.0 > 0
    }

    pub fn is_negative(self) -> bool {
        self.0 < 0
    }

    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        self.0.checked_add(other.0).map(Quantity)
    }

    pub fn checked_sub(self, other: Quantity) -> Option<Quantity> {
        self.0.checked_sub(other.0).map(Quantity)
    }

    pub fn checked_mul(self, factor: u64) -> Option<Quantity> {
        self.0.checked_mul(i128::from(factor)).map(Quantity)
    }

    /// Parses any Kubernetes quantity form, refusing negative values (no reservation or
    /// budget is ever negative).
    pub fn parse_non_negative(s: &str) -> Result<Quantity, QuantityError> {
        let q = Quantity::parse(s)?;
        if q.0 < 0 {
            return Err(QuantityError::Negative(s.to_string()));
        }
        Ok(q)
    }

    /// A non-negative quantity as JSON carries it, a string (`"250m"`) or a number (`2`,
    /// `1.5`): the one reading of quantities in values, quotas, instance types and settings.
    pub fn from_json(value: &serde_json::Value) -> Result<Quantity, JsonQuantityError> {
        let parsed = match value {
            serde_json::Value::String(s) => Quantity::parse_non_negative(s),
            serde_json::Value::Number(n) => Quantity::parse_non_negative(&n.to_string()),
            _ => return Err(JsonQuantityError::WrongType),
        };
        Ok(parsed?)
    }

    /// Parses `<sign><number><suffix>` as Kubernetes does: `250m`, `1.5`, `2Gi`, `1e3`,
    /// `500M`, `+1`, `.5`, `5.`.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::Empty);
        }
        if s.len() > MAX_LEN {
            return Err(QuantityError::TooLong);
        }
        let malformed = || QuantityError::Malformed(s.to_string());
        let too_large = || QuantityError::TooLarge(s.to_string());
        let bytes = s.as_bytes();

        let (negative, rest) = match bytes[0] {
            b'+' => (false, &bytes[1..]),
            b'-' => (true, &bytes[1..]),
            _ => (false, bytes),
        };
        let int_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let (int_digits, rest) = rest.split_at(int_len);
        let (frac_digits, rest) = match rest.first() {
            Some(b'.') => {
                let rest = &rest[1..];
                let frac_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
                rest.split_at(frac_len)
            }
            _ => (&rest[..0], rest),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(malformed());
        }
        let (exp10, exp1024) = parse_suffix(rest).ok_or_else(malformed)?;

        // value = digits * 10^(exp10 - frac_len) * 1024^exp1024, in nano-units.
        let mut digits: Vec<u8> = int_digits
            .iter()
            .chain(frac_digits)
            .map(|b| b - b'0')
            .collect();
        for _ in 0..exp1024 {
            multiply_small(&mut digits, 1024);
        }
        let shift = exp10 - frac_digits.len() as i64 + 9;
        let magnitude = shift_to_integer(digits, shift).ok_or_else(too_large)?;
        let value = i128::try_from(magnitude).map_err(|_| too_large())?;
        Ok(Quantity(if negative { -value } else { value }))
    }

    /// Kubernetes canonical form in the given notation; parsing it gives back `self`.
    pub fn to_canonical(self, notation: Notation) -> String {
        if self.0 < 0 {
            return format!("-{}", Quantity(-self.0).to_canonical(notation));
        }
        if self.0 == 0 {
            return "0".to_string();
        }
        if notation == Notation::Binary && self.0 % NANO == 0 {
            const BINARY: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
            let mut units = self.0 / NANO;
            let mut power = 0;
            while power < BINARY.len() && units % 1024 == 0 {
                units /= 1024;
                power += 1;
            }
            if power > 0 {
                return format!("{units}{}", BINARY[power - 1]);
            }
        }
        const DECIMAL: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
        let mut mantissa = self.0;
        let mut step = 0;
        while step + 1 < DECIMAL.len() && mantissa % 1000 == 0 {
            mantissa /= 1000;
            step += 1;
        }
        format!("{mantissa}{}", DECIMAL[step])
    }
}

/// The suffix as (decimal exponent, binary exponent), or `None` when it is not one.
fn parse_suffix(suffix: &[u8]) -> Option<(i64, u32)> {
    let decimal = |e: i64| Some((e, 0));
    match suffix {
        b"" => decimal(0),
        b"n" => decimal(-9),
        b"u" => decimal(-6),
        b"m" => decimal(-3),
        b"k" => decimal(3),
        b"M" => decimal(6),
        b"G" => decimal(9),
        b"T" => decimal(12),
        b"P" => decimal(15),
        b"E" => decimal(18),
        b"Ki" => Some((0, 1)),
        b"Mi" => Some((0, 2)),
        b"Gi" => Some((0, 3)),
        b"Ti" => Some((0, 4)),
        b"Pi" => Some((0, 5)),
        b"Ei" => Some((0, 6)),
        [b'e' | b'E', exponent @ ..] => parse_exponent(exponent).map(|e| (e, 0)),
        _ => None,
    }
}

/// A signed decimal integer exponent, clamped far outside the representable range so a
/// huge exponent costs nothing and still overflows (or rounds) as it should.
fn parse_exponent(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: i64 = 0;
    for d in digits {
        value = (value * 10 + i64::from(d - b'0')).min(1_000_000);
    }
    Some(if negative { -value } else { value })
}

/// `digits *= factor`, most significant digit first.
fn multiply_small(digits: &mut Vec<u8>, factor: u32) {
    let mut carry = 0u32;
    for d in digits.iter_mut().rev() {
        let v = u32::from(*d) * factor + carry;
        *d = (v % 10) as u8;
        carry = v / 10;
    }
    while carry > 0 {
        digits.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
}

/// `digits * 10^shift` as an integer, rounding a discarded non-zero fraction up (the
/// Kubernetes rule for precision below `1n`); `None` when it does not fit in a `u128`.
fn shift_to_integer(mut digits: Vec<u8>, shift: i64) -> Option<u128> {
    let first_nonzero = digits.iter().position(|&d| d != 0);
    let Some(first_nonzero) = first_nonzero else {
        return Some(0);
    };
    digits.drain(..first_nonzero);
    let mut round_up = false;
    if shift < 0 {
        let cut = usize::try_from(-shift)
            .unwrap_or(usize::MAX)
            .min(digits.len());
        round_up = digits[digits.len() - cut..].iter().any(|&d| d != 0);
        digits.truncate(digits.len() - cut);
    } else if digits.len() as i64 + shift > 39 {
        return None;
    } else {
        digits.extend(std::iter::repeat_n(0, shift as usize));
    }
    let mut value: u128 = 0;
    for d in digits {
        value = value.checked_mul(10)?.checked_add(u128::from(d))?;
    }
    if round_up {
        value = value.checked_add(1)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(s: &str) -> i128 {
        Quantity::parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .nanos()
    }

    #[test]
    fn parses_every_kubernetes_form() {
        assert_eq!(nanos("250m"), 250_000_000);
        assert_eq!(nanos("1.5"), 1_500_000_000);
        assert_eq!(nanos("2Gi"), 2 * 1024 * 1024 * 1024 * NANO);
        assert_eq!(nanos("1e3"), 1000 * NANO);
        assert_eq!(nanos("1E3"), 1000 * NANO);
        assert_eq!(nanos("1E"), 1_000_000_000_000_000_000 * NANO);
        assert_eq!(nanos("500M"), 500_000_000 * NANO);
        assert_eq!(nanos("+1"), NANO);
        assert_eq!(nanos(".5"), NANO / 2);
        assert_eq!(nanos("5."), 5 * NANO);
        assert_eq!(nanos("1.5Gi"), 1536 * 1024 * 1024 * NANO);
        assert_eq!(nanos("0.0001m"), 100);
        assert_eq!(nanos("100n"), 100);
        assert_eq!(nanos("3u"), 3000);
        assert_eq!(nanos("1e-3"), 1_000_000);
        assert_eq!(nanos("-1"), -NANO);
        assert_eq!(nanos("0"), 0);
        assert_eq!(nanos("000000000000000000000000000000000000000000001"), NANO);
    }

    #[test]
    fn rounds_sub_nano_precision_up() {
        assert_eq!(nanos("0.1n"), 1);
        assert_eq!(nanos("1.0000000001"), NANO + 1);
        assert_eq!(nanos("1e-400"), 1);
        assert_eq!(nanos("0e-400"), 0);
        assert_eq!(nanos("1.5000000000"), 1_500_000_000);
    }

    #[test]
    fn refuses_malformed_and_huge_input() {
        for bad in [
            "", "1.5.3Gi", "Ki", "-", "+", ".", "1 Gi", " 1", "1Gi ", "1KI", "1kb", "1e", "1e+",
            "1ee3", "1.5e3.1", "١٢", "1٢", "0x10", "1_000", "--1", "+-1", "1Mi2", "e3", "m",
            "1.5Ki.", "NaN", "inf",
        ] {
            assert!(
                matches!(
                    Quantity::parse(bad),
                    Err(QuantityError::Malformed(_) | QuantityError::Empty)
                ),
                "{bad:?} was accepted: {:?}",
                Quantity::parse(bad)
            );
        }
        assert!(matches!(
            Quantity::parse("1e400"),
            Err(QuantityError::TooLarge(_))
        ));
        assert!(matches!(
            Quantity::parse("1e1000000000000"),
            Err(QuantityError::TooLarge(_))
        ));
        assert!(matches!(
            Quantity::parse(&"9".repeat(40)),
            Err(QuantityError::TooLarge(_))
        ));
        assert!(matches!(
            Quantity::parse(&"9".repeat(200)),
            Err(QuantityError::TooLong)
        ));
        assert!(matches!(
            Quantity::parse_non_negative("-1"),
            Err(QuantityError::Negative(_))
        ));
        assert_eq!(Quantity::parse_non_negative("-0").unwrap(), Quantity::ZERO);
    }

    #[test]
    fn prints_canonical_forms() {
        let canon = |s: &str, n| Quantity::parse(s).unwrap().to_canonical(n);
        assert_eq!(canon("1.5", Notation::Decimal), "1500m");
        assert_eq!(canon("2000", Notation::Decimal), "2k");
        assert_eq!(canon("1536", Notation::Decimal), "1536");
        assert_eq!(canon("0.0001m", Notation::Decimal), "100n");
        assert_eq!(canon("8Gi", Notation::Binary), "8Gi");
        assert_eq!(canon("8192Mi", Notation::Binary), "8Gi");
        assert_eq!(canon("1.5Gi", Notation::Binary), "1536Mi");
        assert_eq!(canon("500M", Notation::Binary), "500M");
        assert_eq!(canon("512", Notation::Binary), "512");
        assert_eq!(canon("0.5", Notation::Binary), "500m");
        assert_eq!(canon("-4Gi", Notation::Binary), "-4Gi");
        assert_eq!(canon("0", Notation::Binary), "0");
    }

    #[test]
    fn arithmetic_is_checked() {
        let max = Quantity::from_nanos(i128::MAX);
        assert_eq!(max.checked_add(Quantity::from_nanos(1)), None);
        assert_eq!(max.checked_mul(2), None);
        assert_eq!(
            Quantity::from_units(3).checked_mul(4),
            Some(Quantity::from_units(12))
        );
    }
}
