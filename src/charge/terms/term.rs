//! Terms that read one value: counts, quantities and names, each a literal, a path, a
//! fallback (`{path, default}` / `{path, ifAbsent}`) or the largest of several (`max`), and
//! quantities that are products of whole numbers (`product`). The literal forms of each
//! kind are its [`Literal`] implementation.

use serde_json::Value;

use super::{Path, list, literal_quantity, only, path_field};
use crate::json::describe;
use crate::quantity::Quantity;

/// A value read from the values, or given: a count, a quantity or a name.
#[derive(Clone, Debug, PartialEq)]
pub enum Term<L> {
    Literal(L),
    /// The value at a path; an absent (or null) value is no term.
    Path(Path),
    /// A fallback: when the value at `path` is unset as `unset` says, the value is `default`.
    Fallback {
        path: Path,
        default: Box<Term<L>>,
        unset: Unset,
    },
    /// The whole number the Kubernetes YAML decoder reads from the value rendered unquoted
    /// into an integer field (`cores: {{ .resources.cpu }}`), as [`crate::charge::yaml_scalar`]
    /// reads it; absent, `null` and Helm-empty values (which the chart's `if` skips) read nothing.
    YamlInt(Path),
    /// The largest of the terms that are present.
    Max(Vec<Term<L>>),
}

/// When a [`Term::Fallback`] takes its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unset {
    /// `{path, default}`: the value is empty to Helm (absent, null, `0`, `""`, `false`, `[]`,
    /// `{}`: the chart's `p | default d`).
    HelmEmpty,
    /// `{path, ifAbsent}`: the value is absent or null (the chart's `hasKey` / `ternary`).
    Absent,
    /// `{path, mergedOver}`: the key is absent, the value merged over the default with Sprig's
    /// `mergeOverwrite` (mergo 1.0.1 `WithOverride`), which writes every key it is given, even
    /// `""`, `0`, `false` or `null`; a present key that reads nothing is refused.
    MergeAbsent,
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
    /// A whole number as a value of this kind (`None`: the kind holds no numbers).
    fn whole(n: u64) -> Option<Self>;
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
    fn whole(n: u64) -> Option<Self> {
        Some(n)
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
    fn whole(n: u64) -> Option<Self> {
        Some(Quantity::from_units(n))
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
    fn whole(_: u64) -> Option<Self> {
        None
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
            Value::Object(map) if map.contains_key("yamlInt") => {
                only(map, &["yamlInt"], what)?;
                if L::whole(0).is_none() {
                    return Err(format!("{what} cannot be a yamlInt"));
                }
                match &map["yamlInt"] {
                    Value::String(s) => Path::parse(s).map(Term::YamlInt),
                    other => Err(format!(
                        "{what}: yamlInt must be a path, not {}",
                        describe(other)
                    )),
                }
            }
            Value::Object(map) => {
                only(map, &["path", "default", "ifAbsent", "mergedOver"], what)?;
                let path = path_field(map, what)?;
                let given: Vec<(&Value, Unset)> = [
                    ("default", Unset::HelmEmpty),
                    ("ifAbsent", Unset::Absent),
                    ("mergedOver", Unset::MergeAbsent),
                ]
                .into_iter()
                .filter_map(|(key, unset)| map.get(key).map(|d| (d, unset)))
                .collect();
                let fallback = match given[..] {
                    [] => return Ok(Term::Path(path)),
                    [one] => one,
                    _ => {
                        return Err(format!(
                            "{what} on {path} takes one of `default`, `ifAbsent`, `mergedOver`"
                        ));
                    }
                };
                Ok(Term::Fallback {
                    path,
                    default: Box::new(Term::parse(fallback.0, true)?),
                    unset: fallback.1,
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
            Term::Path(p) | Term::Fallback { path: p, .. } | Term::YamlInt(p) => Some(p),
            Term::Max(terms) => terms.iter().find_map(Term::blame),
        }
    }

    pub fn paths<'a>(&'a self, into: &mut Vec<&'a Path>) {
        match self {
            Term::Literal(_) => {}
            Term::Path(p) | Term::YamlInt(p) => into.push(p),
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
