//! Label and field selectors with the Kubernetes API server's grammar and semantics
//! (apimachinery `labels.Parse` and `fields.ParseSelector`).
//!
//! Label selectors: comma-joined requirements, each one of `key`, `!key`, `key=value`,
//! `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key>N`, `key<N`.
//! `!=` and `notin` also match objects that do not carry the label, as on the API server.
//!
//! Field selectors: comma-joined `field=value`, `field==value`, `field!=value`; the fields every
//! resource supports are `metadata.name` and `metadata.namespace`. Others are rejected.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operator {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

/// A parsed label selector. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorError {}

fn err<T>(msg: impl Into<String>) -> Result<T, SelectorError> {
    Err(SelectorError(msg.into()))
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Result<Vec<&str>, SelectorError> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                if depth == 0 {
                    return err(format!(
                        "unable to parse requirement: unexpected ')' in {s:?}"
                    ));
                }
                depth -= 1;
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return err(format!(
            "unable to parse requirement: unclosed '(' in {s:?}"
        ));
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn valid_key(key: &str) -> bool {
    // [prefix/]name, prefix a DNS subdomain, name up to 63 of [A-Za-z0-9._-] starting and
    // ending alphanumeric.
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty()
            || p.len() > 253
            || !p
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'))
    {
        return false;
    }
    valid_label_value(name) && !name.is_empty()
}

fn valid_label_value(v: &str) -> bool {
    if v.is_empty() {
        return true;
    }
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && v.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && v.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
}

fn check_key(key: &str, whole: &str) -> Result<String, SelectorError> {
    if !valid_key(key) {
        return err(format!(
            "unable to parse requirement: invalid label key {key:?} in selector {whole:?}"
        ));
    }
    Ok(key.to_string())
}

fn check_value(value: &str, whole: &str) -> Result<String, SelectorError> {
    if !valid_label_value(value) {
        return err(format!(
            "unable to parse requirement: invalid label value {value:?} in selector {whole:?}"
        ));
    }
    Ok(value.to_string())
}

fn parse_set(rest: &str, whole: &str) -> Result<Vec<String>, SelectorError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            SelectorError(format!(
                "unable to parse requirement: expected a parenthesised value set, found {rest:?} in selector {whole:?}"
            ))
        })?;
    let mut values: Vec<String> = inner
        .split(',')
        .map(|v| check_value(v.trim(), whole))
        .collect::<Result<_, _>>()?;
    values.sort();
    values.dedup();
    Ok(values)
}

/// Finds `op` as a whole word (surrounded by whitespace) in `s`.
fn split_word<'a>(s: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let mut search = 0;
    while let Some(pos) = s[search..].find(op) {
        let at = search + pos;
        let before_ok = at > 0 && s[..at].ends_with(char::is_whitespace);
        let after = &s[at + op.len()..];
        let after_ok = after.starts_with(char::is_whitespace) || after.starts_with('(');
        if before_ok && after_ok {
            return Some((&s[..at], after));
        }
        search = at + op.len();
    }
    None
}

fn parse_requirement(part: &str, whole: &str) -> Result<Requirement, SelectorError> {
    let part = part.trim();
    if part.is_empty() {
        return err(format!(
            "unable to parse requirement: found an empty requirement in selector {whole:?}"
        ));
    }
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement {
            key: check_key(key.trim(), whole)?,
            operator: Operator::DoesNotExist,
            values: vec![],
        });
    }
    if let Some((key, rest)) = split_word(part, "notin") {
        return Ok(Requirement {
            key: check_key(key.trim(), whole)?,
            operator: Operator::NotIn,
            values: parse_set(rest, whole)?,
        });
    }
    if let Some((key, rest)) = split_word(part, "in") {
        return Ok(Requirement {
            key: check_key(key.trim(), whole)?,
            operator: Operator::In,
            values: parse_set(rest, whole)?,
        });
    }
    for (token, operator) in [
        ("!=", Operator::NotEquals),
        ("==", Operator::Equals),
        ("=", Operator::Equals),
        (">", Operator::GreaterThan),
        ("<", Operator::LessThan),
    ] {
        if let Some((key, value)) = part.split_once(token) {
            let value = value.trim();
            if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
                if value.parse::<i64>().is_err() {
                    return err(format!(
                        "unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer, found {value:?} in selector {whole:?}"
                    ));
                }
            } else {
                check_value(value, whole)?;
            }
            return Ok(Requirement {
                key: check_key(key.trim(), whole)?,
                operator,
                values: vec![value.to_string()],
            });
        }
    }
    Ok(Requirement {
        key: check_key(part, whole)?,
        operator: Operator::Exists,
        values: vec![],
    })
}

impl LabelSelector {
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        if selector.trim().is_empty() {
            return Ok(LabelSelector::default());
        }
        let requirements = split_top_level(selector)?
            .into_iter()
            .map(|part| parse_requirement(part, selector))
            .collect::<Result<_, _>>()?;
        Ok(LabelSelector { requirements })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator {
                Operator::Equals | Operator::In => value.is_some_and(|v| r.values.contains(v)),
                Operator::NotEquals | Operator::NotIn => {
                    !value.is_some_and(|v| r.values.contains(v))
                }
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
                Operator::GreaterThan | Operator::LessThan => {
                    let (Some(v), Ok(bound)) = (value, r.values[0].parse::<i64>()) else {
                        return false;
                    };
                    let Ok(v) = v.parse::<i64>() else {
                        return false;
                    };
                    if r.operator == Operator::GreaterThan {
                        v > bound
                    } else {
                        v < bound
                    }
                }
            }
        })
    }
}

/// A parsed field selector over `metadata.name` / `metadata.namespace`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    /// (field, wanted value, true for `=`/`==`, false for `!=`)
    pub terms: Vec<(String, String, bool)>,
}

pub const SUPPORTED_FIELDS: [&str; 2] = ["metadata.name", "metadata.namespace"];

impl FieldSelector {
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        if selector.trim().is_empty() {
            return Ok(FieldSelector::default());
        }
        let mut terms = Vec::new();
        for part in selector.split(',') {
            let part = part.trim();
            let (field, value, equal) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, true)
            } else {
                return err(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if !SUPPORTED_FIELDS.contains(&field) {
                return err(format!(
                    "field label not supported: {field} (replay-runner supports the field selectors every resource has: {})",
                    SUPPORTED_FIELDS.join(", ")
                ));
            }
            terms.push((field.to_string(), value.trim().to_string(), equal));
        }
        Ok(FieldSelector { terms })
    }

    /// `name` and `namespace` are the object's (`""` when absent, as the API server's field set).
    pub fn matches(&self, name: &str, namespace: &str) -> bool {
        self.terms.iter().all(|(field, value, equal)| {
            let actual = if field == "metadata.name" {
                name
            } else {
                namespace
            };
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn m(sel: &str, l: &[(&str, &str)]) -> bool {
        LabelSelector::parse(sel).unwrap().matches(&labels(l))
    }

    #[test]
    fn equality_based() {
        assert!(m("app=web", &[("app", "web")]));
        assert!(m("app==web", &[("app", "web")]));
        assert!(!m("app=web", &[("app", "db")]));
        assert!(!m("app=web", &[]));
        assert!(m("app!=web", &[("app", "db")]));
        assert!(m("app!=web", &[]), "!= matches objects without the label");
        assert!(!m("app!=web", &[("app", "web")]));
        assert!(m(" app = web ", &[("app", "web")]));
        assert!(m("app=", &[("app", "")]));
    }

    #[test]
    fn set_based_and_existence() {
        assert!(m("env in (prod, staging)", &[("env", "staging")]));
        assert!(!m("env in (prod,staging)", &[("env", "dev")]));
        assert!(!m("env in (prod)", &[]));
        assert!(m("env notin (prod)", &[("env", "dev")]));
        assert!(
            m("env notin (prod)", &[]),
            "notin matches objects without the label"
        );
        assert!(!m("env notin (prod,dev)", &[("env", "dev")]));
        assert!(m("env", &[("env", "x")]));
        assert!(!m("env", &[]));
        assert!(m("!env", &[]));
        assert!(!m("!env", &[("env", "x")]));
        assert!(m("size>3", &[("size", "4")]));
        assert!(!m("size<3", &[("size", "4")]));
    }

    #[test]
    fn comma_joined_requirements_all_apply() {
        let sel = "apps.cozystack.io/application.kind=Kubernetes,env in (a,b),!legacy,tier";
        let parsed = LabelSelector::parse(sel).unwrap();
        assert_eq!(parsed.requirements.len(), 4);
        assert!(m(
            sel,
            &[
                ("apps.cozystack.io/application.kind", "Kubernetes"),
                ("env", "b"),
                ("tier", "1")
            ]
        ));
        assert!(!m(
            sel,
            &[
                ("apps.cozystack.io/application.kind", "Kubernetes"),
                ("env", "b"),
                ("tier", "1"),
                ("legacy", "")
            ]
        ));
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(m("", &[]));
        assert!(m("  ", &[("a", "b")]));
    }

    #[test]
    fn malformed_selectors_are_rejected() {
        for bad in [
            "a in (b",
            "a in b",
            "a=b,",
            "=b",
            "a=b c",
            "Bad_Prefix/x=y",
            "a>b",
            "a)",
            "-a",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn field_selectors() {
        let f = FieldSelector::parse("metadata.name=a,metadata.namespace!=kube-system").unwrap();
        assert!(f.matches("a", "default"));
        assert!(!f.matches("a", "kube-system"));
        assert!(!f.matches("b", "default"));
        assert!(
            FieldSelector::parse("metadata.name==a")
                .unwrap()
                .matches("a", "")
        );
        assert!(FieldSelector::parse("").unwrap().matches("x", "y"));
        let e = FieldSelector::parse("spec.nodeName=n1").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("field label not supported: spec.nodeName"),
            "{e}"
        );
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
