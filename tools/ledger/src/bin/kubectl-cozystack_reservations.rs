//! The kubectl plugin: `kubectl cozystack-reservations [flags]` is `tenant-reservation ledger
//! [flags]`. kubectl runs `kubectl-cozystack_reservations` from PATH with the flags after the
//! plugin's name (a `-` in a plugin's name is a `_` in its file name). The name says whose
//! plugin it is: `reservations` alone would be too generic among krew's plugins.

use std::process::ExitCode;

use clap::Parser;
use ledger::cli::{LedgerArgs, run};

/// The reservation ledger of a Cozystack cluster: every tenant pool and key, with its budget,
/// carve-outs, reservations, headroom and largest holders, judged as the deployed
/// tenant-reservation policy judges; or, with --what-if, whether one write fits; or, with
/// --compare, what other settings (or another version) would change.
///
/// Exit codes: 0 done (or the write fits), 1 the write does not fit, 2 error,
/// 3 over budget (--fail-over-budget).
#[derive(Parser)]
#[command(
    name = "kubectl cozystack-reservations",
    bin_name = "kubectl cozystack-reservations",
    version
)]
struct Plugin {
    #[command(flatten)]
    args: LedgerArgs,
}

fn main() -> ExitCode {
    let plugin = Plugin::parse();
    ExitCode::from(run(
        &plugin.args,
        &mut anstream::stdout(),
        &mut anstream::stderr(),
    ))
}
