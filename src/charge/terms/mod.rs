//! The terms of a reservation block: paths into the values, counts, quantities, conditions,
//! GPU lists and implied applications. Each is read from JSON by hand, so that a malformed
//! block is refused with a message that says what the term may be.
//!
//! The extensions to the proposal's contract live here, in general terms (none names a kind):
//! Helm's emptiness for fallbacks (`{path, default}`), the largest of several terms (`max`),
//! products of whole numbers (`product`), constant sizes, conditions on a value (`when`),
//! paths from the application's top-level values inside an `each` item (`$.`), and GPU lists
//! whose entries are one device each.
//!
//! - [`path`]: paths into the values (`a.b`, `$.a.b`, `^.a.b`);
//! - [`term`]: counts, quantities and names (literals, paths, fallbacks, `max`, `product`);
//! - [`condition`]: conditions on the values (`when`);
//! - [`parts`]: GPU lists, implied applications, sizes and fixed quantities;
//! - here: the JSON shapes they share (objects, field lists, non-empty lists, literal
//!   quantities) and the serde glue the definition deserialises through.

mod condition;
mod parts;
mod path;
mod term;

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::{Map, Value};

use crate::json::describe;
use crate::quantity::Quantity;

pub use condition::Condition;
pub use parts::{Fixed, Gpus, Implied, Size, fixed_from_json};
pub use path::{From, Path};
pub use term::{Amount, Count, Literal, Name, Term, Unset};

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{what} must be an object, not {}", describe(v)))
}

/// The fields of `map` must be among `allowed`.
fn only(map: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), String> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "{what}: unknown field `{k}`, expected one of {}",
            allowed
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(()),
    }
}

fn path_field(map: &Map<String, Value>, what: &str) -> Result<Path, String> {
    match map.get("path") {
        Some(Value::String(s)) => Path::parse(s),
        Some(other) => Err(format!(
            "{what}: path must be a string, not {}",
            describe(other)
        )),
        None => Err(format!("{what}: missing field `path`")),
    }
}

fn list<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], String> {
    match v {
        Value::Array(items) if !items.is_empty() => Ok(items),
        other => Err(format!(
            "{what} must be a non-empty list, not {}",
            describe(other)
        )),
    }
}

/// A literal quantity: a string or a number.
pub fn literal_quantity(v: &Value, what: &str) -> Result<Quantity, String> {
    Quantity::from_json(v).map_err(|e| match e {
        crate::quantity::JsonQuantityError::WrongType => {
            format!("{what} must be a quantity, not {}", describe(v))
        }
        crate::quantity::JsonQuantityError::Invalid(e) => format!("{what}: {e}"),
    })
}

/// Serde glue: each term type deserialises through a JSON value and its hand parser.
macro_rules! from_json_deserialize {
    ($($ty:ty => $parse:expr),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(deserializer)?;
                $parse(&value).map_err(D::Error::custom)
            }
        }
    )*};
}

from_json_deserialize! {
    Count => Count::from_json,
    Name => Name::from_json,
    Amount => Amount::from_json,
    Gpus => Gpus::from_json,
    Implied => Implied::from_json,
    Size => Size::from_json,
    Path => |v: &Value| match v {
        Value::String(s) => Path::parse(s),
        other => Err(format!("a path must be a string, not {}", describe(other))),
    },
}

/// `when`: one condition or a list.
pub fn deserialize_conditions<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Condition>, D::Error> {
    let value = Value::deserialize(d)?;
    Condition::all_from_json(&value).map_err(D::Error::custom)
}

/// `fixed`: constant quantities.
pub fn deserialize_fixed<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Fixed>, D::Error> {
    let value = Value::deserialize(d)?;
    fixed_from_json(&value).map(Some).map_err(D::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn counts_read_every_documented_form() {
        let p = |s: &str| Path::parse(s).unwrap();
        assert_eq!(Count::from_json(&json!(3)).unwrap(), Term::Literal(3));
        assert_eq!(
            Count::from_json(&json!("a.b")).unwrap(),
            Term::Path(p("a.b"))
        );
        assert_eq!(
            Count::from_json(&json!({"path": "a.b"})).unwrap(),
            Term::Path(p("a.b"))
        );
        assert_eq!(
            Count::from_json(&json!({"path": "replicas", "default": 3})).unwrap(),
            Term::Fallback {
                path: p("replicas"),
                default: Box::new(Term::Literal(3)),
                unset: Unset::HelmEmpty
            }
        );
        assert_eq!(
            Count::from_json(
                &json!({"path": "replicas", "ifAbsent": {"path": "$.volume.replicas"}})
            )
            .unwrap(),
            Term::Fallback {
                path: p("replicas"),
                default: Box::new(Term::Path(p("$.volume.replicas"))),
                unset: Unset::Absent
            }
        );
        assert_eq!(
            Count::from_json(&json!({"max": ["maxReplicas", "minReplicas"]})).unwrap(),
            Term::Max(vec![
                Term::Path(p("maxReplicas")),
                Term::Path(p("minReplicas"))
            ])
        );
    }

    #[test]
    fn amounts_and_names_read_every_documented_form() {
        let p = |s: &str| Path::parse(s).unwrap();
        assert_eq!(
            Amount::from_json(&json!({"path": "diskSize", "default": "20Gi"})).unwrap(),
            Amount::Term(Term::Fallback {
                path: p("diskSize"),
                default: Box::new(Term::Literal(q("20Gi"))),
                unset: Unset::HelmEmpty
            })
        );
        assert_eq!(
            Amount::from_json(&json!(1)).unwrap(),
            Amount::Term(Term::Literal(q("1")))
        );
        assert_eq!(
            Amount::from_json(&json!({"value": "1Gi"})).unwrap(),
            Amount::Term(Term::Literal(q("1Gi")))
        );
        assert_eq!(
            Amount::from_json(&json!({"product": ["resources.cpu", "resources.sockets"]})).unwrap(),
            Amount::Product(vec![
                Term::Path(p("resources.cpu")),
                Term::Path(p("resources.sockets"))
            ])
        );
        assert_eq!(
            Name::from_json(
                &json!({"path": "resourcesPreset", "default": {"path": "$.volume.resourcesPreset"}})
            )
            .unwrap(),
            Term::Fallback {
                path: p("resourcesPreset"),
                default: Box::new(Term::Path(p("$.volume.resourcesPreset"))),
                unset: Unset::HelmEmpty
            }
        );
        assert_eq!(
            Amount::from_json(&json!({"path": "pvc.merge.storage", "mergedOver": {"path": "pvc.size", "default": "1Gi"}}))
                .unwrap(),
            Amount::Term(Term::Fallback {
                path: p("pvc.merge.storage"),
                default: Box::new(Term::Fallback {
                    path: p("pvc.size"),
                    default: Box::new(Term::Literal(q("1Gi"))),
                    unset: Unset::HelmEmpty
                }),
                unset: Unset::MergeAbsent
            })
        );
        assert_eq!(
            Amount::from_json(&json!({"max": [{"yamlInt": "resources.cpu"}, 1]})).unwrap(),
            Amount::Term(Term::Max(vec![
                Term::YamlInt(p("resources.cpu")),
                Term::Literal(q("1"))
            ]))
        );
    }

    #[test]
    fn paths_conditions_and_gpus_read_every_documented_form() {
        let p = |s: &str| Path::parse(s).unwrap();
        let root = p("$.resources");
        assert!(root.from == From::Root && root.relative() == "resources");
        assert_eq!(p("^.size").from, From::Enclosing);
        assert_eq!(
            Condition::all_from_json(
                &json!([{"path": "mode", "equals": "sharded"}, {"not": {"path": "x", "set": true}}])
            )
            .unwrap(),
            vec![
                Condition::Equals(p("mode"), json!("sharded")),
                Condition::Not(Box::new(Condition::Set(p("x"), true)))
            ]
        );
        assert_eq!(
            Gpus::from_json(&json!({"devices": "gpus"})).unwrap(),
            Gpus::Devices(p("gpus"))
        );
        assert_eq!(
            fixed_from_json(&json!({"cpu": "200m", "memory": "128Mi"})).unwrap(),
            Fixed::from([("cpu".into(), q("200m")), ("memory".into(), q("128Mi"))])
        );
    }

    #[test]
    fn malformed_terms_say_what_they_may_be() {
        let cases = [
            (
                Count::from_json(&json!(-1)).unwrap_err(),
                "must be a non-negative integer, not -1",
            ),
            (
                Count::from_json(&json!(true)).unwrap_err(),
                "a count is a literal, a path",
            ),
            (
                Count::from_json(&json!({"path": "x", "default": 1, "ifAbsent": 2})).unwrap_err(),
                "takes one of `default`, `ifAbsent`, `mergedOver`",
            ),
            (
                Count::from_json(&json!({"path": "x", "default": "y"})).unwrap_err(),
                "a default read from another path is written {path: y}",
            ),
            (
                Amount::from_json(&json!({"path": "x", "ifAbsent": 1, "mergedOver": 2}))
                    .unwrap_err(),
                "takes one of `default`, `ifAbsent`, `mergedOver`",
            ),
            (
                Name::from_json(&json!({"yamlInt": "x"})).unwrap_err(),
                "a name cannot be a yamlInt",
            ),
            (
                Count::from_json(&json!({"yamlInt": 3})).unwrap_err(),
                "yamlInt must be a path, not the number 3",
            ),
            (
                Count::from_json(&json!({"yamlInt": "x", "path": "y"})).unwrap_err(),
                "unknown field `path`",
            ),
            (
                Count::from_json(&json!({"max": []})).unwrap_err(),
                "max must be a non-empty list",
            ),
            (
                Count::from_json(&json!({"path": "x", "default": 1, "min": 0})).unwrap_err(),
                "unknown field `min`",
            ),
            (
                Name::from_json(&json!(3)).unwrap_err(),
                "a name is a literal, a path",
            ),
            (
                Amount::from_json(&json!({"path": "x", "default": "big"})).unwrap_err(),
                "default: \"big\" is not a valid quantity",
            ),
            (
                Amount::from_json(&json!("a..b")).unwrap_err(),
                "\"a..b\" is not a dot-separated path",
            ),
            (
                Amount::from_json(&json!("$.")).unwrap_err(),
                "\"$.\" is not a dot-separated path",
            ),
        ];
        for (err, want) in cases {
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }

    #[test]
    fn malformed_conditions_and_parts_say_what_they_may_be() {
        let cases = [
            (
                Condition::from_json(&json!({"path": "x"})).unwrap_err(),
                "needs exactly one of `equals`, `notEquals`, `set`",
            ),
            (
                Condition::from_json(&json!({"path": "x", "set": "yes"})).unwrap_err(),
                "set must be a boolean",
            ),
            (
                Gpus::from_json(&json!(["gpus"])).unwrap_err(),
                "gpus is a path or {devices: <path>}",
            ),
            (
                fixed_from_json(&json!({"gpu": 1})).unwrap_err(),
                "fixed: unknown field `gpu`",
            ),
            (
                fixed_from_json(&json!({"cpu": "-1"})).unwrap_err(),
                "fixed.cpu: \"-1\" is negative",
            ),
            (
                Implied::from_json(&json!({"kind": "Etcd"})).unwrap_err(),
                "name must be a non-empty string",
            ),
        ];
        for (err, want) in cases {
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }
}
