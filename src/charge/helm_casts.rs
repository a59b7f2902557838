//! Helm's numeric casts, exactly as the charts run them.
//!
//! Cozystack renders its charts with Flux's helm-controller (Helm 3.17), whose templates get
//! sprig v3.3.0 over spf13/cast v1.7.0. A chart's `int64` and `int` are sprig's `toInt64` and
//! `toInt`, which call `cast.ToInt64E`/`cast.ToIntE` and drop the error (a failed cast is 0):
//!
//! - a string is parsed by Go's `strconv.ParseInt(trimZeroDecimal(s), 0, 0)`: `trimZeroDecimal`
//!   drops a fraction made only of zeros (`"2.0"`, `"2.00"` are `"2"`; `"2."`, `"2.5"` are kept),
//!   and base 0 reads a sign, then `0x`/`0b`/`0o` prefixes, a leading `0` as octal (`"010"` is
//!   8, `"08"` fails), and `_` between digits; a syntax or range error is 0;
//! - a number is a Go `float64` (Helm decodes values from JSON), truncated toward zero.
//!
//! Pure: no I/O, no panics on any input.

use serde_json::Value;

/// What `int64` (or `int`, the same on 64-bit) renders for a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int64 {
    /// The cast succeeded.
    Parsed(i64),
    /// The cast failed and sprig rendered 0 (a string Go cannot parse, or out of range).
    Failed,
    /// A JSON number outside `int64`, where Go's conversion is undefined.
    OutOfRange,
    /// A value that is not a string or a number (the charts' schemas never let one through).
    NotScalar,
}

impl Int64 {
    /// The integer the template renders; `None` where Go's result is undefined or not a number.
    pub fn rendered(self) -> Option<i64> {
        match self {
            Int64::Parsed(n) => Some(n),
            Int64::Failed => Some(0),
            Int64::OutOfRange | Int64::NotScalar => None,
        }
    }
}

/// sprig's `toInt64` (and `toInt`) on a JSON value, as the template sees it.
pub fn to_int64(value: &Value) -> Int64 {
    match value {
        Value::String(s) => match parse_int(trim_zero_decimal(s)) {
            Some(n) => Int64::Parsed(n),
            None => Int64::Failed,
        },
        Value::Number(n) => {
            // Helm's values are float64: integers above 2^53 round as Go rounds them.
            let f = n.as_f64().unwrap_or(f64::NAN);
            // 2^63 as f64; Go's conversion outside [-2^63, 2^63) is undefined.
            const LIMIT: f64 = 9_223_372_036_854_775_808.0;
            if f.is_finite() && (-LIMIT..LIMIT).contains(&f) {
                Int64::Parsed(f.trunc() as i64)
            } else {
                Int64::OutOfRange
            }
        }
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => Int64::NotScalar,
    }
}

/// spf13/cast's `trimZeroDecimal`: `"12.00"` is `"12"`, `"12.01"` and `"12."` unchanged.
pub fn trim_zero_decimal(s: &str) -> &str {
    let bytes = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=bytes.len()).rev() {
        match bytes[i - 1] {
            b'.' if found_zero => return &s[..i - 1],
            b'.' => {}
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Go's `strconv.ParseInt(s, 0, 64)`; `None` on a syntax or range error.
pub fn parse_int(s: &str) -> Option<i64> {
    let (negative, unsigned) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let magnitude = parse_uint(unsigned)?;
    if negative {
        if magnitude <= 1 << 63 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)`; `None` on a syntax or range error.
pub fn parse_uint(s0: &str) -> Option<u64> {
    if s0.is_empty() {
        return None;
    }
    let b = s0.as_bytes();
    let (base, digits): (u64, &[u8]) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &b[2..]),
            Some(b'o') if b.len() >= 3 => (8, &b[2..]),
            Some(b'x') if b.len() >= 3 => (16, &b[2..]),
            _ => (8, &b[1..]),
        }
    } else {
        (10, b)
    };
    let mut n: u64 = 0;
    let mut underscores = false;
    for &c in digits {
        if c == b'_' {
            underscores = true;
            continue;
        }
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            b'a'..=b'z' => u64::from(c - b'a') + 10,
            b'A'..=b'Z' => u64::from(c - b'A') + 10,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(base)?.checked_add(d)?;
    }
    if underscores && !underscore_ok(s0) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.underscoreOK`: underscores only between digits (or after a base prefix).
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    // '^' a start or underscore may follow; '0' a digit or base prefix; '_' an underscore.
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        i = 1;
    }
    let mut hex = false;
    if b.len() - i >= 2 && b[i] == b'0' {
        let l = b[i + 1].to_ascii_lowercase();
        if l == b'b' || l == b'o' || l == b'x' {
            hex = l == b'x';
            i += 2;
            saw = b'0';
        }
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case("2", Some(2))]
    #[case("+2", Some(2))]
    #[case("-2", Some(-2))]
    #[case("010", Some(8))]
    #[case("08", None)]
    #[case("0", Some(0))]
    #[case("00", Some(0))]
    #[case("0x10", Some(16))]
    #[case("0X1f", Some(31))]
    #[case("0b101", Some(5))]
    #[case("0o17", Some(15))]
    #[case("0x", None)]
    #[case("1_000", Some(1000))]
    #[case("0x_10", Some(16))]
    #[case("_1", None)]
    #[case("1__0", None)]
    #[case("1_", None)]
    #[case("", None)]
    #[case("+", None)]
    #[case("+-1", None)]
    #[case("9223372036854775807", Some(i64::MAX))]
    #[case("9223372036854775808", None)]
    #[case("-9223372036854775808", Some(i64::MIN))]
    #[case("-9223372036854775809", None)]
    #[case("1500m", None)]
    #[case("2e3", None)]
    #[case(" 2", None)]
    fn go_parse_int_base_0(#[case] s: &str, #[case] expected: Option<i64>) {
        assert_eq!(parse_int(s), expected);
    }

    #[rstest]
    #[case("2.0", "2")]
    #[case("2.00", "2")]
    #[case("010.0", "010")]
    #[case("2.", "2.")]
    #[case("2.5", "2.5")]
    #[case("2.50", "2.50")]
    #[case(".0", "")]
    #[case("0.0", "0")]
    #[case("20", "20")]
    #[case("", "")]
    fn cast_trim_zero_decimal(#[case] s: &str, #[case] expected: &str) {
        assert_eq!(trim_zero_decimal(s), expected);
    }

    #[rstest]
    #[case(json!("2.0"), Int64::Parsed(2))]
    #[case(json!("010"), Int64::Parsed(8))]
    #[case(json!("08"), Int64::Failed)]
    #[case(json!("1.5"), Int64::Failed)]
    #[case(json!(".0"), Int64::Failed)]
    #[case(json!(3), Int64::Parsed(3))]
    #[case(json!(-3), Int64::Parsed(-3))]
    #[case(json!(2.9), Int64::Parsed(2))]
    #[case(json!(-2.9), Int64::Parsed(-2))]
    #[case(json!(9_007_199_254_740_993_u64), Int64::Parsed(9_007_199_254_740_992))]
    #[case(json!(u64::MAX), Int64::OutOfRange)]
    #[case(json!(true), Int64::NotScalar)]
    #[case(json!(null), Int64::NotScalar)]
    #[case(json!([1]), Int64::NotScalar)]
    fn sprig_to_int64(#[case] v: Value, #[case] expected: Int64) {
        assert_eq!(to_int64(&v), expected);
    }

    #[test]
    fn a_failed_cast_renders_zero() {
        assert_eq!(Int64::Failed.rendered(), Some(0));
        assert_eq!(Int64::Parsed(-1).rendered(), Some(-1));
        assert_eq!(Int64::OutOfRange.rendered(), None);
    }
}
