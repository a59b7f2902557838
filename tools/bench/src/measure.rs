//! The timed runs: one series per cluster and operation ([`measure`]: cold, warm guest and
//! host, native, floor, interleaved) and the growth pairs ([`paired_growth`]: a fixed pool in
//! two clusters 10× apart, request by request in turn).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use tenant_reservation_policy::cluster::Source;
use tenant_reservation_policy::validate_payload;

use crate::cluster::{Cluster, Shape, Variant};
use crate::host::{self, ApiServer, Frozen, HostModel, RequestStats, Served, SharedHost};
use crate::instance::{Instance, Policy};
use crate::stats::{Human, Summary};

/// The request timed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Create,
    Update,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "CREATE",
            Op::Update => "UPDATE",
        }
    }

    pub fn payload(self, c: &Cluster) -> &[u8] {
        match self {
            Op::Create => &c.create,
            Op::Update => &c.update,
        }
    }
}

/// One row of the main table: a cluster shape and an operation, measured.
pub struct Row {
    pub shape: Shape,
    pub op: Op,
    pub samples: usize,
    pub host_calls: usize,
    pub answer_bytes: usize,
    pub by_source: BTreeMap<Option<Source>, (usize, usize)>,
    /// Reflectors the cold request opened, and what their LISTs cost the API server.
    pub opened: usize,
    pub list_bytes: usize,
    pub list_pages: usize,
    pub guest: Summary,
    pub host: Summary,
    pub total: Summary,
    pub cold: Summary,
    pub cold_host: Summary,
    pub native: Summary,
    pub floor: Summary,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        secs(self.guest.median) / secs(self.floor.median)
    }
}

pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Whether a `validate` response admits the request; the message otherwise.
pub fn admitted(response: &[u8]) -> Result<()> {
    let v: Value = serde_json::from_slice(response).context("the validate response")?;
    if v["accepted"] == Value::Bool(true) {
        Ok(())
    } else {
        bail!("the request was not admitted: {}", v["message"])
    }
}

/// The floor: deserialising the answers one request was served into `serde_json::Value`,
/// natively.
pub fn floor_once(answers: &[Arc<Vec<u8>>]) -> Duration {
    let start = Instant::now();
    for bytes in answers {
        let v: Value = serde_json::from_slice(bytes).expect("answers are JSON");
        black_box(v);
    }
    start.elapsed()
}

/// One `validate` on `instance` served by `host`: the whole time, and the host's share.
pub fn timed_validate(
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

pub fn shared(api: &Arc<ApiServer>) -> SharedHost {
    Arc::new(Mutex::new(HostModel::new(api.clone())))
}

/// How long each series runs.
pub struct Settings {
    pub iterations: usize,
    pub min_iterations: usize,
    pub series: Duration,
    pub warmup: usize,
    pub cold_runs: usize,
}

/// The rows of one generated cluster: CREATE and UPDATE. `Err` on a refusal or on host
/// calls that vary.
pub fn measure(
    policy: &Policy,
    c: &Cluster,
    api: &Arc<ApiServer>,
    s: &Settings,
) -> Result<Vec<Row>> {
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
pub struct Growth {
    pub pool: usize,
    pub variant: Variant,
    pub op: Op,
    pub small: usize,
    pub big: usize,
    /// Guest + host medians, small cluster then big.
    pub medians: (Duration, Duration),
    /// Host calls and answer bytes, small cluster then big.
    pub calls: (usize, usize),
    pub bytes: (usize, usize),
    pub samples: usize,
}

impl Growth {
    pub fn ratio(&self) -> f64 {
        secs(self.medians.1) / secs(self.medians.0)
    }
}

pub fn paired_growth(
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
