//! What one application reserves.
//!
//! - [`definition`]: the ApplicationDefinition as listed, and the `spec.reservation` contract;
//! - [`values`]: an application's values as its chart sees them (schema defaults applied);
//! - [`evaluate`]: a reservation block evaluated against those values;
//! - [`helm_casts`]: Helm's `int64`/`int` casts, exactly as the charts run them;
//! - [`presets`]: Cozystack's preset table, the sizes a `preset` path resolves to;
//! - [`yaml_scalar`]: how Kubernetes reads a value a chart renders unquoted (YAML 1.1).
//!
//! - [`sizing`]: what sizes resolve against (presets, instance types by name, GPU classes).
//!
//! Pure apart from the instance-type lookup behind [`sizing::InstanceTypes`].

pub mod definition;
pub mod evaluate;
pub mod helm_casts;
pub mod presets;
mod read;
pub mod sizing;
pub mod terms;
pub mod values;
pub mod yaml_scalar;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::json::describe;
use crate::resources::Resources;
use definition::{ApplicationDefinition, Reservation};
pub use read::EvalError;
use sizing::Sizing;
use terms::Implied;
use values::{Cursor, Schema};

/// Why an application cannot be charged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChargeError {
    #[error("cannot read the ApplicationDefinitions: {0}")]
    DefinitionsUnreadable(String),
    #[error("no ApplicationDefinition declares kind {kind}")]
    NoDefinition { kind: String },
    #[error("kind {kind} is declared by {} ApplicationDefinitions ({})", names.len(), names.join(", "))]
    ManyDefinitions { kind: String, names: Vec<String> },
    #[error("ApplicationDefinition {definition}: spec.reservation is invalid: {reason}")]
    InvalidReservation { definition: String, reason: String },
    #[error("the reservations setting's block for {kind} is invalid: {reason}")]
    InvalidSettingsReservation { kind: String, reason: String },
    #[error(
        "ApplicationDefinition {definition}: spec.application.openAPISchema must be a string, not {found}"
    )]
    SchemaNotAString { definition: String, found: String },
    #[error("cannot read the schema of ApplicationDefinition {definition}: {reason}")]
    SchemaUnanswered { definition: String, reason: String },
    #[error("ApplicationDefinition {definition}: spec.application.openAPISchema: {reason}")]
    SchemaUnreadable { definition: String, reason: String },
    #[error(
        "ApplicationDefinition {definition}: spec.application.openAPISchema is not valid JSON: {reason}"
    )]
    SchemaInvalid { definition: String, reason: String },
    #[error(
        "ApplicationDefinition {definition} declares no spec.reservation, the reservations setting has no block for {kind}, and {kind} is not in the exemptKinds setting"
    )]
    NoReservation { definition: String, kind: String },
    #[error("spec.values is not valid JSON: {0}")]
    ValuesNotJson(String),
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// A definition made ready to evaluate: the reservation block in force parsed (its own, or
/// the settings' block for its kind) and its schema loaded.
#[derive(Debug, Clone)]
pub struct Governing {
    pub definition_name: String,
    /// `None`: neither the definition nor the settings declare a reservation block.
    pub reservation: Option<Reservation>,
    pub schema: Schema,
}

impl Governing {
    /// The definition that governs `kind`, of those that declare it: exactly one must.
    /// `fallback` is the settings' block for the kind, used when the definition has none;
    /// `schema` reads the definition's `openAPISchema`, asked only when a block is in force.
    pub fn of_kind<'d>(
        kind: &str,
        mut declaring: impl Iterator<Item = &'d ApplicationDefinition>,
        fallback: Option<&Value>,
        schema: impl FnOnce(&ApplicationDefinition) -> Result<Option<Box<RawValue>>, ChargeError>,
    ) -> Result<Governing, ChargeError> {
        let Some(first) = declaring.next() else {
            return Err(ChargeError::NoDefinition { kind: kind.into() });
        };
        let others: Vec<&ApplicationDefinition> = declaring.collect();
        if !others.is_empty() {
            return Err(ChargeError::ManyDefinitions {
                kind: kind.into(),
                names: std::iter::once(first)
                    .chain(others)
                    .map(|d| d.metadata.name.clone())
                    .collect(),
            });
        }
        Governing::prepare(first, fallback, schema)
    }

    /// Parses the block in force and the openAPISchema; the error names the definition.
    pub fn prepare(
        definition: &ApplicationDefinition,
        fallback: Option<&Value>,
        schema: impl FnOnce(&ApplicationDefinition) -> Result<Option<Box<RawValue>>, ChargeError>,
    ) -> Result<Governing, ChargeError> {
        let name = &definition.metadata.name;
        let reservation = match (&definition.spec.reservation, fallback) {
            (Some(block), _) if !block.is_null() => {
                Some(Reservation::from_value(block).map_err(|reason| {
                    ChargeError::InvalidReservation {
                        definition: name.clone(),
                        reason,
                    }
                })?)
            }
            (_, Some(block)) => Some(Reservation::from_value(block).map_err(|reason| {
                ChargeError::InvalidSettingsReservation {
                    kind: definition.spec.application.kind.clone(),
                    reason,
                }
            })?),
            _ => None,
        };
        if reservation.is_none() {
            // Nothing to evaluate: the schema is not read.
            return Ok(Governing {
                definition_name: name.clone(),
                reservation,
                schema: Schema::none(),
            });
        }
        let raw = schema(definition)?;
        let text = match raw.as_deref() {
            None => String::new(),
            // A list answer is valid JSON, so the raw token always parses.
            Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
                Ok(Value::String(text)) => text,
                Ok(Value::Null) => String::new(),
                Ok(other) => {
                    return Err(ChargeError::SchemaNotAString {
                        definition: name.clone(),
                        found: describe(&other),
                    });
                }
                Err(e) => {
                    return Err(ChargeError::SchemaUnreadable {
                        definition: name.clone(),
                        reason: e.to_string(),
                    });
                }
            },
        };
        let schema = if text.is_empty() {
            Schema::none()
        } else {
            Schema::parse(&text).map_err(|e| ChargeError::SchemaInvalid {
                definition: name.clone(),
                reason: e.to_string(),
            })?
        };
        Ok(Governing {
            definition_name: name.clone(),
            reservation,
            schema,
        })
    }

    /// The applications this block implies (a Tenant's modules) whose conditions hold on
    /// `values`, read with the schema's defaults.
    pub fn implied(&self, values: &Value) -> Result<Vec<&Implied>, ChargeError> {
        let Some(reservation) = &self.reservation else {
            return Ok(Vec::new());
        };
        let cursor = Cursor::new(values, self.schema.root());
        let mut implied = Vec::new();
        for candidate in &reservation.implies {
            if read::all_hold(cursor, &candidate.when)? {
                implied.push(candidate);
            }
        }
        Ok(implied)
    }

    /// What one application with `values` reserves by this block; `Ok(None)` when there is
    /// no block.
    pub fn charge(
        &self,
        values: &Value,
        sizing: &Sizing<'_>,
    ) -> Result<Option<Resources>, ChargeError> {
        let Some(reservation) = &self.reservation else {
            return Ok(None);
        };
        let cursor = Cursor::new(values, self.schema.root());
        Ok(Some(evaluate::evaluate(reservation, cursor, sizing)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definition(name: &str, spec: Value) -> ApplicationDefinition {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
    }

    /// The schema the definition carries itself.
    fn inline(d: &ApplicationDefinition) -> Result<Option<Box<RawValue>>, ChargeError> {
        Ok(d.spec.application.open_api_schema.clone())
    }

    #[test]
    fn names_the_definition_when_its_schema_is_broken() {
        let def = definition(
            "broken",
            json!({"application": {"kind": "Broken", "openAPISchema": "{not json"}, "reservation": {}}),
        );
        let err = Governing::prepare(&def, None, inline)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "ApplicationDefinition broken: spec.application.openAPISchema is not valid JSON"
            ),
            "{err}"
        );
        let def = definition(
            "odd",
            json!({"application": {"kind": "Odd", "openAPISchema": {"type": "object"}}, "reservation": {}}),
        );
        assert_eq!(
            Governing::prepare(&def, None, inline)
                .unwrap_err()
                .to_string(),
            "ApplicationDefinition odd: spec.application.openAPISchema must be a string, not an object"
        );
    }

    #[test]
    fn exactly_one_definition_governs_a_kind() {
        let a = definition("a", json!({"application": {"kind": "K"}}));
        let b = definition("b", json!({"application": {"kind": "K"}}));
        assert_eq!(
            Governing::of_kind("K", [].into_iter(), None, inline)
                .unwrap_err()
                .to_string(),
            "no ApplicationDefinition declares kind K"
        );
        assert_eq!(
            Governing::of_kind("K", [&a, &b].into_iter(), None, inline)
                .unwrap_err()
                .to_string(),
            "kind K is declared by 2 ApplicationDefinitions (a, b)"
        );
        let one = Governing::of_kind("K", [&a].into_iter(), None, inline).unwrap();
        assert_eq!(one.definition_name, "a");
        assert!(one.reservation.is_none());
        // The settings' block stands in for a definition that carries none, never over one.
        let settings_block = json!({"storage": "size"});
        let stock =
            Governing::of_kind("K", [&a].into_iter(), Some(&settings_block), inline).unwrap();
        assert!(stock.reservation.is_some());
        let own = definition(
            "own",
            json!({"application": {"kind": "K"}, "reservation": {"storage": "disk"}}),
        );
        let governed =
            Governing::of_kind("K", [&own].into_iter(), Some(&settings_block), inline).unwrap();
        let mut paths = std::collections::BTreeSet::new();
        let block = governed.reservation.unwrap();
        block.read_paths(&mut paths);
        assert_eq!(paths.into_iter().collect::<Vec<_>>(), ["disk"]);
        assert!(
            Governing::of_kind("K", [&a].into_iter(), Some(&json!({"storag": "x"})), inline)
                .unwrap_err()
                .to_string()
                .starts_with(
                    "the reservations setting's block for K is invalid: unknown field `storag`"
                )
        );
    }
}
