//! Reading a block's terms from the values, as the chart's templates read them: where a
//! block's paths start, what is empty to Helm, and every term's value or the field's fault.

use serde_json::Value;

use super::terms::{Amount, Condition, Count, From, Literal, Path, Term, Unset};
use super::values::Cursor;
use super::{helm_casts, yaml_scalar};
use crate::json::describe;
use crate::quantity::{JsonQuantityError, Quantity};

/// Why an application could not be evaluated, naming the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct EvalError {
    pub path: String,
    pub reason: String,
}

pub(super) type Result<T> = std::result::Result<T, EvalError>;

/// Where a block's relative paths start (`spec`, `spec.nodeGroups.md0`), the application's
/// top-level values that `$.` paths read, and the enclosing values `^.` paths read.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub cursor: Cursor<'a>,
    pub prefix: &'a str,
    pub root: Cursor<'a>,
    outer: Cursor<'a>,
    outer_prefix: &'a str,
}

/// Where messages about the top-level values start.
const ROOT_PREFIX: &str = "spec";

impl<'a> Place<'a> {
    pub fn top(values: Cursor<'a>) -> Self {
        Place {
            cursor: values,
            prefix: ROOT_PREFIX,
            root: values,
            outer: values,
            outer_prefix: ROOT_PREFIX,
        }
    }

    /// An item of a collection read at this place.
    pub fn item(&self, cursor: Cursor<'a>, prefix: &'a str) -> Self {
        Place {
            cursor,
            prefix,
            root: self.root,
            outer: self.cursor,
            outer_prefix: self.prefix,
        }
    }

    /// The place `path` is read from, and the path below it.
    fn resolve<'p>(&self, path: &'p Path) -> (Place<'a>, &'p str) {
        let place = match path.from {
            From::Here => *self,
            From::Root => Place::top(self.root),
            From::Enclosing => Place {
                cursor: self.outer,
                prefix: self.outer_prefix,
                ..Place::top(self.root)
            },
        };
        (place, path.relative())
    }

    pub fn name(&self, path: &str) -> String {
        format!("{}.{path}", self.prefix)
    }

    /// The full name of `path` for messages.
    pub fn name_of(&self, path: &Path) -> String {
        let (place, relative) = self.resolve(path);
        place.name(relative)
    }

    pub fn here(&self, reason: impl Into<String>) -> EvalError {
        EvalError {
            path: self.prefix.to_string(),
            reason: reason.into(),
        }
    }

    pub fn error(&self, path: &Path, reason: impl Into<String>) -> EvalError {
        EvalError {
            path: self.name_of(path),
            reason: reason.into(),
        }
    }

    /// The value at `path`, `None` when absent or null after defaults.
    pub fn read(&self, path: &Path) -> Result<Option<&'a Value>> {
        Ok(self.cursor_at(path)?.value.filter(|v| !v.is_null()))
    }

    /// The values at `path`, with their schema.
    pub fn cursor_at(&self, path: &Path) -> Result<Cursor<'a>> {
        let (place, relative) = self.resolve(path);
        place.cursor.at(relative).map_err(|parent| EvalError {
            path: if parent.is_empty() {
                place.prefix.to_string()
            } else {
                place.name(&parent)
            },
            reason: format!("must be an object to read {relative:?}"),
        })
    }

    /// A path below `path`, from a field name.
    pub fn below(&self, path: &Path, field: &str) -> Path {
        Path {
            text: format!("{}.{field}", path.text),
            from: path.from,
        }
    }
}

/// Whether Helm's `if` and `default` see a value as set: not absent, null, `false`, `0`,
/// `""`, `[]` or `{}` (the string `"0"` is set).
pub(super) fn is_set(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
    }
}

/// A non-negative JSON integer, `None` when absent: what an `integer` field of a chart's
/// schema holds (anything else would fail the chart's schema validation, rendering nothing).
pub(super) fn read_count(place: Place<'_>, path: &Path) -> Result<Option<u64>> {
    match place.read(path)? {
        None => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(count) = n.as_u64() {
                Ok(Some(count))
            } else if n.as_i64().is_some() {
                Err(place.error(path, format!("must not be negative, got {n}")))
            } else {
                Err(place.error(path, format!("must be a whole number, got {n}")))
            }
        }
        Some(other) => {
            Err(place.error(path, format!("must be an integer, not {}", describe(other))))
        }
    }
}

/// A whole number as the chart's `int64` reads an int-or-string field: an integer, or a string
/// read exactly as sprig's cast reads it ([`helm_casts::to_int64`]: `"2.0"` is 2, `"010"` is 8,
/// `"08"` and `"1500m"` are 0). Refused: a string that is no quantity either (the chart's
/// schema refuses it, nothing renders) and a negative result (the object it renders is invalid).
fn read_whole(place: Place<'_>, path: &Path) -> Result<Option<u64>> {
    match place.read(path)? {
        Some(v @ Value::String(s)) => match helm_casts::to_int64(v) {
            helm_casts::Int64::Failed if Quantity::parse(s).is_err() => Err(place.error(
                path,
                format!(
                    "{s:?} is neither a whole number nor a quantity the chart's schema accepts"
                ),
            )),
            cast => match cast.rendered() {
                Some(n) => u64::try_from(n).map(Some).map_err(|_| {
                    place.error(
                        path,
                        format!("must not be negative: the chart's int64 reads {s:?} as {n}"),
                    )
                }),
                None => Err(place.error(path, format!("{s:?} is not a whole number"))),
            },
        },
        _ => read_count(place, path),
    }
}

/// A quantity given as a string or a JSON number; `None` when absent or an empty string.
pub(super) fn read_quantity(place: Place<'_>, path: &Path) -> Result<Option<Quantity>> {
    match place.read(path)? {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(v) => Quantity::from_json(v).map(Some).map_err(|e| match e {
            JsonQuantityError::WrongType => {
                place.error(path, format!("must be a quantity, not {}", describe(v)))
            }
            JsonQuantityError::Invalid(e) => place.error(path, e.to_string()),
        }),
    }
}

/// A name (instance type, preset, class); `None` when absent or empty.
pub(super) fn read_name<'a>(place: Place<'a>, path: &Path) -> Result<Option<&'a str>> {
    match place.read(path)? {
        None => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(place.error(path, format!("must be a string, not {}", describe(other)))),
    }
}

/// The whole number an integer field receives from the value at `path` rendered unquoted
/// (`cores: {{ .resources.cpu }}` under the chart's `if`), read as YAML 1.1 reads it
/// ([`yaml_scalar`]): `None` when the value is empty to Helm (the `if` renders no field).
/// Refused: a value YAML reads as no whole number (`1.5`, `500m`: the field's schema refuses
/// the object) or as a negative one.
fn read_yaml_int(place: Place<'_>, path: &Path) -> Result<Option<u64>> {
    let value = place.read(path)?;
    let Some(value) = value.filter(|v| is_set(Some(v))) else {
        return Ok(None);
    };
    let (shown, whole) = match value {
        Value::String(s) => (s.clone(), yaml_scalar::whole(s)),
        Value::Number(n) => {
            // Go's template prints a float64 value as `%v`; a whole one reads back whole.
            let whole = match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Ok(i128::from(i)),
                (_, Some(u)) => Ok(i128::from(u)),
                _ => yaml_scalar::whole(&n.to_string()),
            };
            (n.to_string(), whole)
        }
        other => {
            return Err(place.error(
                path,
                format!("must be a string or a number, not {}", describe(other)),
            ));
        }
    };
    match whole {
        Ok(n) => u64::try_from(n).map(Some).map_err(|_| {
            place.error(
                path,
                format!("{shown:?} renders a negative integer ({n}), which the field it fills refuses"),
            )
        }),
        Err(read) => Err(place.error(
            path,
            format!(
                "{shown:?} is rendered unquoted into an integer field, where YAML 1.1 reads it as {read}, not a whole number, so the object is refused"
            ),
        )),
    }
}

const MERGED_EMPTY: &str = "is empty, and Sprig's mergeOverwrite (mergo 1.0.1) writes even an empty value over what the chart has there, so the object renders an empty value Kubernetes refuses";

/// Whether the raw values give the key at `path`, as Sprig's `mergeOverwrite` (mergo 1.0.1
/// `WithOverride`, `merge.go:120-213`) sees a map merged over the chart's: every key given
/// is written, even `""`, `0`, `false` or `null`; an object merges into the chart's object key
/// by key (an empty one keeps it); anything else replaces it whole. So the key is given when
/// every object on the way has the next key; `null` on the way replaces the chart's object
/// with nothing (refused, as an empty value is); another non-object cannot be read into.
fn merged_key_given(place: Place<'_>, path: &Path) -> Result<bool> {
    let (place, relative) = place.resolve(path);
    let mut current = place.cursor.value;
    let mut walked = 0;
    for segment in relative.split('.') {
        let here = &relative[..walked.max(1) - 1];
        let object = match current {
            None => return Ok(false),
            Some(Value::Object(object)) => object,
            Some(Value::Null) => {
                return Err(EvalError {
                    path: place.name(here),
                    reason: MERGED_EMPTY.into(),
                });
            }
            Some(_) => {
                return Err(EvalError {
                    path: if here.is_empty() {
                        place.prefix.to_string()
                    } else {
                        place.name(here)
                    },
                    reason: format!("must be an object to read {relative:?}"),
                });
            }
        };
        walked += segment.len() + 1;
        match object.get(segment) {
            None => return Ok(false),
            Some(Value::Null) if walked > relative.len() => {
                return Err(place.error(path, MERGED_EMPTY));
            }
            next => current = next,
        }
    }
    Ok(true)
}

/// The value of a term, `None` when it reads nothing; `read` reads its paths.
fn term<L: Literal>(
    place: Place<'_>,
    t: &Term<L>,
    read: fn(Place<'_>, &Path) -> Result<Option<L>>,
) -> Result<Option<L>> {
    match t {
        Term::Literal(l) => Ok(Some(l.clone())),
        Term::Path(path) => read(place, path),
        Term::YamlInt(path) => Ok(read_yaml_int(place, path)?.and_then(L::whole)),
        Term::Fallback {
            path,
            default,
            unset,
        } => {
            let takes_default = match unset {
                Unset::HelmEmpty => !is_set(place.read(path)?),
                Unset::Absent => place.read(path)?.is_none(),
                // Present, even as `null`: mergeOverwrite writes it.
                Unset::MergeAbsent => !merged_key_given(place, path)?,
            };
            if takes_default {
                return term(place, default, read);
            }
            let value = read(place, path)?;
            if value.is_none() && *unset == Unset::MergeAbsent {
                return Err(place.error(path, MERGED_EMPTY));
            }
            Ok(value)
        }
        Term::Max(terms) => {
            let mut max = None;
            for t in terms {
                max = max.max(term(place, t, read)?);
            }
            Ok(max)
        }
    }
}

/// The value of a count term, `None` when it reads nothing.
pub(super) fn count(place: Place<'_>, t: &Count) -> Result<Option<u64>> {
    term(place, t, read_count)
}

/// The value of a name term (a preset, an instance type), `None` when it reads nothing.
pub(super) fn name(place: Place<'_>, t: &Term<String>) -> Result<Option<String>> {
    term(place, t, |place, path| {
        read_name(place, path).map(|n| n.map(str::to_string))
    })
}

/// The value of a quantity term, `None` when it reads nothing.
pub(super) fn amount(place: Place<'_>, t: &Amount) -> Result<Option<Quantity>> {
    match t {
        Amount::Term(t) => term(place, t, read_quantity),
        Amount::Product(factors) => {
            let mut product: u64 = 1;
            for f in factors {
                // Factors hold int-or-string whole numbers, as the chart's `int64` reads them.
                let Some(n) = term(place, f, read_whole)? else {
                    return Ok(None);
                };
                product = product
                    .checked_mul(n)
                    .ok_or_else(|| place.here("the product overflows"))?;
            }
            Ok(Some(Quantity::from_units(product)))
        }
    }
}

/// Whether a condition holds on the values (after schema defaults; absent reads as null).
pub(super) fn holds(place: Place<'_>, condition: &Condition) -> Result<bool> {
    let null = Value::Null;
    Ok(match condition {
        Condition::Equals(path, want) => place.read(path)?.unwrap_or(&null) == want,
        Condition::NotEquals(path, want) => place.read(path)?.unwrap_or(&null) != want,
        Condition::Set(path, set) => is_set(place.read(path)?) == *set,
        Condition::Any(terms) => {
            for t in terms {
                if holds(place, t)? {
                    return Ok(true);
                }
            }
            false
        }
        Condition::Not(inner) => !holds(place, inner)?,
    })
}

/// Whether every condition holds on the top-level values at `values`.
pub(super) fn all_hold(values: Cursor<'_>, conditions: &[Condition]) -> Result<bool> {
    let place = Place::top(values);
    for condition in conditions {
        if !holds(place, condition)? {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Path {
        Path::parse(s).unwrap()
    }

    #[test]
    fn helm_emptiness() {
        for empty in [
            json!(null),
            json!(false),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!is_set(Some(&empty)), "{empty}");
        }
        for set in [
            json!(true),
            json!(1),
            json!("0"),
            json!([0]),
            json!({"a": null}),
        ] {
            assert!(is_set(Some(&set)), "{set}");
        }
        assert!(!is_set(None));
    }

    #[test]
    fn terms_read_as_the_chart_reads_them() {
        let values = json!({"a": 0, "b": 3, "c": "2", "d": "1500m", "e": "", "item": {"x": 1}});
        let top = Place::top(Cursor::new(&values, None));
        let item_cursor = top.cursor_at(&p("item")).unwrap();
        let item = top.item(item_cursor, "spec.item");
        let count_of = |place, v: Value| count(place, &Count::from_json(&v).unwrap());
        assert_eq!(
            count_of(top, json!({"path": "a", "default": 5})).unwrap(),
            Some(5)
        );
        assert_eq!(
            count_of(top, json!({"path": "b", "default": 5})).unwrap(),
            Some(3)
        );
        assert_eq!(
            count_of(top, json!({"max": ["a", "b", "absent"]})).unwrap(),
            Some(3)
        );
        assert_eq!(count_of(top, json!({"max": ["absent"]})).unwrap(), None);
        assert_eq!(count_of(item, json!("x")).unwrap(), Some(1));
        assert_eq!(
            count_of(item, json!("$.b")).unwrap(),
            Some(3),
            "$. reads the top level"
        );
        assert_eq!(
            count_of(item, json!("^.b")).unwrap(),
            Some(3),
            "^. reads the enclosing values"
        );
        assert_eq!(
            count_of(item, json!({"path": "y", "ifAbsent": {"path": "^.b"}})).unwrap(),
            Some(3)
        );
        assert_eq!(
            count_of(top, json!({"path": "a", "ifAbsent": 7})).unwrap(),
            Some(0),
            "ifAbsent keeps a present 0"
        );
        let amount_of = |v: Value| amount(top, &Amount::from_json(&v).unwrap());
        assert_eq!(
            amount_of(json!({"product": ["b", "c"]})).unwrap(),
            Some(Quantity::from_units(6)),
            "\"2\" is a whole number to int64"
        );
        assert_eq!(
            amount_of(json!({"product": ["b", "absent"]})).unwrap(),
            None
        );
        assert_eq!(
            amount_of(json!({"product": ["d"]})).unwrap(),
            Some(Quantity::from_units(0)),
            "int64 renders \"1500m\" as 0"
        );
        assert_eq!(
            amount_of(json!({"path": "e", "default": "20Gi"})).unwrap(),
            Some(Quantity::parse("20Gi").unwrap())
        );
        assert_eq!(
            amount_of(json!({"max": ["a", 1]})).unwrap(),
            Some(Quantity::from_units(1))
        );
        let cond = |v: Value| holds(top, &Condition::from_json(&v).unwrap()).unwrap();
        assert!(cond(json!({"path": "b", "equals": 3})));
        assert!(cond(json!({"path": "absent", "equals": null})));
        assert!(cond(json!({"path": "c", "notEquals": 2})));
        assert!(cond(json!({"path": "a", "set": false})));
        assert!(cond(
            json!({"any": [{"path": "a", "set": true}, {"path": "b", "set": true}]})
        ));
        assert!(!cond(json!({"not": {"path": "b", "set": true}})));
    }

    #[test]
    fn merged_and_yaml_int_terms_read_as_the_chart_reads_them() {
        // mergeOverwrite: only an absent key takes the default; an empty one is refused.
        let merged = json!({"m": {"given": "5Gi", "zero": 0, "empty": "", "null": null, "o": {"n": null}}, "size": "2Gi"});
        let top_m = Place::top(Cursor::new(&merged, None));
        let merged_of = |path: &str| {
            amount(
                top_m,
                &Amount::from_json(&json!({"path": path, "mergedOver": {"path": "size"}})).unwrap(),
            )
        };
        assert_eq!(
            merged_of("m.given").unwrap(),
            Some(Quantity::parse("5Gi").unwrap())
        );
        assert_eq!(merged_of("m.zero").unwrap(), Some(Quantity::from_units(0)));
        assert_eq!(
            merged_of("m.absent").unwrap(),
            Some(Quantity::parse("2Gi").unwrap())
        );
        assert_eq!(
            merged_of("x.y").unwrap(),
            Some(Quantity::parse("2Gi").unwrap())
        );
        assert_eq!(merged_of("m.empty").unwrap_err().path, "spec.m.empty");
        assert_eq!(merged_of("m.null").unwrap_err().path, "spec.m.null");
        assert_eq!(merged_of("m.o.n.deeper").unwrap_err().path, "spec.m.o.n");
        assert_eq!(
            merged_of("m.given.deeper").unwrap_err().reason,
            "must be an object to read \"m.given.deeper\""
        );
        // yamlInt: the rendered scalar as YAML 1.1 reads it.
        let rendered =
            json!({"octal": "010", "helm_empty": "", "zero": "0", "n": 4, "frac": "2.5"});
        let top_r = Place::top(Cursor::new(&rendered, None));
        let int_of =
            |path: &str| count(top_r, &Count::from_json(&json!({"yamlInt": path})).unwrap());
        assert_eq!(int_of("octal").unwrap(), Some(8));
        assert_eq!(int_of("helm_empty").unwrap(), None);
        assert_eq!(int_of("zero").unwrap(), Some(0));
        assert_eq!(int_of("n").unwrap(), Some(4));
        assert_eq!(int_of("absent").unwrap(), None);
        assert!(int_of("frac").unwrap_err().reason.contains("the float 2.5"));
    }
}
