//! Pool summaries: a `PoolReservation` holds enough of each namespace that every pool, summed
//! from it, is the pool the walk reads from the lists: the same members, carve-outs,
//! reservations, holders, largest holders, pending modules and problems.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::Value;
use tenant_reservation_policy::cluster::Kubernetes;
use tenant_reservation_policy::ledger::ledger;
use tenant_reservation_policy::settings::Settings;
use tenant_reservation_policy::summary::build::summaries;
use tenant_reservation_policy::summary::{KIND, PoolReservation, fingerprint};
use test_kit::Fixture;

use crate::ledger::agreement::{Case, case, generated_cluster, scenarios};

const RENEWED: &str = "2026-12-07T21:00:00Z";

/// Every pool line of the cluster's ledger against the same pool summed from its summary,
/// after a round trip through JSON (as the API server stores it). Returns the lines compared.
fn agree(settings: &Value, k8s: &dyn Kubernetes) -> Result<usize, String> {
    // Settings a policy refuses, or a cluster it cannot read, have no ledger to compare.
    let Ok(settings) = serde_json::from_value::<Settings>(settings.clone()) else {
        return Ok(0);
    };
    let Ok(ledger) = ledger(&settings, k8s, usize::MAX) else {
        return Ok(0);
    };
    let stored = summaries(&settings, k8s, RENEWED.parse().unwrap()).map_err(|e| e.to_string())?;
    let text = serde_json::to_string(&stored).unwrap();
    let stored: Vec<PoolReservation> = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    for line in &ledger.pools {
        let s = &line.standing;
        let summary = stored
            .iter()
            .find(|p| p.metadata.name == s.pool)
            .ok_or_else(|| format!("no {KIND} for pool {}", s.pool))?;
        let status = summary.status.as_ref().unwrap();
        if summary.metadata.namespace != s.pool || status.settings != fingerprint::of(&settings) {
            return Err(format!("{KIND} {}: misplaced or unmarked", s.pool));
        }
        let summed = status
            .sum_pool(&s.pool, &s.key)
            .map_err(|e| format!("{} {}: {e}", s.pool, s.key))?;
        let what = format!("pool {} key {}", s.pool, s.key);
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        let check = |same: bool, field: &str, ours: String, walk: String| {
            if same {
                Ok(())
            } else {
                Err(format!("{what}: {field}: summed {ours}, walked {walk}"))
            }
        };
        check(
            sorted(&summed.members) == sorted(&line.namespaces),
            "members",
            format!("{:?}", summed.members),
            format!("{:?}", line.namespaces),
        )?;
        check(
            summed.carved == s.carved,
            "carved",
            format!("{:?}", summed.carved),
            format!("{:?}", s.carved),
        )?;
        check(
            summed.usage.of(&s.key) == (s.reserved, s.holders),
            "reserved",
            format!("{:?}", summed.usage.of(&s.key)),
            format!("{:?}", (s.reserved, s.holders)),
        )?;
        let shown = s.largest.len().min(3);
        check(
            summed.usage.largest(&s.key) == &s.largest[..shown],
            "largest",
            format!("{:?}", summed.usage.largest(&s.key)),
            format!("{:?}", &s.largest[..shown]),
        )?;
        let pending: Vec<String> = summed.usage.pending.iter().cloned().collect();
        check(
            pending == line.pending,
            "pending",
            format!("{pending:?}"),
            format!("{:?}", line.pending),
        )?;
        let mut problems = summed.unevaluable.clone();
        problems.extend(summed.unevaluable_modules.iter().cloned());
        problems.extend(summed.unreadable.iter().cloned());
        check(
            sorted(&problems) == sorted(&line.unevaluable),
            "unevaluable",
            format!("{:?}", sorted(&problems)),
            format!("{:?}", sorted(&line.unevaluable)),
        )?;
        check(
            summed.unheld.is_empty(),
            "unheld",
            format!("{:?}", summed.unheld),
            "[]".into(),
        )?;
    }
    let pools: BTreeSet<&str> = ledger
        .pools
        .iter()
        .map(|l| l.standing.pool.as_str())
        .collect();
    if stored.len() != pools.len() {
        return Err(format!(
            "{} summaries for {} pools",
            stored.len(),
            pools.len()
        ));
    }
    Ok(ledger.pools.len())
}

#[test]
fn every_scenario_pool_is_summed_as_the_walk_reads_it() {
    let (cases, _) = scenarios();
    let mut lines = 0;
    for (
        name,
        Case {
            objects, settings, ..
        },
    ) in &cases
    {
        lines += agree(settings, &Fixture::new(objects.clone()))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    eprintln!("{} scenarios, {lines} pool lines compared", cases.len());
    assert!(lines >= 100, "{lines} pool lines");
}

#[test]
fn every_generated_pool_is_summed_as_the_walk_reads_it() {
    let config = ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let lines = std::cell::Cell::new(0);
    runner
        .run(&case(), |case| {
            let k8s = generated_cluster(case.objects.clone());
            let n = agree(&case.settings, &k8s).map_err(TestCaseError::fail)?;
            lines.set(lines.get() + n);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("a summary disagrees with the walk: {e}"));
    eprintln!("generated: {} pool lines compared", lines.get());
    assert!(lines.get() >= 300, "{} pool lines", lines.get());
}
