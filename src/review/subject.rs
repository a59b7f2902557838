//! Intake: the object of a CREATE or UPDATE read into a [`Subject`], its label noted first so
//! that every refusal after it names the object.

use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde_json::{Map, Value};

use super::refusal::Refusal;
use super::verdict::Notes;
use crate::context::Held;
use crate::json::describe;

/// What is being written.
pub struct Subject<'r> {
    pub kind: &'r str,
    pub namespace: &'r str,
    pub name: &'r str,
    pub values: &'r Value,
    /// The previous values, on UPDATE.
    pub old_values: Option<&'r Value>,
}

impl Subject<'_> {
    pub fn label(&self) -> String {
        label(self.kind, self.namespace, self.name)
    }

    /// Whether `held` is this object (stored, or the module release it would be).
    pub(super) fn is(&self, held: Held<'_>) -> bool {
        held.kind == self.kind && held.namespace == self.namespace && held.name == self.name
    }
}

fn label(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind} {namespace}/{name}")
}

/// A missing `spec`: every value takes its default.
static EMPTY: Value = Value::Null;

/// The object of a CREATE or UPDATE, read as the policy needs it; its label is noted as soon
/// as it is known.
pub(super) fn subject_of<'r>(
    request: &'r KubernetesAdmissionRequest,
    notes: &mut Notes,
) -> Result<Subject<'r>, Refusal> {
    let kind = request.kind.kind.as_str();
    let Value::Object(object) = &request.object else {
        return Err(Refusal::NoObject {
            kind: kind.into(),
            found: describe(&request.object),
        });
    };
    let metadata = |field: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
    };
    let name = metadata("name").unwrap_or(&request.name);
    let namespace = match request.namespace.as_str() {
        "" => metadata("namespace").unwrap_or(""),
        given => given,
    };
    if namespace.is_empty() {
        return Err(Refusal::NoNamespace {
            kind: kind.into(),
            name: name.into(),
        });
    }
    notes.subject = Some(label(kind, namespace, name));
    let values = spec_of(object).map_err(Refusal::BadSpec)?;
    let old_values = match (request.operation.as_str(), &request.old_object) {
        ("UPDATE", Value::Object(old)) => Some(spec_of(old).map_err(Refusal::BadPreviousSpec)?),
        ("UPDATE", _) => return Err(Refusal::NoOldObject),
        _ => None,
    };
    Ok(Subject {
        kind,
        namespace,
        name,
        values,
        old_values,
    })
}

fn spec_of(object: &Map<String, Value>) -> Result<&Value, String> {
    match object.get("spec") {
        None | Some(Value::Null) => Ok(&EMPTY),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(other) => Err(format!("spec must be an object, not {}", describe(other))),
    }
}
