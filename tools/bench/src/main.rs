//! Admission cost of `policy.wasm` against the pool and the cluster it lands in.
//!
//! For each cluster size (applications in the whole cluster) and each measured pool size
//! (applications in the pool the write is checked against), in two variants (values that
//! repeat, and values that all differ), generates a cluster ([`cluster`]), then times CREATE
//! and UPDATE requests:
//!
//! - the guest: `policy.wasm` in wasmtime through waPC on the replay-runner's host engine, one
//!   long-lived instance;
//! - the host: each of the guest's host calls served as policy-server serves it ([`host`]: one
//!   reflector per key, the objects cloned and serialised on every call), timed apart;
//! - cold: the first request after a start (a fresh host without reflectors, a fresh instance);
//! - the same policy compiled natively, and the floor: natively deserialising the request's
//!   answers into `serde_json::Value`.
//!
//! Then a sweep per cluster size: one write in every tenant's namespace, on one fresh host, to
//! count the reflectors a replica ends up holding. Last, each pool in two clusters 10× apart,
//! request by request in turn, for the growth target. Prints markdown; writes an SVG plot with
//! `--svg`.
//!
//! ```text
//! cargo build --release --target wasm32-wasip1
//! cargo run --release --manifest-path tools/Cargo.toml -p bench -- [--policy PATH] \
//!     [--clusters 1000,10000,100000] [--pools 20,1000,10000] [--iterations N] [--quick] \
//!     [--svg docs/bench.svg]
//! ```
//!
//! Exits non-zero if a request is not admitted, or if the host calls of the same cluster and
//! operation differ from one request to the next.

mod cluster;
mod host;
mod instance;
mod plot;
mod stats;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::{Value, json};
use tenant_reservation_policy::validate_payload;

use cluster::{Cluster, Defaults, Shape, Variant};
use host::{ApiServer, Frozen, HostModel, Reflectors, RequestStats, Served, SharedHost, Source};
use instance::{Instance, Policy};
use stats::{Bytes, Human, Summary};

#[derive(Parser, Debug)]
#[command(about = "Admission cost of policy.wasm against its pool and its cluster")]
struct Args {
    /// The policy module (default: the repository's
    /// target/wasm32-wasip1/release/tenant_reservation_policy.wasm).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Cluster sizes (applications in the cluster), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    clusters: Vec<usize>,
    /// Pool sizes (applications in the measured pool), comma-separated; those larger than a
    /// cluster are skipped for it.
    #[arg(long, value_delimiter = ',', default_value = "20,1000,10000")]
    pools: Vec<usize>,
    /// Value variants: same (sizes repeat), distinct (every application's values differ).
    #[arg(long, value_delimiter = ',', default_value = "same,distinct", value_parser = parse_variant)]
    variants: Vec<Variant>,
    /// Timed requests per series at most.
    #[arg(long, default_value_t = 60)]
    iterations: usize,
    /// A series stops after this many seconds once it has --min-iterations requests.
    #[arg(long, default_value_t = 2.0)]
    series_seconds: f64,
    #[arg(long, default_value_t = 15)]
    min_iterations: usize,
    /// Untimed requests before each series.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Cold first requests (fresh host, fresh instance) per series.
    #[arg(long, default_value_t = 5)]
    cold_runs: usize,
    /// A smoke run: clusters 1000,10000, pools 20,1000, a few requests per series.
    #[arg(long)]
    quick: bool,
    /// Skip the reflector sweep (one write per tenant namespace).
    #[arg(long)]
    no_sweep: bool,
    /// Write the plot here (SVG).
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Write /tmp/perf-PID.map for `perf record` (profile a policy built with `strip = false`).
    #[arg(long)]
    perfmap: bool,
    /// Only run the native `validate_payload` (CREATE and UPDATE, `--iterations` each per
    /// shape, answered from memory) and print nothing: a target for `valgrind --tool=callgrind`
    /// or `perf`.
    #[arg(long)]
    native_only: bool,
    /// Write each shape's cluster (the variant `same`) to DIR/pool-<pool>/ as the API server
    /// takes it (namespaces, HelmReleases, definitions, instance types: JSON arrays) with its
    /// CREATE and UPDATE as AdmissionReviews and the settings, for a real control plane
    /// (scripts/bench-cluster.sh), and run nothing.
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    match s {
        "same" => Ok(Variant::Same),
        "distinct" => Ok(Variant::Distinct),
        _ => Err(format!("{s}: same or distinct")),
    }
}

fn default_policy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/wasm32-wasip1/release/tenant_reservation_policy.wasm")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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

    fn payload(self, c: &Cluster) -> &[u8] {
        match self {
            Op::Create => &c.create,
            Op::Update => &c.update,
        }
    }
}

struct Row {
    shape: Shape,
    op: Op,
    samples: usize,
    host_calls: usize,
    answer_bytes: usize,
    by_source: BTreeMap<Source, (usize, usize)>,
    /// Reflectors the cold request opened, and what their LISTs cost the API server.
    opened: usize,
    list_bytes: usize,
    list_pages: usize,
    guest: Summary,
    host: Summary,
    total: Summary,
    cold: Summary,
    cold_host: Summary,
    native: Summary,
    floor: Summary,
}

impl Row {
    fn ratio(&self) -> f64 {
        secs(self.guest.median) / secs(self.floor.median)
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What one sweep found: the reflectors of one replica after a write in every namespace.
struct Sweep {
    cluster: usize,
    tenants: usize,
    bounded: usize,
    levels: [usize; 3],
    /// Namespaces in some pool (those a write there lists).
    pooled_namespaces: usize,
    reflectors: Reflectors,
    took: Duration,
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

/// One `validate` on `instance` served by `host`: the whole time, and the host's share.
fn timed_validate(
    instance: &mut Instance,
    host: &SharedHost,
    payload: &[u8],
) -> Result<(Duration, RequestStats)> {
    let start = Instant::now();
    let (response, calls) = instance.validate(payload)?;
    let elapsed = start.elapsed();
    admitted(&response)?;
    let stats = host::lock(host).request.clone();
    if calls.answer_bytes != stats.answer_bytes {
        bail!(
            "the waPC host gave {} bytes, the host model served {}",
            calls.answer_bytes,
            stats.answer_bytes
        );
    }
    Ok((elapsed, stats))
}

fn shared(api: &Arc<ApiServer>) -> SharedHost {
    Arc::new(Mutex::new(HostModel::new(api.clone())))
}

/// One write in every tenant's namespace (a small VM, CREATE), natively, on one fresh host:
/// the reflectors a replica holds once every tenant has been written to.
fn sweep(c: &Cluster, api: &Arc<ApiServer>, defaults: &Defaults) -> Sweep {
    let start = Instant::now();
    let k8s = Frozen::new(HostModel::new(api.clone()));
    let settings = test_kit::deploy_settings();
    let mut values = defaults.vm_values(0, Variant::Same);
    values["instanceType"] = json!("u1.small");
    for t in &c.tenants {
        let payload = test_kit::payload(
            "CREATE",
            cluster::SUBJECT_KIND,
            &t.owns,
            "sweep",
            values.clone(),
            None,
            settings.clone(),
        );
        black_box(validate_payload(&payload, &k8s));
    }
    // Namespaces some bounded tenant at or above covers.
    let by_owned: BTreeMap<&str, &cluster::TenantSpec> =
        c.tenants.iter().map(|t| (t.owns.as_str(), t)).collect();
    let pooled = c
        .tenants
        .iter()
        .filter(|t| {
            let mut cur = *t;
            loop {
                if cur.bounded {
                    return true;
                }
                if cur.owns == cur.namespace {
                    return false;
                }
                cur = by_owned[cur.namespace.as_str()];
            }
        })
        .count();
    Sweep {
        cluster: c.shape.cluster,
        tenants: c.tenant_count(),
        bounded: c.bounded_count(),
        levels: c.levels(),
        pooled_namespaces: pooled,
        reflectors: k8s.reflectors(),
        took: start.elapsed(),
    }
}

struct Settings {
    iterations: usize,
    min_iterations: usize,
    series: Duration,
    warmup: usize,
    cold_runs: usize,
}

/// The rows of one generated cluster: CREATE and UPDATE. `Err` on a refusal or on host
/// calls that vary.
fn measure(policy: &Policy, c: &Cluster, api: &Arc<ApiServer>, s: &Settings) -> Result<Vec<Row>> {
    let host = shared(api);
    let mut instance = policy.instantiate(Box::new(Served(host.clone())))?;
    let native_k8s = Frozen::new(HostModel::new(api.clone()));
    let mut rows = Vec::new();
    for op in [Op::Create, Op::Update] {
        let payload = op.payload(c);
        let what = format!(
            "cluster {}, pool {}, {}, {}",
            c.shape.cluster,
            c.shape.pool,
            c.shape.variant.name(),
            op.name()
        );
        // Cold: a replica just started (no reflector) and a fresh instance.
        let mut cold = Vec::new();
        let mut cold_host = Vec::new();
        let mut cold_stats = None;
        for _ in 0..s.cold_runs.max(1) {
            let fresh = shared(api);
            let start = Instant::now();
            let mut instance = policy.instantiate(Box::new(Served(fresh.clone())))?;
            let (response, _) = instance.validate(payload)?;
            let elapsed = start.elapsed();
            admitted(&response).with_context(|| what.clone())?;
            let stats = host::lock(&fresh).request.clone();
            cold.push(elapsed.saturating_sub(stats.api));
            cold_host.push(stats.host);
            cold_stats = Some(stats);
        }
        let cold_stats = cold_stats.expect("one cold run at least");

        // Warm: the long-lived instance and host.
        let mut first: Option<RequestStats> = None;
        let mut check = |stats: &RequestStats| -> Result<()> {
            match &first {
                None => first = Some(stats.clone()),
                Some(f) if f.fingerprint != stats.fingerprint || f.calls != stats.calls => bail!(
                    "{what}: host calls differ between requests: {} calls ({:x}), then {} ({:x})",
                    f.calls,
                    f.fingerprint,
                    stats.calls,
                    stats.fingerprint
                ),
                Some(_) => {}
            }
            Ok(())
        };
        for _ in 0..s.warmup.max(1) {
            let (_, stats) = timed_validate(&mut instance, &host, payload).context(what.clone())?;
            if stats.calls != cold_stats.calls || stats.fingerprint != cold_stats.fingerprint {
                bail!("{what}: the warm request's host calls differ from the cold one's");
            }
            check(&stats)?;
            let verdict = validate_payload(payload, &native_k8s);
            if !verdict.allowed {
                bail!("{what}: native: not admitted: {:?}", verdict.message);
            }
        }
        host::lock(&host).record(true);
        let (_, stats) = timed_validate(&mut instance, &host, payload)?;
        check(&stats)?;
        let served = {
            let mut h = host::lock(&host);
            let served = h.recorded();
            h.record(false);
            served
        };
        for _ in 0..s.warmup {
            black_box(floor_once(&served));
        }
        // Interleaved, so that the series see the same machine noise.
        let (mut guest, mut hosts, mut total, mut native, mut floor) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let start = Instant::now();
        for i in 0..s.iterations.max(1) {
            let (elapsed, stats) = timed_validate(&mut instance, &host, payload)?;
            check(&stats)?;
            total.push(elapsed);
            hosts.push(stats.host);
            guest.push(elapsed.saturating_sub(stats.host));
            let t = Instant::now();
            let verdict = validate_payload(payload, &native_k8s);
            native.push(t.elapsed());
            if !verdict.allowed {
                bail!("{what}: native: not admitted: {:?}", verdict.message);
            }
            black_box(verdict);
            floor.push(floor_once(&served));
            if i + 1 >= s.min_iterations && start.elapsed() > s.series {
                break;
            }
        }
        let stats = first.expect("warm-up ran");
        let row = Row {
            shape: c.shape,
            op,
            samples: total.len(),
            host_calls: stats.calls,
            answer_bytes: stats.answer_bytes,
            by_source: stats.by_source.clone(),
            opened: cold_stats.opened,
            list_bytes: cold_stats.list_bytes,
            list_pages: cold_stats.list_pages,
            guest: Summary::of(&mut guest),
            host: Summary::of(&mut hosts),
            total: Summary::of(&mut total),
            cold: Summary::of(&mut cold),
            cold_host: Summary::of(&mut cold_host),
            native: Summary::of(&mut native),
            floor: Summary::of(&mut floor),
        };
        eprintln!(
            "  {}: guest {} + host {} = {}; cold {}; native {}; floor {}; {} samples",
            op.name(),
            Human(row.guest.median),
            Human(row.host.median),
            Human(row.total.median),
            Human(row.cold.median),
            Human(row.native.median),
            Human(row.floor.median),
            row.samples
        );
        rows.push(row);
    }
    Ok(rows)
}

/// A fixed pool timed in two clusters 10× apart, request by request in turn, so that both
/// sides see the same machine noise: medians of separate series taken a minute apart differ
/// by more than the 1.2× the target allows on a busy 2-core machine.
struct Growth {
    pool: usize,
    variant: Variant,
    op: Op,
    small: usize,
    big: usize,
    /// Guest + host medians, small cluster then big.
    medians: (Duration, Duration),
    /// Host calls and answer bytes, small cluster then big.
    calls: (usize, usize),
    bytes: (usize, usize),
    samples: usize,
}

impl Growth {
    fn ratio(&self) -> f64 {
        secs(self.medians.1) / secs(self.medians.0)
    }
}

fn paired_growth(
    policy: &Policy,
    (small, big): (&Cluster, &Cluster),
    s: &Settings,
) -> Result<Vec<Growth>> {
    let side = |c: &Cluster| -> Result<(Instance, SharedHost)> {
        let api = Arc::new(ApiServer::new(c.objects.clone())?);
        let host = shared(&api);
        Ok((policy.instantiate(Box::new(Served(host.clone())))?, host))
    };
    let (mut a, mut b) = (side(small)?, side(big)?);
    let mut out = Vec::new();
    for op in [Op::Create, Op::Update] {
        let (pa, pb) = (op.payload(small), op.payload(big));
        let (mut first_a, mut first_b) = (None, None);
        for _ in 0..s.warmup.max(1) {
            first_a = Some(timed_validate(&mut a.0, &a.1, pa)?.1);
            first_b = Some(timed_validate(&mut b.0, &b.1, pb)?.1);
        }
        let (sa, sb) = (first_a.expect("warmed"), first_b.expect("warmed"));
        let (mut ta, mut tb) = (Vec::new(), Vec::new());
        let start = Instant::now();
        for i in 0..s.iterations.max(1) {
            // Alternate which side goes first, so neither always follows the other.
            if i % 2 == 0 {
                ta.push(timed_validate(&mut a.0, &a.1, pa)?.0);
                tb.push(timed_validate(&mut b.0, &b.1, pb)?.0);
            } else {
                tb.push(timed_validate(&mut b.0, &b.1, pb)?.0);
                ta.push(timed_validate(&mut a.0, &a.1, pa)?.0);
            }
            if i + 1 >= s.min_iterations && start.elapsed() > s.series {
                break;
            }
        }
        let growth = Growth {
            pool: small.shape.pool,
            variant: small.shape.variant,
            op,
            small: small.shape.cluster,
            big: big.shape.cluster,
            medians: (Summary::of(&mut ta).median, Summary::of(&mut tb).median),
            calls: (sa.calls, sb.calls),
            bytes: (sa.answer_bytes, sb.answer_bytes),
            samples: ta.len(),
        };
        eprintln!(
            "  paired {}: cluster {} {} vs cluster {} {}: {:.2}x; {} samples",
            op.name(),
            growth.small,
            Human(growth.medians.0),
            growth.big,
            Human(growth.medians.1),
            growth.ratio(),
            growth.samples
        );
        out.push(growth);
    }
    Ok(out)
}

fn print_growth(growth: &[Growth]) {
    println!(
        "
## A fixed pool in clusters 10× apart, timed in turn
"
    );
    println!(
        "| pool | values | op | clusters | host calls | answer bytes | guest + host median | ratio | samples |"
    );
    println!("|---:|---|---|---|---|---|---|---:|---:|");
    for g in growth {
        println!(
            "| {} | {} | {} | {} → {} | {} → {} | {} → {} | {} → {} | {:.2}× | {} |",
            g.pool,
            g.variant.name(),
            g.op.name(),
            g.small,
            g.big,
            g.calls.0,
            g.calls.1,
            Bytes(g.bytes.0),
            Bytes(g.bytes.1),
            Human(g.medians.0),
            Human(g.medians.1),
            g.ratio(),
            g.samples
        );
    }
    println!(
        "
Both clusters' requests alternate in one loop on the same machine (each side its own instance and host), so the ratio is free of the drift between series of the main table."
    );
}

fn shapes(args: &Args) -> Vec<Shape> {
    let (mut clusters, mut pools) = (args.clusters.clone(), args.pools.clone());
    clusters.sort_unstable();
    clusters.dedup();
    pools.sort_unstable();
    pools.dedup();
    let mut variants = args.variants.clone();
    variants.sort();
    variants.dedup();
    let mut out = Vec::new();
    for &cluster in &clusters {
        for &pool in pools.iter().filter(|&&p| p > 0 && p <= cluster) {
            for &variant in &variants {
                out.push(Shape {
                    cluster,
                    pool,
                    variant,
                });
            }
        }
    }
    out
}

/// Writes `c` for a real API server to `dir`/pool-<pool>/: what the API server sets itself
/// (uid, resourceVersion, ...) is dropped from every object.
fn dump(c: &Cluster, dir: &std::path::Path) -> Result<()> {
    let out = dir.join(format!("pool-{}", c.shape.pool));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut by_kind: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut namespaces = std::collections::BTreeSet::new();
    for object in &c.objects {
        let mut object = object.clone();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "managedFields",
            ] {
                metadata.remove(field);
            }
            if let Some(ns) = metadata.get("namespace").and_then(Value::as_str) {
                namespaces.insert(ns.to_string());
            }
        }
        if let Some(o) = object.as_object_mut() {
            o.remove("status");
        }
        let kind = object["kind"].as_str().unwrap_or("unknown").to_lowercase();
        by_kind.entry(kind).or_default().push(object);
    }
    let write = |name: &str, value: &Value| -> Result<()> {
        let path = out.join(name);
        std::fs::write(&path, serde_json::to_vec(value)?)
            .with_context(|| format!("writing {}", path.display()))
    };
    for (kind, objects) in &by_kind {
        write(&format!("{kind}.json"), &Value::from(objects.clone()))?;
    }
    let namespaces: Vec<Value> = namespaces
        .iter()
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
        .collect();
    write("namespace.json", &Value::from(namespaces))?;
    for (name, payload) in [("create", &c.create), ("update", &c.update)] {
        let payload: Value = serde_json::from_slice(payload)?;
        write(
            &format!("{name}.json"),
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": payload["request"]}),
        )?;
        write("settings.json", &payload["settings"])?;
    }
    write(
        "shape.json",
        &json!({"cluster": c.shape.cluster, "pool": c.shape.pool,
                "pool_namespaces": c.pool_namespaces.len(),
                "tenants": c.tenant_count(), "create_namespace": c.create_namespace}),
    )?;
    eprintln!(
        "dump: {} ({} objects, pool {} in {} namespaces)",
        out.display(),
        c.objects.len(),
        c.shape.pool,
        c.pool_namespaces.len()
    );
    Ok(())
}

fn run() -> Result<bool> {
    let wall = Instant::now();
    let mut args = Args::parse();
    if args.quick {
        args.clusters = vec![1000, 10_000];
        args.pools = vec![20, 1000];
        args.iterations = args.iterations.min(8);
        args.min_iterations = args.min_iterations.min(5);
        args.series_seconds = args.series_seconds.min(0.5);
        args.warmup = args.warmup.min(1);
        args.cold_runs = args.cold_runs.min(2);
    }
    let shapes = shapes(&args);
    if shapes.is_empty() || args.iterations == 0 {
        bail!("no cluster holds a pool of the sizes given, or --iterations is 0");
    }
    let defaults = Defaults::load();
    if let Some(dir) = &args.dump {
        for &shape in shapes.iter().filter(|s| s.variant == Variant::Same) {
            dump(&cluster::generate(shape, &defaults), dir)?;
        }
        return Ok(true);
    }
    if args.native_only {
        for &shape in &shapes {
            let c = cluster::generate(shape, &defaults);
            let api = Arc::new(ApiServer::new(c.objects.clone())?);
            let k8s = Frozen::new(HostModel::new(api));
            for payload in [&c.create, &c.update] {
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
    let load_start = load_average();
    let policy = Policy::load(&wasm, args.perfmap)?;
    let instantiate = {
        let mut samples = Vec::new();
        for _ in 0..30 {
            let start = Instant::now();
            let i = policy.instantiate(Box::new(replay_runner::NoAnswers))?;
            samples.push(start.elapsed());
            drop(i);
        }
        Summary::of(&mut samples)
    };
    let settings = Settings {
        iterations: args.iterations,
        min_iterations: args.min_iterations.max(1),
        series: Duration::from_secs_f64(args.series_seconds),
        warmup: args.warmup,
        cold_runs: args.cold_runs,
    };

    let mut rows = Vec::new();
    let mut sweeps = Vec::new();
    for &shape in &shapes {
        let build = Instant::now();
        let c = cluster::generate(shape, &defaults);
        let api = Arc::new(ApiServer::new(c.objects.clone())?);
        eprintln!(
            "cluster {} ({} tenants, {} bounded, levels {:?}), pool {} in {} namespaces ({}), {}, CREATE in {}: generated in {}",
            shape.cluster,
            c.tenant_count(),
            c.bounded_count(),
            c.levels(),
            shape.pool,
            c.pool_namespaces.len(),
            c.pool_mix
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
            shape.variant.name(),
            c.create_namespace,
            Human(build.elapsed())
        );
        if !args.no_sweep && !sweeps.iter().any(|s: &Sweep| s.cluster == shape.cluster) {
            let s = sweep(&c, &api, &defaults);
            eprintln!(
                "  sweep: {} reflectors after a write in each of {} namespaces, in {}",
                s.reflectors.count,
                c.tenants.len(),
                Human(s.took)
            );
            sweeps.push(s);
        }
        match measure(&policy, &c, &api, &settings) {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("error: {e:#}");
                return Ok(false);
            }
        }
    }

    // The growth target, measured in pairs: each pool and variant in clusters 10x apart.
    let mut growth = Vec::new();
    for &shape in &shapes {
        let bigger = Shape {
            cluster: shape.cluster * 10,
            ..shape
        };
        if !shapes.contains(&bigger) {
            continue;
        }
        eprintln!(
            "paired: pool {} ({}) in clusters {} and {}",
            shape.pool,
            shape.variant.name(),
            shape.cluster,
            bigger.cluster
        );
        let (small, big) = (
            cluster::generate(shape, &defaults),
            cluster::generate(bigger, &defaults),
        );
        match paired_growth(&policy, (&small, &big), &settings) {
            Ok(g) => growth.extend(g),
            Err(e) => {
                eprintln!("error: {e:#}");
                return Ok(false);
            }
        }
    }

    println!("# tenant-reservation-policy admission benchmark\n");
    println!(
        "- policy: `{}`, {} bytes; compiled in {} (wasmtime, cranelift), instantiated in {} median",
        path.display(),
        wasm.len(),
        Human(policy.compile),
        Human(instantiate.median)
    );
    println!(
        "- machine: {} ({} CPUs); load average at start {load_start}",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "- guest: the replay-runner's host engine (wapc + wasmtime-provider, epoch interruption on), one long-lived instance; host: policy-server's list calls modelled (a reflector per key, objects cloned and serialised on every call); each series {} to {} requests ({} s budget) after {} warm-up, {} cold runs",
        settings.min_iterations,
        settings.iterations,
        args.series_seconds,
        settings.warmup,
        settings.cold_runs
    );
    print_table(&rows);
    print_breakdown(&rows);
    if !sweeps.is_empty() {
        print_sweeps(&sweeps);
    }
    if !growth.is_empty() {
        print_growth(&growth);
    }
    let targets = print_targets(&rows, &growth);
    let load_end = load_average();
    println!(
        "\nLoad average at end: {load_end}. Bench wall time: {}.",
        Human(wall.elapsed())
    );
    if let Some(svg) = &args.svg {
        let subtitle = format!(
            "guest (policy.wasm, wasmtime) + host (policy-server's reflector model), median, CREATE; {}; load {load_start} → {load_end}",
            cpu_model()
        );
        std::fs::write(svg, plot_rows(&rows, &subtitle))
            .with_context(|| format!("writing {}", svg.display()))?;
        println!("\nPlot: `{}`.", svg.display());
    }
    let _ = targets;
    Ok(true)
}

fn print_table(rows: &[Row]) {
    println!("\n## Admission cost by cluster and pool\n");
    println!(
        "| cluster | pool | values | op | host calls | answer bytes | reflectors opened (cold): initial LISTs | guest median | guest p99 | host median | guest + host median | cold first request, modelled (host part; no API server, no watch sync: see `make bench-cluster`) | native policy | floor | policy / floor |"
    );
    println!("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {}: {} in {} pages | {} | {} | {} | **{}** | {} ({}) | {} | {} | {:.2} |",
            r.shape.cluster,
            r.shape.pool,
            r.shape.variant.name(),
            r.op.name(),
            r.host_calls,
            Bytes(r.answer_bytes),
            r.opened,
            Bytes(r.list_bytes),
            r.list_pages,
            Human(r.guest.median),
            Human(r.guest.p99),
            Human(r.host.median),
            Human(r.total.median),
            Human(r.cold.median),
            Human(r.cold_host.median),
            Human(r.native.median),
            Human(r.floor.median),
            r.ratio()
        );
    }
    println!(
        "\nguest = the `validate` call less the host's time in it (waPC copies and the host-call dispatch stay in the guest's share); host = the modelled policy-server work for the request's calls; cold = a fresh instance on a host without reflectors (instantiate + validate; its host part opens the reflectors: decode, strip and prune the initial LISTs; the API server's own work and the network are not in it); native policy = the same policy compiled for this machine, answered from memory; floor = natively deserialising the same answers into `serde_json::Value`; policy / floor = guest median / floor median."
    );
}

/// Where a request's answer bytes come from, for the smallest pool of each cluster.
fn print_breakdown(rows: &[Row]) {
    let Some(smallest) = rows.iter().map(|r| r.shape.pool).min() else {
        return;
    };
    println!(
        "\n## The answers of one request, by lookup (pool of {smallest}, same values, CREATE)\n"
    );
    println!("| cluster | lookup | calls | bytes |");
    println!("|---:|---|---:|---:|");
    for r in rows.iter().filter(|r| {
        r.shape.pool == smallest && r.shape.variant == Variant::Same && r.op == Op::Create
    }) {
        for (source, (calls, bytes)) in &r.by_source {
            println!(
                "| {} | {} | {calls} | {} |",
                r.shape.cluster,
                source.name(),
                Bytes(*bytes)
            );
        }
    }
}

fn print_sweeps(sweeps: &[Sweep]) {
    println!(
        "\n## Reflectors of one policy-server replica after a write in every tenant's namespace\n"
    );
    println!(
        "| cluster | tenants (bounded; levels 1/2/3) | namespaces in a pool | reflectors | by name: tenants | namespaces listed | definitions + schemas + instance types | objects held | held (pruned JSON) | initial LISTs (API server → host) | LIST pages |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in sweeps {
        let r = &s.reflectors;
        let n = |src| r.by_source.get(&src).copied().unwrap_or(0);
        println!(
            "| {} | {} ({}; {}/{}/{}) | {} | **{}** | {} | {} | {} + {} + {} | {} | {} | {} | {} |",
            s.cluster,
            s.tenants,
            s.bounded,
            s.levels[0],
            s.levels[1],
            s.levels[2],
            s.pooled_namespaces,
            r.count,
            n(Source::Tenant),
            n(Source::Applications),
            n(Source::Definitions),
            n(Source::Schema),
            n(Source::InstanceTypes),
            r.objects,
            Bytes(r.held_bytes),
            Bytes(r.list_bytes),
            r.list_pages
        );
    }
    println!(
        "\nOne CREATE of a small VM in every tenant's namespace (the root's included), natively, on one fresh host; the sweep took {}. Each reflector is one initial LIST and then one WATCH held open for the replica's life, per replica.",
        sweeps
            .iter()
            .map(|s| format!("{} for {}", Human(s.took), s.cluster))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

fn find(rows: &[Row], cluster: usize, pool: usize, variant: Variant) -> Vec<&Row> {
    rows.iter()
        .filter(|r| {
            r.shape.cluster == cluster && r.shape.pool == pool && r.shape.variant == variant
        })
        .collect()
}

/// Prints each target with its measured value; returns whether all that were measured hold.
fn print_targets(rows: &[Row], paired: &[Growth]) -> bool {
    println!("\n## Targets\n");
    let mut all = true;
    let mut line = |name: &str, measured: Option<(String, bool)>| match measured {
        Some((value, pass)) => {
            all &= pass;
            println!("- {} **{name}**: {value}", verdict(pass));
        }
        None => println!("- not measured **{name}** (its rows were not run)"),
    };
    let worst = |rs: &[&Row]| {
        rs.iter()
            .map(|r| r.total.median)
            .max()
            .map(|d| (d, rs.iter().map(|r| r.answer_bytes).max().unwrap_or(0)))
    };
    let t1 = find(rows, 10_000, 20, Variant::Same);
    line(
        "a 20-application pool in a 10,000-application cluster: guest + host median ≤ 1 ms",
        worst(&t1).map(|(d, _)| {
            (
                format!("{} (worst of CREATE and UPDATE)", Human(d)),
                ms(d) <= 1.0,
            )
        }),
    );
    line(
        "… and its answers ≤ 64 KiB",
        worst(&t1).map(|(_, b)| (format!("{}", Bytes(b)), b <= 64 * 1024)),
    );
    // Growth with the cluster: from the paired measurement when it ran, else from the
    // series of the main table (which also carry the drift between series).
    let mut growth: Option<(f64, String)> = None;
    let mut worse = |ratio: f64, what: String| {
        if growth.as_ref().is_none_or(|(g, _)| ratio > *g) {
            growth = Some((ratio, what));
        }
    };
    for g in paired {
        worse(
            g.ratio(),
            format!(
                "pool {} ({}, {}) from cluster {} to {}, timed in turn",
                g.pool,
                g.variant.name(),
                g.op.name(),
                g.small,
                g.big
            ),
        );
    }
    if paired.is_empty() {
        for r in rows {
            if let Some(big) = rows.iter().find(|b| {
                b.shape.cluster == r.shape.cluster * 10
                    && b.shape.pool == r.shape.pool
                    && b.shape.variant == r.shape.variant
                    && b.op == r.op
            }) {
                worse(
                    secs(big.total.median) / secs(r.total.median),
                    format!(
                        "pool {} ({}, {}) from cluster {} to {}, separate series",
                        r.shape.pool,
                        r.shape.variant.name(),
                        r.op.name(),
                        r.shape.cluster,
                        big.shape.cluster
                    ),
                );
            }
        }
    }
    line(
        "a fixed pool's cost grows ≤ 1.2× when its cluster grows 10×",
        growth.map(|(g, at)| (format!("at most {g:.2}× ({at})"), g <= 1.2)),
    );
    let distinct: Vec<&Row> = rows
        .iter()
        .filter(|r| r.shape.pool == 1000 && r.shape.variant == Variant::Distinct)
        .collect();
    line(
        "a 1,000-application pool with every value distinct: ≤ 5 ms",
        worst(&distinct).map(|(d, _)| {
            (
                format!("{} (worst over clusters and operations)", Human(d)),
                ms(d) <= 5.0,
            )
        }),
    );
    for variant in [Variant::Same, Variant::Distinct] {
        let big: Vec<&Row> = rows
            .iter()
            .filter(|r| r.shape.pool == 10_000 && r.shape.variant == variant)
            .collect();
        line(
            &format!(
                "a 10,000-application pool ({} values): ≤ 25 ms",
                variant.name()
            ),
            worst(&big).map(|(d, _)| {
                (
                    format!("{} (worst over clusters and operations)", Human(d)),
                    ms(d) <= 25.0,
                )
            }),
        );
    }
    let over: Vec<&Row> = rows.iter().filter(|r| r.shape.pool >= 100).collect();
    let max_ratio = over.iter().max_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    line(
        "policy / deserialisation floor ≤ 1 from 100 applications on",
        max_ratio.map(|r| {
            (
                format!(
                    "at most {:.2} (cluster {}, pool {}, {}, {})",
                    r.ratio(),
                    r.shape.cluster,
                    r.shape.pool,
                    r.shape.variant.name(),
                    r.op.name()
                ),
                r.ratio() <= 1.0,
            )
        }),
    );
    all
}

/// The plot: median guest + host against pool size (one line per cluster) and against
/// cluster size (one line per pool), CREATE; dashed: distinct values.
fn plot_rows(rows: &[Row], subtitle: &str) -> String {
    let create: Vec<&Row> = rows.iter().filter(|r| r.op == Op::Create).collect();
    let mut clusters: Vec<usize> = create.iter().map(|r| r.shape.cluster).collect();
    clusters.sort_unstable();
    clusters.dedup();
    let mut pools: Vec<usize> = create.iter().map(|r| r.shape.pool).collect();
    pools.sort_unstable();
    pools.dedup();
    let variants = [Variant::Same, Variant::Distinct];
    let mut by_pool = Vec::new();
    let mut by_cluster = Vec::new();
    for (i, &cluster) in clusters.iter().enumerate() {
        for variant in variants {
            let points: Vec<(f64, f64)> = create
                .iter()
                .filter(|r| r.shape.cluster == cluster && r.shape.variant == variant)
                .map(|r| (r.shape.pool as f64, ms(r.total.median)))
                .collect();
            if !points.is_empty() {
                by_pool.push(plot::Series {
                    label: format!(
                        "cluster {}, {}",
                        plot::short(cluster as f64),
                        variant.name()
                    ),
                    color: plot::COLORS[i % plot::COLORS.len()],
                    dashed: variant == Variant::Distinct,
                    points,
                });
            }
        }
    }
    for (i, &pool) in pools.iter().enumerate() {
        for variant in variants {
            let points: Vec<(f64, f64)> = create
                .iter()
                .filter(|r| r.shape.pool == pool && r.shape.variant == variant)
                .map(|r| (r.shape.cluster as f64, ms(r.total.median)))
                .collect();
            if !points.is_empty() {
                by_cluster.push(plot::Series {
                    label: format!("pool {}, {}", plot::short(pool as f64), variant.name()),
                    color: plot::COLORS[(i + 3) % plot::COLORS.len()],
                    dashed: variant == Variant::Distinct,
                    points,
                });
            }
        }
    }
    let targets = vec![
        (1.0, "1 ms: 20 apps".to_string()),
        (5.0, "5 ms: 1,000 distinct".to_string()),
        (25.0, "25 ms: 10,000".to_string()),
    ];
    plot::render(
        "Admission cost: guest + host median (ms), log-log",
        subtitle,
        &[
            plot::Panel {
                title: "against the pool's size".into(),
                x_label: "applications in the pool".into(),
                y_label: "ms".into(),
                series: by_pool,
                targets: targets.clone(),
            },
            plot::Panel {
                title: "against the cluster's size".into(),
                x_label: "applications in the cluster".into(),
                y_label: "ms".into(),
                series: by_cluster,
                targets,
            },
        ],
    )
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
