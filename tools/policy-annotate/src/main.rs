use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use policy_annotate::{check, wasm};

/// Kubewarden release helper: `kwctl annotate` where there is no kwctl (without claiming to be
/// kwctl), the embedded metadata, and a drift check over Cargo.toml, metadata.yml,
/// artifacthub-pkg.yml and the manifest.
#[derive(Parser)]
#[command(name = "policy-annotate", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Add Kubewarden metadata to a WebAssembly module (same flags as `kwctl annotate`).
    Annotate {
        /// File containing the metadata
        #[arg(short = 'm', long = "metadata-path", value_name = "PATH")]
        metadata_path: PathBuf,
        /// File containing the usage information of the policy
        #[arg(short = 'u', long = "usage-path", value_name = "PATH")]
        usage_path: Option<PathBuf>,
        /// Output file
        #[arg(short = 'o', long = "output-path", value_name = "PATH")]
        output_path: PathBuf,
        /// Path to WebAssembly module to be annotated
        wasm_path: PathBuf,
    },
    /// Print the embedded metadata (the JSON of the first io.kubewarden.metadata section).
    Inspect {
        /// Print the section bytes exactly as stored instead of pretty JSON
        #[arg(long)]
        raw: bool,
        wasm_path: PathBuf,
    },
    /// Fail when versions, rules or context-aware resources drift between the release files.
    Check {
        #[arg(long, default_value = "Cargo.toml")]
        cargo_toml: PathBuf,
        #[arg(short = 'm', long = "metadata-path", default_value = "metadata.yml")]
        metadata_path: PathBuf,
        #[arg(long, default_value = "artifacthub-pkg.yml")]
        artifacthub: PathBuf,
        #[arg(long = "questions-path")]
        questions_path: Option<PathBuf>,
        /// A ClusterAdmissionPolicy manifest whose module, rules and resources must agree too
        #[arg(long)]
        manifest: Vec<PathBuf>,
        /// The release tag, e.g. v0.1.0
        #[arg(long)]
        tag: Option<String>,
    },
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Annotate {
            metadata_path,
            usage_path,
            output_path,
            wasm_path,
        } => {
            let module = std::fs::read(&wasm_path)
                .with_context(|| format!("cannot read {}", wasm_path.display()))?;
            let yaml = read(&metadata_path)?;
            let opts = wasm::AnnotateOptions {
                usage: usage_path.as_deref().map(read).transpose()?,
            };
            let facts = wasm::module_facts(&module)?;
            if facts.metadata_sections > 0 {
                eprintln!(
                    "policy-annotate: {} is already annotated; its io.kubewarden.metadata section is replaced",
                    wasm_path.display()
                );
            }
            let metadata = wasm::prepare_metadata(&module, &yaml, &opts).with_context(|| {
                format!(
                    "{} cannot annotate {}",
                    metadata_path.display(),
                    wasm_path.display()
                )
            })?;
            let out = wasm::annotate(&module, &metadata)?;
            std::fs::write(&output_path, &out)
                .with_context(|| format!("cannot write {}", output_path.display()))?;
            Ok(true)
        }
        Command::Inspect { raw, wasm_path } => {
            let module = std::fs::read(&wasm_path)
                .with_context(|| format!("cannot read {}", wasm_path.display()))?;
            let sections = wasm::metadata_sections(&module)?;
            let Some(first) = sections.first() else {
                eprintln!("{}: no io.kubewarden.metadata section", wasm_path.display());
                return Ok(false);
            };
            if raw {
                use std::io::Write;
                std::io::stdout().write_all(first)?;
            } else {
                let value: serde_json::Value = serde_json::from_slice(first)?;
                println!("{}", serde_json::to_string_pretty(&value)?);
            }
            Ok(true)
        }
        Command::Check {
            cargo_toml,
            metadata_path,
            artifacthub,
            questions_path,
            manifest,
            tag,
        } => {
            let cargo = read(&cargo_toml)?;
            let meta = read(&metadata_path)?;
            let ah = read(&artifacthub)?;
            let questions = questions_path.as_deref().map(read).transpose()?;
            let manifests: Vec<(String, String)> = manifest
                .iter()
                .map(|p| Ok((p.display().to_string(), read(p)?)))
                .collect::<Result<_>>()?;
            let all = check::check(&check::Inputs {
                cargo_toml: &cargo,
                metadata_yml: &meta,
                artifacthub_pkg_yml: Some(&ah),
                questions_yml: questions.as_deref(),
                manifests: manifests
                    .iter()
                    .map(|(n, t)| (n.as_str(), t.as_str()))
                    .collect(),
                tag: tag.as_deref(),
            })?;
            for line in &all.ok {
                println!("ok: {line}");
            }
            for line in &all.warnings {
                println!("warning: {line}");
            }
            for line in &all.problems {
                println!("FAIL: {line}");
            }
            println!(
                "policy-annotate check: {} consistent, {} drifted",
                all.ok.len(),
                all.problems.len()
            );
            Ok(all.problems.is_empty())
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("policy-annotate: {e:#}");
            ExitCode::FAILURE
        }
    }
}
