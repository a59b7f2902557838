//! Admission latency and cost of `policy.wasm` as tenant pools grow.
//!
//! Loads the policy once in wasmtime through waPC, on the replay-runner's host (the `wapc` +
//! `wasmtime-provider` stack of Kubewarden's policy-evaluator), then for each pool size times
//! repeated `validate` calls (CREATE and UPDATE) with the host's `list_resources_all` answers
//! computed by `host_sim` and served from memory, and compares them with the time native Rust
//! takes merely to deserialize the same answers.
//!
//! ```text
//! cargo build --release --target wasm32-wasip1
//! cargo run --release --manifest-path tools/Cargo.toml -p bench -- [--policy PATH] \
//!     [--sizes 10,100,1000,10000] [--iterations N]
//! ```
//!
//! Exits non-zero if the number of host calls per request is not the same for every request
//! and size, or if a request is not admitted (the measured path is the full pool check).

mod instance;
mod memory;
mod stats;
mod workload;

use std::collections::HashSet;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::Value;
use tenant_reservation_policy::cluster::parse_applications;
use tenant_reservation_policy::validate_payload;

use instance::{Calls, Instance, Policy};
use stats::{Bytes, Human, Summary};
use workload::{Native, Workload};

#[derive(Parser, Debug)]
#[command(about = "Admission latency and cost of policy.wasm as tenant pools grow")]
struct Args {
    /// The policy module (default: the repository's
    /// target/wasm32-wasip1/release/tenant_reservation_policy.wasm).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Pool sizes (applications in the pool), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    sizes: Vec<usize>,
    /// Timed requests per pool size and operation.
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// Untimed requests before each timed series.
    #[arg(long, default_value_t = 5)]
    warmup: usize,
    /// Fresh instances timed for the instantiation figures.
    #[arg(long, default_value_t = 50)]
    instantiations: usize,
    /// Write /tmp/perf-PID.map for `perf record` (profile a policy built with `strip = false`).
    #[arg(long)]
    perfmap: bool,
    /// Only run the native `validate_payload` (CREATE and UPDATE, `--iterations` each per
    /// size) and print nothing: a target for `valgrind --tool=callgrind` or `perf`.
    #[arg(long)]
    native_only: bool,
}

fn default_policy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/wasm32-wasip1/release/tenant_reservation_policy.wasm")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Create,
    Update,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Create => "CREATE",
            Op::Update => "UPDATE",
        }
    }

    fn payload(self, w: &Workload) -> &[u8] {
        match self {
            Op::Create => &w.create,
            Op::Update => &w.update,
        }
    }
}

struct Row {
    size: usize,
    op: Op,
    policy: Summary,
    host_calls: usize,
    answer_bytes: usize,
    /// Stored applications served, and how many distinct (kind, pruned values) among them.
    stored: (usize, usize),
    memory_after: Option<usize>,
    fresh_memory: Option<usize>,
    native: Summary,
    floor: Summary,
    fresh: Summary,
}

/// Whether a `validate` response admits the request; the message otherwise.
fn admitted(response: &[u8]) -> Result<()> {
    let v: Value = serde_json::from_slice(response).context("the validate response")?;
    if v["accepted"] == Value::Bool(true) {
        Ok(())
    } else {
        bail!("the request was not admitted: {}", v["message"])
    }
}

/// The floor: deserialising the answers one request was served into `serde_json::Value`,
/// natively.
fn floor_once(answers: &[Arc<Vec<u8>>]) -> Duration {
    let start = Instant::now();
    for bytes in answers {
        let v: Value = serde_json::from_slice(bytes).expect("answers are JSON");
        black_box(v);
    }
    start.elapsed()
}

/// The stored applications (labelled HelmReleases, the pool's Tenants included) in a request's
/// answers, and how many distinct (kind, pruned values) they hold: the policy evaluates each
/// at most once. Only the Applications answer holds labelled HelmReleases, so the other
/// answers count for nothing.
fn stored_and_distinct(answers: &[Arc<Vec<u8>>]) -> (usize, usize) {
    let mut stored = 0;
    let mut distinct = HashSet::new();
    for bytes in answers {
        for app in parse_applications(bytes, |_| None).unwrap_or_default() {
            stored += 1;
            let values = app.values.map(|v| v.get().to_string()).unwrap_or_default();
            distinct.insert((app.kind.to_string(), values));
        }
    }
    (stored, distinct.len())
}

fn time_series(iterations: usize, mut f: impl FnMut() -> Result<Duration>) -> Result<Summary> {
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        samples.push(f()?);
    }
    Ok(Summary::of(&mut samples))
}

/// One timed `validate` on `instance`, checking the verdict and counting host calls.
fn timed_validate(
    instance: &mut Instance,
    payload: &[u8],
    calls: &mut Vec<Calls>,
) -> Result<Duration> {
    let start = Instant::now();
    let (response, counted) = instance.validate(payload)?;
    let elapsed = start.elapsed();
    calls.push(counted);
    admitted(&response)?;
    Ok(elapsed)
}

fn run() -> Result<bool> {
    let args = Args::parse();
    if args.sizes.is_empty() || args.iterations == 0 {
        bail!("--sizes and --iterations must not be empty or zero");
    }
    if args.native_only {
        for &size in &args.sizes {
            let (w, answers) = workload::generate(size);
            let k8s = Native(&answers);
            for payload in [&w.create, &w.update] {
                for _ in 0..args.iterations {
                    black_box(validate_payload(payload, &k8s));
                }
            }
        }
        return Ok(true);
    }
    let path = args.policy.clone().unwrap_or_else(default_policy);
    let wasm = std::fs::read(&path).with_context(|| {
        format!(
            "reading {} (build it with `cargo build --release --target wasm32-wasip1`)",
            path.display()
        )
    })?;

    println!("# tenant-reservation-policy admission benchmark\n");
    println!("- policy: `{}`, {} bytes", path.display(), wasm.len());
    println!(
        "- host: {} ({} CPUs), rustc-built bench, wasmtime 48 via wasmtime-provider 2.25 / wapc 2.2, epoch interruption on",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "- per size and operation: {} warm-up + {} timed requests on one long-lived instance",
        args.warmup, args.iterations
    );
    println!("- load average at start: {}", load_average());

    // Instantiation, with wasmtime's own memory as policy-server runs it.
    let default = Policy::load(&wasm, false, args.perfmap)?;
    let mut compiles = vec![default.compile];
    for _ in 0..2 {
        compiles.push(Policy::load(&wasm, false, args.perfmap)?.compile);
    }
    let compile = Summary::of(&mut compiles);
    let instantiate = time_series(args.instantiations, || {
        let start = Instant::now();
        let instance = default.instantiate()?;
        let elapsed = start.elapsed();
        drop(instance);
        Ok(elapsed)
    })?;
    println!(
        "- compile (wasmtime Module::new, cranelift): median {} of 3; instantiate (rehydrate + waPC init): median {}, p99 {} of {}\n",
        Human(compile.median),
        Human(instantiate.median),
        Human(instantiate.p99),
        args.instantiations
    );

    // The measured instance: loaded once, as policy-server runs it.
    let mut instance = default.instantiate()?;
    // Its shadow with tracked memory, fed the same series, for the memory figures.
    let tracked = Policy::load(&wasm, true, false)?;
    let mut shadow = tracked.instantiate()?;
    let initial_memory = shadow.memory.as_ref().map(|m| m.initial());

    let mut rows: Vec<Row> = Vec::new();
    let mut constant = true;
    let mut expected_calls: Option<usize> = None;
    let mut sizes = args.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    for &size in &sizes {
        let build = Instant::now();
        let (w, answers) = workload::generate(size);
        let answers = Arc::new(answers);
        eprintln!(
            "pool of {size}: {} VMInstance, {} Postgres, {} Kubernetes; generated in {}",
            w.mix.0,
            w.mix.1,
            w.mix.2,
            Human(build.elapsed())
        );
        instance.serve(answers.clone());
        shadow.serve(answers.clone());
        let native_k8s = Native(&answers);
        for op in [Op::Create, Op::Update] {
            let payload = op.payload(&w);
            let mut calls = Vec::new();
            for _ in 0..args.warmup.max(1) {
                timed_validate(&mut instance, payload, &mut calls)?;
                black_box(validate_payload(payload, &native_k8s));
            }
            // What one request was served: the floor's input.
            let served = instance.last_answers();
            let stored = stored_and_distinct(&served);
            for _ in 0..args.warmup {
                black_box(floor_once(&served));
            }
            calls.clear();
            // Interleaved, so that the three series see the same machine noise.
            let mut policy = Vec::with_capacity(args.iterations);
            let mut native = Vec::with_capacity(args.iterations);
            let mut floor = Vec::with_capacity(args.iterations);
            for _ in 0..args.iterations {
                policy.push(timed_validate(&mut instance, payload, &mut calls)?);
                let start = Instant::now();
                let verdict = validate_payload(payload, &native_k8s);
                native.push(start.elapsed());
                if !verdict.allowed {
                    bail!(
                        "native: the request was not admitted: {:?}",
                        verdict.message
                    );
                }
                black_box(verdict);
                floor.push(floor_once(&served));
            }
            let Calls {
                host_calls,
                answer_bytes,
            } = calls[0];
            if calls.iter().any(|c| *c != calls[0]) {
                eprintln!(
                    "error: pool of {size}, {}: host calls per request vary: {calls:?}",
                    op.name()
                );
                constant = false;
            }
            match expected_calls {
                None => expected_calls = Some(host_calls),
                Some(n) if n != host_calls => {
                    eprintln!(
                        "error: pool of {size}, {}: {host_calls} host calls per request, {n} at the smallest size",
                        op.name()
                    );
                    constant = false;
                }
                Some(_) => {}
            }

            // Memory: the shadow instance runs the same requests (its size after the series
            // is its peak), and a fresh one runs the request once.
            let shadow_runs = args.warmup + args.iterations.min(20);
            let mut shadow_calls = Vec::new();
            for _ in 0..shadow_runs {
                timed_validate(&mut shadow, payload, &mut shadow_calls)?;
            }
            let memory_after = shadow.memory.as_ref().map(|m| m.size());
            let fresh_memory = {
                let mut probe = tracked.instantiate()?;
                probe.serve(answers.clone());
                admitted(&probe.validate(payload)?.0)?;
                probe.memory.as_ref().map(|m| m.size())
            };

            // policy-server mode: a fresh instance per request.
            let fresh_runs = args.iterations.clamp(1, 20);
            let fresh = time_series(fresh_runs, || {
                let start = Instant::now();
                let mut fresh = default.instantiate()?;
                fresh.serve(answers.clone());
                let (response, _) = fresh.validate(payload)?;
                let elapsed = start.elapsed();
                admitted(&response)?;
                Ok(elapsed)
            })?;
            let (policy, native, floor) = (
                Summary::of(&mut policy),
                Summary::of(&mut native),
                Summary::of(&mut floor),
            );
            eprintln!(
                "  {}: policy median {}, native {}, floor {}",
                op.name(),
                Human(policy.median),
                Human(native.median),
                Human(floor.median)
            );
            rows.push(Row {
                size,
                op,
                policy,
                host_calls,
                answer_bytes,
                stored,
                memory_after,
                fresh_memory,
                native,
                floor,
                fresh,
            });
        }
    }

    print_tables(&rows, initial_memory);
    println!("\nLoad average at end: {}.", load_average());
    if !constant {
        eprintln!("FAILED: the number of host calls per request is not constant");
    }
    Ok(constant)
}

fn print_tables(rows: &[Row], initial_memory: Option<usize>) {
    let mem = |m: Option<usize>| m.map_or("-".to_string(), |b| Bytes(b).to_string());
    println!("## Warm instance: repeated `validate` calls\n");
    println!(
        "| pool | op | median | p99 | host calls | answer bytes | stored apps / distinct (kind, values) | guest memory after | native policy | floor (serde_json::Value) | policy / floor | Δ median per added app |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let previous = rows
            .iter()
            .filter(|r| r.op == row.op && r.size < row.size)
            .max_by_key(|r| r.size);
        let marginal = previous.map_or("-".to_string(), |p| {
            let delta = row.policy.median.as_secs_f64() - p.policy.median.as_secs_f64();
            format!("{:.2} µs", delta * 1e6 / (row.size - p.size) as f64)
        });
        println!(
            "| {} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {:.2} | {} |",
            row.size,
            row.op.name(),
            Human(row.policy.median),
            Human(row.policy.p99),
            row.host_calls,
            Bytes(row.answer_bytes),
            row.stored.0,
            row.stored.1,
            mem(row.memory_after),
            Human(row.native.median),
            Human(row.floor.median),
            row.policy.median.as_secs_f64() / row.floor.median.as_secs_f64(),
            marginal
        );
    }
    println!(
        "\nGuest memory: wasm linear memory size after the series, on a shadow instance with the same history (linear memory never shrinks, sizes run in ascending order: it is the peak so far); {} at instantiation.\n",
        mem(initial_memory)
    );
    println!("## policy-server mode: a fresh instance per request\n");
    println!("| pool | op | instantiate + validate, median | p99 | guest memory peak |");
    println!("|---:|---|---:|---:|---:|");
    for row in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            row.size,
            row.op.name(),
            Human(row.fresh.median),
            Human(row.fresh.p99),
            mem(row.fresh_memory)
        );
    }
}

/// `/proc/loadavg`'s three averages: the noise the figures were taken in.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_string())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
