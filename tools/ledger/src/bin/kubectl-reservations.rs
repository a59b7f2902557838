//! The kubectl plugin: `kubectl reservations [flags]` is `tenant-reservation ledger [flags]`
//! (kubectl runs `kubectl-reservations` from PATH with the flags after the plugin's name).

use std::process::ExitCode;

use clap::Parser;
use ledger::cli::{LedgerArgs, run};

/// The pool ledger of the cluster: every pool and key, with its budget, carve-outs,
/// reservations, headroom and largest holders; or, with --what-if, whether one write fits.
#[derive(Parser)]
#[command(name = "kubectl reservations", version)]
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
