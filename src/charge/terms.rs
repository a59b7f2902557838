//! The terms of a reservation block: paths into the values, counts, quantities, conditions,
//! GPU lists and implied applications. Each is read from JSON by hand, so that a malformed
//! block is refused with a message that says what the term may be.
//!
//! The extensions to the proposal's contract live here, in general terms (none names a kind):
//! Helm's emptiness for fallbacks (`{path, default}`), the largest of several terms (`max`),
//! products of whole numbers (`product`), constant sizes, conditions on a value (`when`),
//! paths from the application's top-level values inside an `each` item (`$.`), and GPU lists
//! whose entries are one device each.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::{Map, Value};

use crate::json::describe;
use crate::keys::{CPU, MEMORY, STORAGE};
use crate::quantity::Quantity;

/// A dot-separated path into the values a block applies to. Inside an `each` item, `$.a.b`
/// reads `a.b` of the application's top-level values (Helm's `$.Values`) and `^.a.b` reads
/// the item that encloses this one (the top level for a first-level item).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    /// The path as written, `$.` or `^.` included.
    pub text: String,
    pub from: From,
}

/// Where a path is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum From {
    /// The values the block applies to.
    Here,
    /// The application's top-level values.
    Root,
    /// The item enclosing this one.
    Enclosing,
}

impl Path {
    pub fn parse(text: &str) -> Result<Path, String> {
        let (from, rest) = if let Some(rest) = text.strip_prefix("$.") {
            (From::Root, rest)
        } else if let Some(rest) = text.strip_prefix("^.") {
            (From::Enclosing, rest)
        } else {
            (From::Here, text)
        };
        if rest.is_empty() || rest.split('.').any(str::is_empty) {
            return Err(format!("{text:?} is not a dot-separated path"));
        }
        Ok(Path {
            text: text.to_string(),
            from,
        })
    }

    /// A path of the values the block applies to.
    pub fn here(text: &str) -> Path {
        Path {
            text: text.to_string(),
            from: From::Here,
        }
    }

    /// The path below the values it is read from (`$.` or `^.` removed).
    pub fn relative(&self) -> &str {
        match self.from {
            From::Here => &self.text,
            From::Root | From::Enclosing => &self.text[2..],
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A value read from the values, or given: a count, a quantity or a name.
#[derive(Clone, Debug, PartialEq)]
pub enum Term<L> {
    Literal(L),
    /// The value at a path; an absent (or null) value is no term.
    Path(Path),
    /// A fallback: when the value at `path` is empty to Helm (absent, null, `0`, `""`, `false`,
    /// `[]`, `{}`: the chart's `p | default d`), or, with `only_absent`, only when it is
    /// absent or null (the chart's `hasKey` / `ternary`), the value is `default`.
    Fallback {
        path: Path,
        default: Box<Term<L>>,
        only_absent: bool,
    },
    /// The largest of the terms that are present.
    Max(Vec<Term<L>>),
}

/// A whole number: a multiplier of `replicas`, or a factor of a `product`.
pub type Count = Term<u64>;

/// A name: a preset or an instance type.
pub type Name = Term<String>;

/// A quantity: a storage size, or a size key of one replica.
#[derive(Clone, Debug, PartialEq)]
pub enum Amount {
    Term(Term<Quantity>),
    /// A product of whole numbers (vCPUs = cores x sockets), each read as the chart's
    /// `int64` reads it; absent when a factor is.
    Product(Vec<Count>),
}

/// How each kind of term writes its literals.
pub trait Literal: Sized + Clone + Ord {
    const WHAT: &'static str;
    /// `v` as a literal of this kind, `None` when `v` is not written as one. In a `default`
    /// a string is a literal for quantities and names (`default: 20Gi`), not a path.
    fn literal(v: &Value, in_default: bool) -> Option<Result<Self, String>>;
}

impl Literal for u64 {
    const WHAT: &'static str = "a count";
    fn literal(v: &Value, _: bool) -> Option<Result<Self, String>> {
        match v {
            Value::Number(n) => {
                Some(n.as_u64().ok_or_else(|| {
                    format!("a count literal must be a non-negative integer, not {n}")
                }))
            }
            _ => None,
        }
    }
}

impl Literal for Quantity {
    const WHAT: &'static str = "a quantity";
    fn literal(v: &Value, in_default: bool) -> Option<Result<Self, String>> {
        match v {
            Value::Number(_) => Some(literal_quantity(v, "a quantity literal")),
            Value::String(_) if in_default => Some(literal_quantity(v, "default")),
            Value::Object(map) if map.len() == 1 && map.contains_key("value") => {
                Some(literal_quantity(&map["value"], "value"))
            }
            _ => None,
        }
    }
}

impl Literal for String {
    const WHAT: &'static str = "a name";
    fn literal(v: &Value, in_default: bool) -> Option<Result<Self, String>> {
        match v {
            Value::String(s) if in_default => Some(Ok(s.clone())),
            Value::Object(map) if map.len() == 1 && map.contains_key("value") => {
                Some(match &map["value"] {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(format!("value must be a string, not {}", describe(other))),
                })
            }
            _ => None,
        }
    }
}

impl<L: Literal> Term<L> {
    pub fn from_json(v: &Value) -> Result<Term<L>, String> {
        Term::parse(v, false)
    }

    fn parse(v: &Value, in_default: bool) -> Result<Term<L>, String> {
        let what = L::WHAT;
        if let Some(literal) = L::literal(v, in_default) {
            return literal.map(Term::Literal);
        }
        match v {
            Value::String(s) if in_default => Err(format!(
                "{what}: a default read from another path is written {{path: {s}}}"
            )),
            Value::String(s) => Path::parse(s).map(Term::Path),
            Value::Object(map) if map.contains_key("max") => {
                only(map, &["max"], what)?;
                let terms = list(&map["max"], "max")?;
                terms
                    .iter()
                    .map(|t| Term::parse(t, false))
                    .collect::<Result<_, _>>()
                    .map(Term::Max)
            }
            Value::Object(map) => {
                only(map, &["path", "default", "ifAbsent"], what)?;
                let path = path_field(map, what)?;
                let fallback = match (map.get("default"), map.get("ifAbsent")) {
                    (None, None) => return Ok(Term::Path(path)),
                    (Some(d), None) => (d, false),
                    (None, Some(d)) => (d, true),
                    (Some(_), Some(_)) => {
                        return Err(format!(
                            "{what} on {path} takes `default` or `ifAbsent`, not both"
                        ));
                    }
                };
                Ok(Term::Fallback {
                    path,
                    default: Box::new(Term::parse(fallback.0, true)?),
                    only_absent: fallback.1,
                })
            }
            other => Err(format!(
                "{what} is a literal, a path, {{path, default}}, {{path, ifAbsent}} or {{max: [...]}}, not {}",
                describe(other)
            )),
        }
    }

    /// The path a message about this term names: the one it reads first.
    pub fn blame(&self) -> Option<&Path> {
        match self {
            Term::Literal(_) => None,
            Term::Path(p) | Term::Fallback { path: p, .. } => Some(p),
            Term::Max(terms) => terms.iter().find_map(Term::blame),
        }
    }

    pub fn paths<'a>(&'a self, into: &mut Vec<&'a Path>) {
        match self {
            Term::Literal(_) => {}
            Term::Path(p) => into.push(p),
            Term::Fallback { path, default, .. } => {
                into.push(path);
                default.paths(into);
            }
            Term::Max(terms) => terms.iter().for_each(|t| t.paths(into)),
        }
    }
}

impl Amount {
    pub fn from_json(v: &Value) -> Result<Amount, String> {
        match v {
            Value::Object(map) if map.contains_key("product") => {
                only(map, &["product"], "a quantity")?;
                let factors = list(&map["product"], "product")?;
                factors
                    .iter()
                    .map(Count::from_json)
                    .collect::<Result<_, _>>()
                    .map(Amount::Product)
            }
            other => Term::from_json(other).map(Amount::Term),
        }
    }

    pub fn paths<'a>(&'a self, into: &mut Vec<&'a Path>) {
        match self {
            Amount::Term(t) => t.paths(into),
            Amount::Product(factors) => factors.iter().for_each(|f| f.paths(into)),
        }
    }
}

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

/// A list of GPUs to charge.
#[derive(Clone, Debug, PartialEq)]
pub enum Gpus {
    /// Entries `{class, count, name}`: `count` devices (default 1) of `class`, or of the class
    /// `gpuDeviceClasses` gives `name`.
    Entries(Path),
    /// Entries that are one device each, named by `name` and classed only through
    /// `gpuDeviceClasses` (what the VM charts render: `deviceName: <name>`, nothing else).
    Devices(Path),
}

/// An application the object's chart creates as a release of its own, in the namespace a
/// Tenant owns (a tenant module), charged at `values` (its kind's defaults) until it exists.
#[derive(Clone, Debug, PartialEq)]
pub struct Implied {
    pub kind: String,
    pub name: String,
    pub when: Vec<Condition>,
    pub values: Value,
}

/// The explicit per-key size of one replica.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Size {
    pub cpu: Option<Amount>,
    pub memory: Option<Amount>,
}

/// Constant quantities of one replica (hard-coded containers, fixed volumes).
pub type Fixed = BTreeMap<String, Quantity>;

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

impl Gpus {
    pub fn from_json(v: &Value) -> Result<Gpus, String> {
        match v {
            Value::String(s) => Path::parse(s).map(Gpus::Entries),
            Value::Object(map) => {
                only(map, &["devices"], "gpus")?;
                match map.get("devices") {
                    Some(Value::String(s)) => Path::parse(s).map(Gpus::Devices),
                    _ => Err("gpus: devices must be a path".into()),
                }
            }
            other => Err(format!(
                "gpus is a path or {{devices: <path>}}, not {}",
                describe(other)
            )),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Gpus::Entries(p) | Gpus::Devices(p) => p,
        }
    }
}

impl Implied {
    pub fn from_json(v: &Value) -> Result<Implied, String> {
        const WHAT: &str = "an implied application";
        let map = object(v, WHAT)?;
        only(map, &["kind", "name", "when", "values"], WHAT)?;
        let text = |field: &str| match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(format!("{WHAT}: {field} must be a non-empty string")),
        };
        let values = match map.get("values") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(other) => {
                return Err(format!(
                    "{WHAT}: values must be an object, not {}",
                    describe(other)
                ));
            }
        };
        Ok(Implied {
            kind: text("kind")?,
            name: text("name")?,
            when: match map.get("when") {
                Some(w) => Condition::all_from_json(w)?,
                None => Vec::new(),
            },
            values,
        })
    }
}

impl Size {
    pub fn from_json(v: &Value) -> Result<Size, String> {
        let map = object(v, "size")?;
        only(map, &[CPU, MEMORY], "size")?;
        let key = |k: &str| map.get(k).map(Amount::from_json).transpose();
        Ok(Size {
            cpu: key(CPU)?,
            memory: key(MEMORY)?,
        })
    }
}

pub fn fixed_from_json(v: &Value) -> Result<Fixed, String> {
    let map = object(v, "fixed")?;
    only(map, &[CPU, MEMORY, STORAGE], "fixed")?;
    map.iter()
        .map(|(k, q)| literal_quantity(q, &format!("fixed.{k}")).map(|q| (k.clone(), q)))
        .collect()
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
    fn terms_read_every_documented_form() {
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
                only_absent: false
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
                only_absent: true
            }
        );
        assert_eq!(
            Count::from_json(&json!({"max": ["maxReplicas", "minReplicas"]})).unwrap(),
            Term::Max(vec![
                Term::Path(p("maxReplicas")),
                Term::Path(p("minReplicas"))
            ])
        );
        assert_eq!(
            Amount::from_json(&json!({"path": "diskSize", "default": "20Gi"})).unwrap(),
            Amount::Term(Term::Fallback {
                path: p("diskSize"),
                default: Box::new(Term::Literal(q("20Gi"))),
                only_absent: false
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
                only_absent: false
            }
        );
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
                "not both",
            ),
            (
                Count::from_json(&json!({"path": "x", "default": "y"})).unwrap_err(),
                "a default read from another path is written {path: y}",
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
