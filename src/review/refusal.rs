//! Every reason a write is refused, in one enum: gates return a [`Refusal`] and it becomes
//! text only in the verdict, so every message is worded here.

use super::outcome::summary;
use crate::charge::ChargeError;
use crate::context::ContextError;
use crate::keys::plural;

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

impl Refusal {
    /// A lookup of the cluster failed while deciding on `subject`: the one way a
    /// [`Refusal::Cluster`] is made.
    pub fn cluster(subject: &str, error: ContextError) -> Refusal {
        Refusal::Cluster {
            subject: subject.to_string(),
            error,
        }
    }
}
