//! The flags of `tenant-reservation ledger` (and `kubectl cozystack-reservations`), and the run.
//!
//! - [`args`]: the flags, parsed as kubectl parses its own;
//! - [`cluster`]: the cluster and the settings the flags name;
//! - [`run`](mod@run): the ledger, the what-if or the comparison, written as `-o` asks;
//! - [`rules`]: `tenant-reservation rules`, the lists of plurals the rules and the audit
//!   scanner's role must name.

use std::io::Write;

mod args;
mod cluster;
mod rules;
mod run;

pub use args::{DEFAULT_HOLDERS, LedgerArgs, Output, View, request_timeout};
pub use cluster::Cluster;
pub use rules::{RulesArgs, run_rules};
pub use run::run;

/// Exit codes: the ledger was drawn, or the write fits.
pub const OK: u8 = 0;
/// `--what-if`: the policy refuses the write.
pub const REFUSED: u8 = 1;
/// Bad input, an unreadable cluster, invalid settings.
pub const ERROR: u8 = 2;
/// `--fail-over-budget`: a pool shown is over its budget.
pub const OVER_BUDGET: u8 = 3;

/// The exit code of a run: its own, or [`ERROR`] with the error written to `err`.
fn exit_code(result: anyhow::Result<u8>, err: &mut dyn Write) -> u8 {
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "error: {e:#}");
            ERROR
        }
    }
}
