//! The verdict of one request, and what a gate notes beside it (warnings, the subject, the
//! checks made). Warnings are bounded here to what Kubernetes carries, so that no gate has
//! to think about it.

use super::refusal::Refusal;
use super::text::cut;
use crate::decision::Record;

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

    /// The verdict of a gate: accepted unless it refused, with what it noted. A refusal is
    /// worded here, about the subject the gate noted.
    pub(super) fn of(gate: impl FnOnce(&mut Notes) -> Result<(), Refusal>) -> Self {
        let mut notes = Notes::default();
        let mut verdict = match gate(&mut notes) {
            Ok(()) => Verdict::accept(notes.warnings),
            Err(refusal) => {
                Verdict::reject(refusal.message(notes.subject.as_deref()), notes.warnings)
            }
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
