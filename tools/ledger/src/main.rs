//! `tenant-reservation ledger`: every tenant pool's budget, carve-outs, reservations,
//! headroom and largest holders, on the policy's own evaluation (see the ledger crate); and
//! `tenant-reservation rules`, the plurals the webhook rules must name.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ledger::cli::{LedgerArgs, RulesArgs, run, run_rules};

#[derive(Parser)]
#[command(name = "tenant-reservation", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the ledger's flags are larger than the rules', and boxing them buys
// nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Every pool and key: budget, carved out, reserved, available, over budget or
    /// overcommitted, and the largest holders; or, with --what-if, whether one write fits.
    Ledger(LedgerArgs),
    /// The resources list that covers every ApplicationDefinition's plural; exit code 1 when
    /// the policy's rules or the audit scanner's ClusterRole leave one out
    /// (scripts/generate-rules.sh).
    Rules(RulesArgs),
}

fn main() -> ExitCode {
    let (mut out, mut err) = (anstream::stdout(), anstream::stderr());
    ExitCode::from(match Cli::parse().command {
        Command::Ledger(args) => run(&args, &mut out, &mut err),
        Command::Rules(args) => run_rules(&args, &mut out, &mut err),
    })
}
