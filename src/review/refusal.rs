//! Every reason a write is refused, in one enum: gates return a [`Refusal`] and it becomes
//! text only in the verdict, which names the subject once ([`Refusal::message`]), so every
//! message is worded here and no gate carries the subject into its errors.

use super::text::summary;
use crate::charge::ChargeError;
use crate::context::{ContextError, Unsummarized};
use crate::keys::plural;
use crate::pool::UnreadableBudget;

/// Why a write is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    // Refusals of the request itself, before or apart from its object.
    #[error("the admission request cannot be read: {0}")]
    Unreadable(String),
    #[error("unsupported admission operation {0:?}")]
    UnsupportedOperation(String),
    #[error("{kind}: the admission request carries no object (found {found})")]
    NoObject { kind: String, found: String },
    #[error("{kind} {name}: an application must have a namespace")]
    NoNamespace { kind: String, name: String },
    #[error("{0}")]
    Settings(String),

    // Refusals of the object under admission: the verdict puts its label in front.
    #[error("{0}")]
    BadSpec(String),
    #[error("the previous version's {0}")]
    BadPreviousSpec(String),
    #[error("an UPDATE without oldObject cannot be checked for growth")]
    NoOldObject,
    #[error("{0}")]
    Cluster(#[from] ContextError),
    #[error("cannot be evaluated: {0}")]
    Unevaluable(#[from] ChargeError),
    #[error("the budget of pool {} cannot be read: {}", .0.pool, .0.reason)]
    BudgetUnreadable(#[from] UnreadableBudget),
    #[error(
        "pool {root} cannot be checked (poolSummary.mode: required): {why}",
        root = .0.root, why = .0
    )]
    Unsummarized(Unsummarized),
    #[error("the carve-outs of pool {pool} overflow")]
    PoolCarveOutsOverflow { pool: String },
    #[error("the {0} overflow")]
    Overflow(&'static str),
    #[error(
        "pool {pools} cannot be checked, {} other object{} cannot be evaluated (siblingFailure: deny): {}",
        problems.len(), plural(problems.len()), summary(problems)
    )]
    Siblings {
        pools: String,
        problems: Vec<String>,
    },
    /// The declaration of a Tenant under admission is malformed.
    #[error("{}", .0.join("; "))]
    Declaration(Vec<String>),
    #[error(
        "{key} cannot shrink from {from} to {to}: the chart keeps what it has provisioned, so the lower value would under-charge it"
    )]
    Shrinks {
        key: String,
        from: String,
        to: String,
    },
    #[error("{}", .0.join("; "))]
    OverBudget(Vec<String>),
}

impl Refusal {
    /// The message, naming `subject` (`VMInstance tenant-foo/db1`) in front of a refusal of
    /// the object under admission.
    pub fn message(&self, subject: Option<&str>) -> String {
        use Refusal::*;
        match (self, subject) {
            (Unreadable(_) | UnsupportedOperation(_) | NoObject { .. } | NoNamespace { .. }, _)
            | (Settings(_), _)
            | (_, None) => self.to_string(),
            // `Postgres tenant-a/db cannot be evaluated: ...`
            (Unevaluable(_), Some(subject)) => format!("{subject} {self}"),
            (_, Some(subject)) => format!("{subject}: {self}"),
        }
    }
}
