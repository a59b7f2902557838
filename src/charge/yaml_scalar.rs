//! How Kubernetes reads a value a chart renders unquoted: a YAML 1.1 plain scalar.
//!
//! Helm sends each rendered manifest through sigs.k8s.io/yaml, whose `YAMLToJSON` resolves a
//! plain scalar with go-yaml v2 (`resolve.go`, vendored as `sigs.k8s.io/yaml/goyaml.v2`,
//! upstream `go.yaml.in/yaml/v2`), not as the chart's author wrote it:
//!
//! - the strings of its table are not numbers: `""`, `~`, `null` (null), `y`, `yes`, `on`,
//!   `true`, `n`, `no`, `off`, `false` in three casings (booleans), `.inf`, `.nan` (floats that
//!   JSON cannot hold);
//! - a scalar that starts with a digit or a sign has every `_` removed, then is Go's
//!   `strconv.ParseInt(s, 0, 64)` (`010` is 8, `0x1A` 26, `0b101` 5, `0o17` 15, `+5` 5, `1_000`
//!   1000), else `strconv.ParseUint(s, 0, 64)`, else a float when it matches
//!   `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` and Go's `ParseFloat` reads it
//!   in range (`08` is 8.0, `1e1` 10.0, `1.5` 1.5); a `YYYY-…` timestamp is no number either;
//! - a scalar that starts with `.` is a float when `ParseFloat` reads it (`.5`);
//! - anything else is a string (`500m`, `2Ki`); base 60 (`1:30`) is unsupported, a string.
//!
//! A float is Go's `float64`, which `encoding/json` writes back as digits when it is whole:
//! the API server then sees an integer. Pure: no I/O, no panics on any input.

use super::helm_casts;

/// What go-yaml v2 resolves a plain scalar to, as far as a number goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// An integer (`!!int`).
    Int(i128),
    /// A finite float (`!!float`).
    Float(f64),
    /// A string, null, boolean, timestamp or non-finite float: no number.
    NotANumber,
}

/// The plain scalar `text`, as go-yaml v2 resolves it.
pub fn resolve(text: &str) -> Scalar {
    match text.as_bytes().first() {
        Some(b'0'..=b'9' | b'+' | b'-') => {
            let plain = text.replace('_', "");
            if let Some(n) = helm_casts::parse_int(&plain) {
                return Scalar::Int(i128::from(n));
            }
            if let Some(n) = helm_casts::parse_uint(&plain) {
                return Scalar::Int(i128::from(n));
            }
            float(&plain)
        }
        Some(b'.') if !text.contains('_') => float(text),
        _ => Scalar::NotANumber,
    }
}

/// A YAML-style float that Go's `ParseFloat` reads in range.
fn float(s: &str) -> Scalar {
    if !yaml_style_float(s) {
        return Scalar::NotANumber;
    }
    // Both Go and Rust round the decimal to the nearest float64; Go reports a range error
    // (then the scalar stays a string) where Rust answers an infinity.
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Scalar::Float(f),
        _ => Scalar::NotANumber,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, go-yaml v2's `yamlStyleFloat`.
fn yaml_style_float(s: &str) -> bool {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mantissa_end = if let Some(fraction) = s.strip_prefix('.') {
        let n = digits(fraction);
        if n == 0 {
            return false;
        }
        1 + n
    } else {
        let n = digits(s);
        if n == 0 {
            return false;
        }
        match s[n..].strip_prefix('.') {
            Some(fraction) => n + 1 + digits(fraction),
            None => n,
        }
    };
    let rest = &s[mantissa_end..];
    if rest.is_empty() {
        return true;
    }
    let Some(exponent) = rest.strip_prefix(['e', 'E']) else {
        return false;
    };
    let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    !exponent.is_empty() && digits(exponent) == exponent.len()
}

/// The whole number an integer field receives from `text` rendered unquoted, or what YAML
/// read instead (for a message: a chart's schema lets only numbers and strings through, so
/// any other non-number is called a string). A whole float is the integer it prints as.
pub fn whole(text: &str) -> Result<i128, String> {
    match resolve(text) {
        Scalar::Int(n) => Ok(n),
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 1e21 => {
            // |f| < 1e21 < 2^70: exact in i128, and what encoding/json prints as digits.
            Ok(f as i128)
        }
        Scalar::Float(f) => Err(format!("the float {f}")),
        Scalar::NotANumber => Err("a string".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_scalars_as_go_yaml_v2_does() {
        let cases: &[(&str, Scalar)] = &[
            ("4", Scalar::Int(4)),
            ("010", Scalar::Int(8)),
            ("-010", Scalar::Int(-8)),
            ("+5", Scalar::Int(5)),
            ("0x1A", Scalar::Int(26)),
            ("0b101", Scalar::Int(5)),
            ("0o17", Scalar::Int(15)),
            ("1_000", Scalar::Int(1000)),
            ("0", Scalar::Int(0)),
            (
                "18446744073709551615",
                Scalar::Int(18_446_744_073_709_551_615),
            ),
            ("08", Scalar::Float(8.0)),
            ("019", Scalar::Float(19.0)),
            ("1e1", Scalar::Float(10.0)),
            ("4.0", Scalar::Float(4.0)),
            ("1.", Scalar::Float(1.0)),
            (".5", Scalar::Float(0.5)),
            ("1.5", Scalar::Float(1.5)),
            ("1e+06", Scalar::Float(1e6)),
            ("1e400", Scalar::NotANumber),
            ("1e1.5", Scalar::NotANumber),
            ("500m", Scalar::NotANumber),
            ("2Ki", Scalar::NotANumber),
            ("1:30", Scalar::NotANumber),
            ("2001-12-14", Scalar::NotANumber),
            ("", Scalar::NotANumber),
            ("~", Scalar::NotANumber),
            ("null", Scalar::NotANumber),
            ("yes", Scalar::NotANumber),
            (".inf", Scalar::NotANumber),
            ("-.inf", Scalar::NotANumber),
            (".nan", Scalar::NotANumber),
            ("inf", Scalar::NotANumber),
            ("+", Scalar::NotANumber),
            (".", Scalar::NotANumber),
            ("._5", Scalar::NotANumber),
        ];
        for (text, want) in cases {
            assert_eq!(resolve(text), *want, "{text:?}");
        }
    }

    #[test]
    fn whole_numbers_are_what_the_integer_field_receives() {
        assert_eq!(whole("010"), Ok(8));
        assert_eq!(whole("08"), Ok(8));
        assert_eq!(whole("1e1"), Ok(10));
        assert_eq!(whole("-0.0"), Ok(0));
        assert_eq!(whole("1.5"), Err("the float 1.5".into()));
        assert_eq!(
            whole("1e21"),
            Err("the float 1000000000000000000000".into())
        );
        assert_eq!(whole("500m"), Err("a string".into()));
    }
}
