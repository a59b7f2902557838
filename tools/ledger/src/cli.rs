//! The flags of `tenant-reservation ledger` (and `kubectl reservations`), and the run.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::Value;
use tenant_reservation_policy::cluster::Kubernetes;
use tenant_reservation_policy::ledger::ledger;

use crate::{live, settings, state, table, what_if};

/// Exit codes: the ledger was drawn, or the write fits.
pub const OK: u8 = 0;
/// `--what-if`: the policy refuses the write.
pub const REFUSED: u8 = 1;
/// Bad input, an unreadable cluster, invalid settings.
pub const ERROR: u8 = 2;

#[derive(clap::Args, Debug, Clone)]
pub struct LedgerArgs {
    /// A cluster-state YAML (as the tests' test_data/**/cluster.yaml): multi-document, Lists
    /// expanded.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dump", "kubeconfig", "context"])]
    pub state: Option<PathBuf>,
    /// A dump from `kubectl get applicationdefinitions,helmreleases,virtualmachineclusterinstancetypes
    /// -A -o json` (or -o yaml).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["kubeconfig", "context"])]
    pub dump: Option<PathBuf>,
    /// The kubeconfig of the live cluster (default: $KUBECONFIG, else ~/.kube/config). The
    /// live cluster is read when neither --state nor --dump is given; read-only (LIST).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Policy settings: JSON or YAML, or a ClusterAdmissionPolicy manifest (its spec.settings).
    /// Default: the settings of deploy/clusteradmissionpolicy.yaml.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// `table` for people, `json` for scripts.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// How many of the largest holders to show per pool and key.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_HOLDERS)]
    pub holders: usize,
    /// Whether this write fits: an AdmissionReview, or a bare application (or HelmRelease)
    /// manifest, a CREATE, or an UPDATE of the one stored under its name. Exit code 0: it
    /// fits, 1: the policy refuses it, 2: error.
    #[arg(long, value_name = "FILE")]
    pub what_if: Option<PathBuf>,
}

/// The flags' defaults, as clap gives them (`--holders 3`), for callers that build the flags.
impl Default for LedgerArgs {
    fn default() -> Self {
        LedgerArgs {
            state: None,
            dump: None,
            kubeconfig: None,
            context: None,
            settings: None,
            output: Output::Table,
            holders: DEFAULT_HOLDERS,
            what_if: None,
        }
    }
}

/// How many holders a line shows unless told.
pub const DEFAULT_HOLDERS: usize = 3;

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Output {
    #[default]
    Table,
    Json,
}

/// Runs the ledger (or the what-if), writing the result to `out` and problems to `err`;
/// returns the exit code.
pub fn run(args: &LedgerArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match draw(args, out, err) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "error: {e:#}");
            ERROR
        }
    }
}

fn draw(args: &LedgerArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let settings_value = settings::load(args.settings.as_deref())?;
    let settings = settings::parse(&settings_value)?;
    let cluster = open(args, err)?;
    if let Some(path) = &args.what_if {
        let document = read_document(path)?;
        let decision = what_if::decide(&document, &settings_value, cluster.as_ref())?;
        match args.output {
            Output::Table => write!(out, "{}", decision.render())?,
            Output::Json => writeln!(out, "{:#}", decision.to_json())?,
        }
        return Ok(if decision.verdict.allowed {
            OK
        } else {
            REFUSED
        });
    }
    let ledger = ledger(&settings, cluster.as_ref(), args.holders)?;
    match args.output {
        Output::Table => write!(out, "{}", table::render(&ledger))?,
        Output::Json => writeln!(out, "{:#}", ledger.to_json())?,
    }
    for warning in table::warnings(&ledger) {
        writeln!(err, "warning: {warning}")?;
    }
    Ok(OK)
}

/// The cluster the flags name.
fn open(args: &LedgerArgs, err: &mut dyn Write) -> Result<Box<dyn Kubernetes>> {
    match args.state.as_ref().or(args.dump.as_ref()) {
        Some(path) => {
            let store = state::load(path)?;
            for warning in state::missing(&store) {
                writeln!(err, "warning: {}: {warning}", path.display())?;
            }
            Ok(Box::new(state::Stored(store)))
        }
        None => Ok(Box::new(live::Live::connect(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
        )?)),
    }
}

/// A JSON or YAML document.
fn read_document(path: &std::path::Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("{} is not JSON or YAML", path.display()))?;
    serde_json::to_value(doc).with_context(|| format!("{} is not JSON-compatible", path.display()))
}
