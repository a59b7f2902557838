//! `tenant-reservation ledger`: every tenant pool's budget, carve-outs, reservations,
//! headroom and largest holders, on the policy's own evaluation (see the ledger crate).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ledger::cli::{LedgerArgs, run};

#[derive(Parser)]
#[command(name = "tenant-reservation", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every pool and key: budget, carved out, reserved, available, over budget or
    /// overcommitted, and the largest holders; or, with --what-if, whether one write fits.
    Ledger(LedgerArgs),
}

fn main() -> ExitCode {
    let Command::Ledger(args) = Cli::parse().command;
    ExitCode::from(run(&args, &mut anstream::stdout(), &mut anstream::stderr()))
}
