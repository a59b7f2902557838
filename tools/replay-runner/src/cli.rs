//! `replay-runner run`: the subset of `kwctl run` that policy tests use.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use crate::admission::{PolicySettings, parse_admission_request, settings_from_value};
use crate::answers::{Answerer, ClusterAnswers, NoAnswers, Recorder, ReplayAnswers};
use crate::calls::ContextAwareAccess;
use crate::capabilities::LogMode;
use crate::engine::EngineOptions;
use crate::host::{Host, HostOptions, access_from_metadata};
use crate::replay::Replay;
use crate::session::Session;

#[derive(Debug, Parser)]
#[command(
    name = "replay-runner",
    version,
    about = "Runs a Kubewarden waPC policy like `kwctl run`, answering its host calls from a kwctl session file or a cluster-state fixture. A test tool: never shipped."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Runs a policy against an admission request (same flags and output as `kwctl run`).
    Run(RunArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// File containing the Kubernetes admission request object in JSON format (an AdmissionReview or a bare request; `-` reads stdin)
    #[arg(long = "request-path", short = 'r', value_name = "PATH")]
    pub request_path: String,

    /// File containing the settings for this policy (YAML or JSON)
    #[arg(
        long = "settings-path",
        short = 's',
        value_name = "PATH",
        conflicts_with = "settings_json"
    )]
    pub settings_path: Option<PathBuf>,

    /// JSON string containing the settings for this policy
    #[arg(long = "settings-json", value_name = "VALUE")]
    pub settings_json: Option<String>,

    /// Grant access to the Kubernetes resources listed in the policy's `contextAwareResources` metadata (to all resources when the policy is not annotated)
    #[arg(long = "allow-context-aware")]
    pub allow_context_aware: bool,

    /// Answer host calls from this kwctl session file, strictly in recorded order
    #[arg(
        long = "replay-host-capabilities-interactions",
        value_name = "FILE",
        conflicts_with_all = ["record_host_capabilities_interactions", "cluster_state"]
    )]
    pub replay_host_capabilities_interactions: Option<PathBuf>,

    /// Answer host calls from the Kubernetes objects in this multi-document YAML file
    #[arg(long = "cluster-state", value_name = "FILE")]
    pub cluster_state: Option<PathBuf>,

    /// Write the host calls and their answers (from --cluster-state) to this file, in kwctl's session format
    #[arg(
        long = "record-host-capabilities-interactions",
        value_name = "FILE",
        requires = "cluster_state"
    )]
    pub record_host_capabilities_interactions: Option<PathBuf>,

    /// Turn off usage of wasmtime cache
    #[arg(long = "disable-wasmtime-cache")]
    pub disable_wasmtime_cache: bool,

    /// The policy module: a path (a `file://` URI is accepted too)
    #[arg(value_name = "POLICY.wasm")]
    pub policy: String,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => match run(&args) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("Error: {}", error_report(&e));
                ExitCode::FAILURE
            }
        },
    }
}

/// anyhow's `{:?}` report (message, then its causes) without the backtrace it adds when
/// `RUST_BACKTRACE` is set.
pub fn error_report(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    let causes: Vec<String> = e.chain().skip(1).map(|c| c.to_string()).collect();
    if !causes.is_empty() {
        out.push_str("\n\nCaused by:");
        for c in causes {
            out.push_str(&format!("\n    {c}"));
        }
    }
    out
}

fn log_mode_from_env() -> LogMode {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
    if set("RUST_LOG") || set("REPLAY_RUNNER_VERBOSE") {
        LogMode::Stderr
    } else {
        LogMode::Ignore
    }
}

fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("REPLAY_RUNNER_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("replay-runner").join("wasmtime"))
}

/// kwctl's request reading: the file (or stdin), as JSON, then an AdmissionReview or a request.
pub fn read_request(path: &str) -> Result<crate::admission::AdmissionRequest> {
    let raw = if path == "-" {
        let mut buffer = String::new();
        std::io::stdin()
            .read_to_string(&mut buffer)
            .map_err(|e| anyhow!("Error reading request from stdin: {e}"))?;
        buffer
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| anyhow!("Error opening request file {path}; {e}"))?
    };
    let value: Value = serde_json::from_str(&raw)
        .map_err(|e| anyhow!("Error parsing request file {path}: not JSON: {e}"))?;
    parse_admission_request(&value).with_context(|| {
        format!("Request file {path} is neither an AdmissionReview nor an admission request")
    })
}

/// kwctl's settings reading.
pub fn read_settings(path: Option<&Path>, json: Option<&str>) -> Result<PolicySettings> {
    if let Some(path) = path {
        let file = std::fs::File::open(path)
            .map_err(|e| anyhow!("Cannot open settings file {}: {e}", path.display()))?;
        let value: Value = serde_yaml::from_reader(file)
            .map_err(|e| anyhow!("Cannot parse settings file {}: {e}", path.display()))?;
        settings_from_value(&value)
    } else if let Some(json) = json {
        let value: Value =
            serde_json::from_str(json).map_err(|e| anyhow!("Cannot parse settings JSON: {e}"))?;
        settings_from_value(&value)
    } else {
        Ok(PolicySettings::new())
    }
}

fn policy_path(uri: &str) -> Result<PathBuf> {
    if let Some(path) = uri.strip_prefix("file://") {
        return Ok(PathBuf::from(path));
    }
    if uri.contains("://") {
        bail!("replay-runner only runs local policy files, not {uri}");
    }
    if uri.ends_with(".yaml") || uri.ends_with(".yml") {
        bail!(
            "replay-runner does not run Kubewarden policy resources (YAML files); pass the .wasm module"
        );
    }
    Ok(PathBuf::from(uri))
}

/// Runs one policy evaluation; `Ok` is the line to print on stdout.
pub fn run(args: &RunArgs) -> Result<String> {
    let settings = read_settings(args.settings_path.as_deref(), args.settings_json.as_deref())?;
    let request = read_request(&args.request_path)?;

    let answerer: Box<dyn Answerer> =
        if let Some(path) = &args.replay_host_capabilities_interactions {
            let session = Session::from_file(path)?;
            let replay = Replay::new(&session)
                .with_context(|| format!("in session file {}", path.display()))?;
            Box::new(ReplayAnswers::new(replay))
        } else if let Some(path) = &args.cluster_state {
            let answers = ClusterAnswers::new(crate::cluster::from_file(path)?);
            if args.record_host_capabilities_interactions.is_some() {
                Box::new(Recorder::new(answers))
            } else {
                Box::new(answers)
            }
        } else {
            Box::new(NoAnswers)
        };

    let path = policy_path(&args.policy)?;
    let options = HostOptions {
        access: Some(ContextAwareAccess::Denied),
        log_mode: log_mode_from_env(),
        engine: EngineOptions {
            cache_dir: if args.disable_wasmtime_cache {
                None
            } else {
                default_cache_dir()
            },
            ..EngineOptions::default()
        },
    };
    let mut host = Host::from_file(&path, options)?;
    if args.allow_context_aware {
        if host.metadata().is_none() {
            eprintln!(
                "warning: {} carries no Kubewarden metadata (it is not annotated): kwctl run --allow-context-aware would grant it no Kubernetes access; replay-runner grants it every resource",
                path.display()
            );
        }
        let access = access_from_metadata(host.metadata());
        host.set_access(access);
    } else if host
        .metadata()
        .is_some_and(|m| !m.context_aware_resources.is_empty())
    {
        eprintln!(
            "warning: the policy requires access to Kubernetes resources at evaluation time; without --allow-context-aware that access is denied"
        );
    }
    host.set_answerer(answerer);

    let settings_response = host.validate_settings(&settings);
    if !settings_response.valid {
        bail!(
            "Provided settings are not valid: {}",
            settings_response.message.unwrap_or_default()
        );
    }

    let evaluation = host.validate(&request, &settings).map_err(|e| {
        let mut message = format!("policy evaluation failed: {e}");
        for v in &e.violations {
            message.push_str(&format!("\n  caused by a host call: {v}"));
        }
        message.push_str(&format!(
            "\n(kwctl would print {} and exit 0)",
            e.kwctl_response.to_kwctl_json()
        ));
        anyhow!(message)
    })?;
    if !evaluation.violations.is_empty() {
        let mut message = String::from("the policy made host calls that this run cannot answer:");
        for v in &evaluation.violations {
            message.push_str(&format!("\n  - {v}"));
        }
        message.push_str(&format!(
            "\n(the policy then answered {})",
            evaluation.response.to_kwctl_json()
        ));
        bail!(message);
    }
    for warning in host.answerer_warnings() {
        eprintln!("warning: {warning}");
    }
    if let Some(dest) = &args.record_host_capabilities_interactions {
        let session = host.recorded_session().expect("recording uses a Recorder");
        session.write_file(dest)?;
    }
    Ok(evaluation.response.to_kwctl_json())
}
