//! Conditions on the values (`when`): equality, Helm's truthiness (`set`), `any` and `not`.
//! A block whose conditions do not all hold reserves nothing.

use serde_json::Value;

use super::{Path, list, object, only, path_field};
use crate::json::describe;

/// A condition on the values; a block whose conditions do not all hold reserves nothing.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    Equals(Path, Value),
    NotEquals(Path, Value),
    /// Helm's truthiness: `{path, set: true}` holds when the value is not empty.
    Set(Path, bool),
    Any(Vec<Condition>),
    Not(Box<Condition>),
}

impl Condition {
    pub fn from_json(v: &Value) -> Result<Condition, String> {
        const WHAT: &str = "a condition";
        let map = object(v, WHAT)?;
        if let Some(any) = map.get("any") {
            only(map, &["any"], WHAT)?;
            let terms = list(any, "any")?;
            return terms
                .iter()
                .map(Condition::from_json)
                .collect::<Result<_, _>>()
                .map(Condition::Any);
        }
        if let Some(not) = map.get("not") {
            only(map, &["not"], WHAT)?;
            return Condition::from_json(not).map(|c| Condition::Not(Box::new(c)));
        }
        only(map, &["path", "equals", "notEquals", "set"], WHAT)?;
        let path = path_field(map, WHAT)?;
        match (map.get("equals"), map.get("notEquals"), map.get("set")) {
            (Some(v), None, None) => Ok(Condition::Equals(path, v.clone())),
            (None, Some(v), None) => Ok(Condition::NotEquals(path, v.clone())),
            (None, None, Some(Value::Bool(b))) => Ok(Condition::Set(path, *b)),
            (None, None, Some(other)) => Err(format!(
                "{WHAT}: set must be a boolean, not {}",
                describe(other)
            )),
            _ => Err(format!(
                "{WHAT} on {path} needs exactly one of `equals`, `notEquals`, `set`"
            )),
        }
    }

    /// One condition or a list of them (all must hold).
    pub fn all_from_json(v: &Value) -> Result<Vec<Condition>, String> {
        match v {
            Value::Array(items) => items.iter().map(Condition::from_json).collect(),
            one => Condition::from_json(one).map(|c| vec![c]),
        }
    }

    pub fn paths<'a>(&'a self, into: &mut Vec<&'a Path>) {
        match self {
            Condition::Equals(p, _) | Condition::NotEquals(p, _) | Condition::Set(p, _) => {
                into.push(p)
            }
            Condition::Any(terms) => terms.iter().for_each(|t| t.paths(into)),
            Condition::Not(inner) => inner.paths(into),
        }
    }
}
