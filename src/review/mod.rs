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
use crate::cluster::{Application, Kubernetes};
use crate::context::{Context, ContextError};
use crate::decision::Record;
use crate::json::describe;
use crate::keys::{GROUP, TENANT_KIND, plural};
use crate::pool::{Pool, Tenancy};
use crate::quantity::Quantity;
use crate::settings::{Settings, SiblingFailure};

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    pub message: Option<String>,
    pub warnings: Vec<String>,
    /// What was written (`VMInstance tenant-foo/db1`), when the request got that far.
    pub subject: Option<String>,
    /// The checks made, for the decision log.
    pub records: Vec<Record>,
}

impl Verdict {
    pub fn accept(warnings: Vec<String>) -> Self {
        Verdict {
            allowed: true,
            message: None,
            warnings: bounded(warnings),
            subject: None,
            records: Vec::new(),
        }
    }

    pub fn reject(message: String, warnings: Vec<String>) -> Self {
        Verdict {
            allowed: false,
            message: Some(message),
            warnings: bounded(warnings),
            subject: None,
            records: Vec::new(),
        }
    }

    /// The verdict of a gate: accepted unless it refused, with what it noted.
    fn of(gate: impl FnOnce(&mut Notes) -> Result<(), Refusal>) -> Self {
        let mut notes = Notes::default();
        let mut verdict = match gate(&mut notes) {
            Ok(()) => Verdict::accept(notes.warnings),
            Err(refusal) => Verdict::reject(refusal.to_string(), notes.warnings),
        };
        verdict.subject = notes.subject;
        verdict.records = notes.records;
        verdict
    }
}

/// What a gate notes beside its verdict: warnings, what was written, and the checks it made.
#[derive(Default)]
pub(crate) struct Notes {
    pub warnings: Vec<String>,
    pub subject: Option<String>,
    pub records: Vec<Record>,
}

/// Kubernetes cuts each warning at 256 characters and drops the warnings past 4 KiB in all.
const WARNING_CHARS: usize = 256;
const WARNINGS_BYTES: usize = 4096;

/// The warnings as Kubernetes can carry them: each cut to its limit (ending in `…`), and
/// those past the total limit summarised as `+N more warnings`.
fn bounded(warnings: Vec<String>) -> Vec<String> {
    let total = warnings.len();
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for (index, warning) in warnings.into_iter().enumerate() {
        let warning = cut(warning, WARNING_CHARS);
        // Room for this one and, if any follow, for the summary line.
        let summary = if index + 1 < total { 32 } else { 0 };
        if bytes + warning.len() + summary > WARNINGS_BYTES {
            kept.push(format!("+{} more warnings", total - index));
            return kept;
        }
        bytes += warning.len();
        kept.push(warning);
    }
    kept
}

/// `text` cut to at most `chars` characters, the last one `…` when cut.
pub(crate) fn cut(text: String, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text;
    }
    let mut cut: String = text.chars().take(chars - 1).collect();
    cut.push('…');
    cut
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
        problems.len(), plural(problems.len()), summary(problems)
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

/// `[what]counted as zero in pool P: <problem>` for the first few problems, and a count of
/// the rest. A tenant module (`what`) never refuses a write: the tenant chart made it.
fn counted_as_zero(what: &str, pools: &str, problems: &[String]) -> Vec<String> {
    let mut warnings: Vec<String> = problems
        .iter()
        .take(PROBLEMS_SHOWN)
        .map(|p| {
            format!(
                "{what}counted as zero in pool {pools}: {}",
                cut(p.clone(), PROBLEM_CHARS)
            )
        })
        .collect();
    if problems.len() > PROBLEMS_SHOWN {
        warnings.push(format!(
            "{what}counted as zero in pool {pools}: {} more that cannot be evaluated",
            problems.len() - PROBLEMS_SHOWN
        ));
    }
    warnings
}

/// The tenants above `subject`'s namespace.
fn tenants_above(context: &Context<'_>, subject: &Subject<'_>) -> Result<Tenancy, Refusal> {
    context
        .tenants_above(subject.namespace)
        .map_err(|error| Refusal::Cluster {
            subject: subject.label(),
            error,
        })
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
        .map_err(|error| Refusal::Cluster {
            subject: subject.label(),
            error,
        })
}

/// How many problems with other objects a message or the warnings name one by one, and how
/// long each may be: a pool of hundreds of broken objects still gets a readable answer.
const PROBLEMS_SHOWN: usize = 3;
const PROBLEM_CHARS: usize = 200;

/// `a; b; c; +N more`.
fn summary(problems: &[String]) -> String {
    let mut shown: Vec<String> = problems
        .iter()
        .take(PROBLEMS_SHOWN)
        .map(|p| cut(p.clone(), PROBLEM_CHARS))
        .collect();
    if problems.len() > PROBLEMS_SHOWN {
        shown.push(format!("+{} more", problems.len() - PROBLEMS_SHOWN));
    }
    shown.join("; ")
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
    fn conclude(self, settings: &Settings, notes: &mut Notes) -> Result<(), Refusal> {
        let pools: Vec<&str> = self.pools.into_iter().collect();
        let pools = pools.join(", ");
        let warnings = &mut notes.warnings;
        warnings.extend(counted_as_zero("tenant module ", &pools, &self.modules));
        if !self.problems.is_empty() {
            match settings.sibling_failure {
                SiblingFailure::Deny => {
                    return Err(Refusal::Siblings {
                        subject: self.subject,
                        pools,
                        problems: self.problems,
                    });
                }
                SiblingFailure::Warn => {
                    warnings.extend(counted_as_zero("", &pools, &self.problems))
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_fit_what_kubernetes_carries() {
        let long = "w".repeat(300);
        let warnings = bounded(vec![long.clone(); 40]);
        assert!(warnings.iter().all(|w| w.chars().count() <= WARNING_CHARS));
        assert!(warnings[0].ends_with('…'));
        let total: usize = warnings.iter().map(String::len).sum();
        assert!(total <= WARNINGS_BYTES, "{total}");
        let last = warnings.last().unwrap();
        assert_eq!(
            last,
            &format!("+{} more warnings", 40 - (warnings.len() - 1))
        );
        let few = vec!["a".to_string(), "é".repeat(300)];
        let kept = bounded(few);
        assert_eq!(kept[0], "a");
        assert_eq!(
            kept[1].chars().count(),
            WARNING_CHARS,
            "cut on characters, not bytes"
        );
    }
}
