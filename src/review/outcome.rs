//! How every gate ends: the problems with objects other than the one under admission
//! (refused or warned of, as `siblingFailure` says; tenant modules always warned of), then
//! the violations. Problems are shown a few at a time, each cut short, so that a pool of
//! hundreds of broken objects still gets a readable answer.

use std::collections::BTreeSet;

use super::refusal::Refusal;
use super::text::{PROBLEM_CHARS, PROBLEMS_SHOWN, cut};
use super::verdict::Notes;
use crate::settings::{Settings, SiblingFailure};

/// How every gate ends: `siblingFailure` applied to the problems with objects other than the
/// one under admission (a refusal, or warnings), then the violations, if any.
pub(super) struct Outcome<'a> {
    /// The pools checked, by name (sorted, each once).
    pub pools: BTreeSet<&'a str>,
    pub problems: Vec<String>,
    /// Tenant modules that cannot be evaluated: counted as zero, with a warning, whatever
    /// `siblingFailure` says (the tenant chart made them; they never refuse a write).
    pub modules: Vec<String>,
    pub violations: Vec<String>,
}

impl Outcome<'_> {
    pub fn conclude(self, settings: &Settings, notes: &mut Notes) -> Result<(), Refusal> {
        let pools: Vec<&str> = self.pools.into_iter().collect();
        let pools = pools.join(", ");
        let warnings = &mut notes.warnings;
        warnings.extend(counted_as_zero("tenant module ", &pools, &self.modules));
        if !self.problems.is_empty() {
            match settings.sibling_failure {
                SiblingFailure::Deny => {
                    return Err(Refusal::Siblings {
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
            Err(Refusal::OverBudget(self.violations))
        }
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
