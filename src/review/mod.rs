//! One admission request, start to verdict: read the request into a [`Subject`], then hand
//! it to its gate, [`application`] (every kind but Tenant) or [`tenant`] (the declaration
//! gate). Generic over [`Kubernetes`], so it runs natively in tests.
//!
//! Every refusal is a [`Refusal`], turned into text only in the verdict.
//!
//! - here: intake (the request read into a [`Subject`]) and the lookups both gates start
//!   with (the tenants above, a key's pool and budget, the pools below);
//! - [`verdict`]: the [`Verdict`] and the [`Notes`] a gate takes beside it;
//! - [`refusal`]: every reason a write is refused;
//! - [`outcome`]: how every gate ends (`siblingFailure`, then the violations).

mod application;
mod modules;
mod outcome;
mod refusal;
mod tenant;
mod verdict;

use std::collections::BTreeSet;

use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde_json::{Map, Value};

use crate::cluster::{Application, Kubernetes};
use crate::context::Context;
use crate::json::describe;
use crate::keys::{GROUP, TENANT_KIND};
use crate::pool::{Pool, Tenancy};
use crate::quantity::Quantity;
use crate::settings::Settings;

use outcome::Outcome;
pub use refusal::Refusal;
pub(crate) use verdict::Notes;
pub use verdict::Verdict;

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
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    fn is(&self, app: &Application) -> bool {
        *app.kind == *self.kind && *app.namespace == *self.namespace && app.name == self.name
    }
}

/// A missing `spec`: every value takes its default.
static EMPTY: Value = Value::Null;

/// Decides one admission request.
pub fn review(
    request: &KubernetesAdmissionRequest,
    settings: &Settings,
    k8s: &dyn Kubernetes,
) -> Verdict {
    match request.operation.as_str() {
        // A subresource write (status) cannot change the values a reservation reads.
        "CREATE" | "UPDATE" if !request.sub_resource.is_empty() => Verdict::accept(Vec::new()),
        "CREATE" | "UPDATE" if request.kind.group != GROUP => Verdict::accept(vec![format!(
            "{}/{} {} is not an {GROUP} application: this policy does not check it",
            request.kind.group, request.kind.version, request.kind.kind
        )]),
        "CREATE" | "UPDATE" => Verdict::of(|notes| {
            let subject = subject_of(request)?;
            notes.subject = Some(subject.label());
            let context = Context::new(settings, k8s).map_err(Refusal::Settings)?;
            let checked = if subject.kind == TENANT_KIND {
                tenant::check(&subject, &context, notes)
            } else {
                application::check(&subject, &context, notes)
            };
            // Tenant releases of the namespace written to that bound nothing, if it was read.
            let unplaced = context.unplaced_in(subject.namespace);
            notes.warnings.splice(0..0, unplaced);
            checked
        }),
        "DELETE" | "CONNECT" => Verdict::accept(Vec::new()),
        other => Verdict::reject(
            Refusal::UnsupportedOperation(other.to_string()).to_string(),
            Vec::new(),
        ),
    }
}

/// The object of a CREATE or UPDATE, read as the policy needs it.
fn subject_of(request: &KubernetesAdmissionRequest) -> Result<Subject<'_>, Refusal> {
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
    let label = || format!("{kind} {namespace}/{name}");
    let values = spec_of(object).map_err(|reason| Refusal::BadSpec {
        subject: label(),
        reason,
    })?;
    let old_values = match (request.operation.as_str(), &request.old_object) {
        ("UPDATE", Value::Object(old)) => {
            Some(spec_of(old).map_err(|reason| Refusal::BadPreviousSpec {
                subject: label(),
                reason,
            })?)
        }
        ("UPDATE", _) => return Err(Refusal::NoOldObject { subject: label() }),
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

/// The tenants above `subject`'s namespace.
fn tenants_above(context: &Context<'_>, subject: &Subject<'_>) -> Result<Tenancy, Refusal> {
    context
        .tenants_above(subject.namespace)
        .map_err(|error| Refusal::cluster(&subject.label(), error))
}

/// The pool of `key` that `subject`'s namespace belongs to, with its budget; `None` when no
/// tenant at or above it bounds `key`.
fn pool_of<'t>(
    tenancy: &'t Tenancy,
    subject: &Subject<'_>,
    key: &str,
) -> Result<Option<(Pool<'t>, Quantity)>, Refusal> {
    let Some(pool) = tenancy.pool(subject.namespace, key) else {
        return Ok(None);
    };
    let budget = pool.budget().map_err(|reason| Refusal::BudgetUnreadable {
        subject: subject.label(),
        pool: pool.name().to_string(),
        reason: reason.to_string(),
    })?;
    Ok(Some((pool, budget)))
}

/// The tenants of `tenancy` and those the pools of `keys` rooted at `roots` reach.
fn load_pools(
    context: &Context<'_>,
    subject: &Subject<'_>,
    tenancy: &mut Tenancy,
    roots: &[&str],
    keys: &BTreeSet<&str>,
) -> Result<(), Refusal> {
    context
        .load_pools(tenancy, roots, keys)
        .map_err(|error| Refusal::cluster(&subject.label(), error))
}
