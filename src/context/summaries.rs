//! A pool's summary, as a write reads it: one GET per pool root, trusted only when it is the
//! controller's current word under the settings in force (`crate::summary`).

use std::rc::Rc;

use k8s_openapi::jiff::Timestamp;

use super::Context;
use crate::summary::{KIND, PoolReservation, SummaryStatus, fingerprint};

/// Why a pool's summary (the `PoolReservation` named after the pool, in its namespace) is not
/// read: the walk reads the pool instead, or (`poolSummary.mode:
/// required`) the write is refused with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{KIND} {root} {why}")]
pub struct Unsummarized {
    pub root: String,
    pub why: String,
}

impl Context<'_> {
    /// The trusted summary of the pools rooted at the tenant owning `root`, read once per
    /// request, at `now`.
    pub(crate) fn pool_summary(
        &self,
        root: &str,
        now: Timestamp,
    ) -> Result<Rc<SummaryStatus>, Unsummarized> {
        if let Some(known) = self.summaries.borrow().get(root) {
            return known.clone();
        }
        let not = |why: String| Unsummarized {
            root: root.to_string(),
            why,
        };
        let read = || {
            let answer = self
                .k8s
                .pool_summary(root)
                .map_err(|e| not(format!("cannot be read: {e}")))?;
            let summary: PoolReservation = serde_json::from_slice(&answer)
                .map_err(|e| not(format!("cannot be parsed: {e}")))?;
            if summary.metadata.name != root || summary.metadata.namespace != root {
                return Err(not(format!(
                    "is answered by {}/{}",
                    summary.metadata.namespace, summary.metadata.name
                )));
            }
            let status = summary
                .status
                .ok_or_else(|| not("has no status yet".to_string()))?;
            if status.settings != fingerprint::of(self.settings) {
                return Err(not(format!(
                    "was computed under other settings or another policy version ({}, not {})",
                    status.settings,
                    fingerprint::of(self.settings)
                )));
            }
            self.settings
                .pool_summary
                .trust()
                .judge(status.renewed_at.0, now)
                .map_err(|e| not(e.to_string()))?;
            Ok(Rc::new(status))
        };
        let outcome = read();
        self.summaries
            .borrow_mut()
            .insert(root.to_string(), outcome.clone());
        outcome
    }
}
