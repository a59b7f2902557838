//! One admission request, start to verdict: read the request into a [`Subject`], then hand
//! it to its gate, [`application`] (every kind but Tenant) or [`tenant`] (the declaration
//! gate). Generic over [`Kubernetes`], so it runs natively in tests.
//!
//! Every refusal is a [`Refusal`], turned into text only in the verdict.

mod application;
mod modules;
mod tenant;

use std::collections::BTreeSet;

use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde_json::{Map, Value};

use crate::charge::ChargeError;
use crate::charge::values::describe;
use crate::cluster::{Application, Kubernetes};
use crate::context::{Context, ContextError};
use crate::keys::{GROUP, TENANT_KIND, plural};
use crate::pool::Tenancy;
use crate::settings::{Settings, SiblingFailure};

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    pub message: Option<String>,
    pub warnings: Vec<String>,
}

impl Verdict {
    pub fn accept(warnings: Vec<String>) -> Self {
        Verdict {
            allowed: true,
            message: None,
            warnings,
        }
    }

    pub fn reject(message: String, warnings: Vec<String>) -> Self {
        Verdict {
            allowed: false,
            message: Some(message),
            warnings,
        }
    }

    /// The verdict of a gate: accepted unless it refused, with the warnings it gathered.
    fn of(gate: impl FnOnce(&mut Vec<String>) -> Result<(), Refusal>) -> Self {
        let mut warnings = Vec::new();
        match gate(&mut warnings) {
            Ok(()) => Verdict::accept(warnings),
            Err(refusal) => Verdict::reject(refusal.to_string(), warnings),
        }
    }
}

/// Why a write is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the admission request cannot be read: {0}")]
    Unreadable(String),
    #[error("unsupported admission operation {0:?}")]
    UnsupportedOperation(String),
    #[error("{kind}: the admission request carries no object (found {found})")]
    NoObject { kind: String, found: String },
    #[error("{kind} {name}: an application must have a namespace")]
    NoNamespace { kind: String, name: String },
    #[error("{subject}: {reason}")]
    BadSpec { subject: String, reason: String },
    #[error("{subject}: the previous version's {reason}")]
    BadPreviousSpec { subject: String, reason: String },
    #[error("{subject}: an UPDATE without oldObject cannot be checked for growth")]
    NoOldObject { subject: String },
    #[error("{0}")]
    Settings(String),
    #[error("{subject}: {error}")]
    Cluster {
        subject: String,
        error: ContextError,
    },
    #[error("{subject} cannot be evaluated: {error}")]
    Unevaluable { subject: String, error: ChargeError },
    #[error("{subject}: the budget of pool {pool} cannot be read: {reason}")]
    BudgetUnreadable {
        subject: String,
        pool: String,
        reason: String,
    },
    #[error("{subject}: the carve-outs of pool {pool} overflow")]
    PoolCarveOutsOverflow { subject: String, pool: String },
    #[error("{subject}: the {what} overflow")]
    Overflow { subject: String, what: &'static str },
    #[error(
        "{subject}: pool {pools} cannot be checked, {} other object{} cannot be evaluated (siblingFailure: deny): {}",
        problems.len(), plural(problems.len()), problems.join("; ")
    )]
    Siblings {
        subject: String,
        pools: String,
        problems: Vec<String>,
    },
    /// The declaration of a Tenant under admission is malformed.
    #[error("{subject}: {}", problems.join("; "))]
    Declaration {
        subject: String,
        problems: Vec<String>,
    },
    #[error(
        "{subject}: {key} cannot shrink from {from} to {to}: the chart keeps what it has provisioned, so the lower value would under-charge it"
    )]
    Shrinks {
        subject: String,
        key: String,
        from: String,
        to: String,
    },
    #[error("{subject}: {}", violations.join("; "))]
    OverBudget {
        subject: String,
        violations: Vec<String>,
    },
}

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
        "CREATE" | "UPDATE" => Verdict::of(|warnings| {
            let subject = subject_of(request)?;
            let context = Context::new(settings, k8s).map_err(Refusal::Settings)?;
            if subject.kind == TENANT_KIND {
                tenant::check(&subject, &context, warnings)
            } else {
                application::check(&subject, &context, warnings)
            }
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

/// The tenant tree for a write in `subject`'s namespace, with a warning for each Tenant
/// release there that cannot be placed.
fn tenancy(
    context: &Context<'_>,
    subject: &Subject<'_>,
    warnings: &mut Vec<String>,
) -> Result<Tenancy, Refusal> {
    let (tenancy, unplaced) = context.tenancy().map_err(|error| Refusal::Cluster {
        subject: subject.label(),
        error,
    })?;
    warnings.extend(
        unplaced
            .into_iter()
            .filter(|(namespace, _)| **namespace == *subject.namespace)
            .map(|(_, warning)| warning),
    );
    Ok(tenancy)
}

/// How every gate ends: `siblingFailure` applied to the problems with objects other than the
/// one under admission (a refusal, or warnings), then the violations, if any.
struct Outcome<'a> {
    subject: String,
    /// The pools checked, by name (sorted, each once).
    pools: BTreeSet<&'a str>,
    problems: Vec<String>,
    /// Tenant modules that cannot be evaluated: counted as zero, with a warning, whatever
    /// `siblingFailure` says (the tenant chart made them; they never refuse a write).
    modules: Vec<String>,
    violations: Vec<String>,
}

impl Outcome<'_> {
    fn conclude(self, settings: &Settings, warnings: &mut Vec<String>) -> Result<(), Refusal> {
        let pools: Vec<&str> = self.pools.into_iter().collect();
        let pools = pools.join(", ");
        warnings.extend(self.modules.iter().map(|m| {
            format!("counted as zero in pool {pools}: {m} (a tenant module, never a reason to refuse a write)")
        }));
        if !self.problems.is_empty() {
            match settings.sibling_failure {
                SiblingFailure::Deny => {
                    return Err(Refusal::Siblings {
                        subject: self.subject,
                        pools,
                        problems: self.problems,
                    });
                }
                SiblingFailure::Warn => warnings.extend(
                    self.problems
                        .into_iter()
                        .map(|p| format!("counted as zero in pool {pools}: {p}")),
                ),
            }
        }
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(Refusal::OverBudget {
                subject: self.subject,
                violations: self.violations,
            })
        }
    }
}
