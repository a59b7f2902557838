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
        let mut problems = summed.unreadable.clone();
        for p in summed.problems.values() {
            problems.extend(p.applications.iter().cloned());
            problems.extend(p.modules.iter().cloned());
        }
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

/// 300 generated cases from a fixed seed: the same on every run.
fn generated_runner() -> TestRunner {
    let config = ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

#[test]
fn every_generated_pool_is_summed_as_the_walk_reads_it() {
    let mut runner = generated_runner();
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

// ---- a write reads its pools from their summaries ---------------------------------------

pub(crate) mod admission {
    use k8s_openapi::jiff::SignedDuration;
    use serde_json::{Value, json};
    use tenant_reservation_policy::settings::Settings;
    use tenant_reservation_policy::summary::build::summaries;
    use tenant_reservation_policy::summary::freshness;
    use tenant_reservation_policy::{Verdict, validate_payload};
    use test_kit::Fixture;

    use crate::ledger::agreement::Case;

    /// The cluster's summaries as objects, renewed `age` ago (negative: ahead).
    pub fn summary_objects(settings: &Value, k8s: &Fixture, age: i64) -> Option<Vec<Value>> {
        let settings: Settings = serde_json::from_value(settings.clone()).ok()?;
        let at = freshness::now() - SignedDuration::from_secs(age);
        let stored = summaries(&settings, k8s, at).ok()?;
        Some(
            stored
                .iter()
                .map(|s| serde_json::to_value(s).unwrap())
                .collect(),
        )
    }

    /// `settings` with `poolSummary.mode` set.
    pub fn mode(settings: &Value, mode: &str) -> Value {
        let mut settings = settings.clone();
        settings["poolSummary"] = json!({"mode": mode});
        settings
    }

    pub fn decide(request: &Value, settings: &Value, k8s: &Fixture) -> Verdict {
        let payload = serde_json::to_vec(&json!({"request": request, "settings": settings}))
            .expect("JSON serialises");
        validate_payload(&payload, k8s)
    }

    /// The verdict of `case` walking its pools, and reading them from fresh summaries (under
    /// `required`, so that a summary not read refuses): the same in every field. Returns how
    /// many namespace lists the summaries saved, `None` when the case has no summaries
    /// (settings refused, a cluster the ledger cannot read).
    pub fn same_verdict(
        case: &Case,
        fixture: &dyn Fn(Vec<Value>) -> Fixture,
    ) -> Result<Option<Compared>, String> {
        let Some(stored) = summary_objects(&case.settings, &fixture(case.objects.clone()), 0)
        else {
            return Ok(None);
        };
        let walking = fixture(case.objects.clone());
        let walked = decide(&case.request, &case.settings, &walking);
        let mut objects = case.objects.clone();
        objects.extend(stored);
        let reading = fixture(objects);
        let read = decide(&case.request, &mode(&case.settings, "required"), &reading);
        let show = |v: &Verdict| {
            format!(
                "allowed {} message {:?} warnings {:?} records {:?}",
                v.allowed, v.message, v.warnings, v.records
            )
        };
        if (
            walked.allowed,
            &walked.message,
            &walked.warnings,
            &walked.records,
        ) != (read.allowed, &read.message, &read.warnings, &read.records)
        {
            return Err(format!(
                "walked: {}\nsummed: {}",
                show(&walked),
                show(&read)
            ));
        }
        let lists = |k8s: &Fixture| {
            k8s.calls()
                .iter()
                .filter(|l| {
                    matches!(
                        l,
                        tenant_reservation_policy::cluster::Lookup::Applications { .. }
                    )
                })
                .count()
        };
        Ok(Some(Compared {
            read: !reading.summary_reads().is_empty(),
            lists_saved: lists(&walking).saturating_sub(lists(&reading)),
        }))
    }

    /// What one write compared: whether it read a summary, and how many lists that saved.
    #[derive(Default, Debug)]
    pub struct Compared {
        pub read: bool,
        pub lists_saved: usize,
    }
}

#[test]
fn every_scenario_write_gets_the_walks_verdict_from_summaries() {
    let (cases, _) = scenarios();
    let (mut compared, mut read, mut saved) = (0, 0, 0);
    for (name, case) in &cases {
        let fixture = |objects| Fixture::new(objects);
        let outcome = admission::same_verdict(case, &fixture);
        if let Some(c) = outcome.unwrap_or_else(|e| panic!("{name}:\n{e}")) {
            compared += 1;
            read += usize::from(c.read);
            saved += c.lists_saved;
        }
    }
    eprintln!(
        "{compared} scenario writes compared, {read} read from summaries, {saved} namespace lists saved"
    );
    assert!(
        compared >= 40 && read >= 25,
        "{compared} compared, {read} read"
    );
}

#[test]
fn every_generated_write_gets_the_walks_verdict_from_summaries() {
    let mut runner = generated_runner();
    let counts = std::cell::RefCell::new((0, 0, 0));
    runner
        .run(&case(), |case| {
            let outcome = admission::same_verdict(&case, &generated_cluster);
            if let Some(c) = outcome.map_err(TestCaseError::fail)? {
                let mut counts = counts.borrow_mut();
                counts.0 += 1;
                counts.1 += usize::from(c.read);
                counts.2 += c.lists_saved;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("summaries and the walk disagree: {e}"));
    let (compared, read, saved) = counts.into_inner();
    eprintln!(
        "generated: {compared} writes compared, {read} read from summaries, {saved} namespace lists saved"
    );
    assert!(
        compared >= 200 && read >= 100 && saved >= 50,
        "{compared} compared, {read} read, {saved} saved"
    );
}

// ---- when a summary is not read ----------------------------------------------------------

mod trust {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::admission::{decide, mode, summary_objects};
    use crate::common::*;

    /// tenant-foo (16 cpu, 32Gi) with its unbounded child dev, each holding one VM: 4Gi in
    /// tenant-foo, 8Gi in tenant-foo-dev.
    fn objects() -> Vec<Value> {
        vec![
            tenant("tenant-root", "root", json!({})),
            tenant("tenant-root", "foo", json!({"cpu": "16", "memory": "32Gi"})),
            tenant("tenant-foo", "dev", json!({})),
            application(
                "VMInstance",
                "tenant-foo",
                "vm1",
                json!({"instanceType": "u1.medium"}),
            ),
            application(
                "VMInstance",
                "tenant-foo-dev",
                "vm2",
                json!({"instanceType": "", "resources": {"cpu": 2, "memory": "8Gi"}}),
            ),
        ]
    }

    /// `objects` with their summaries (computed from `summarized`, renewed `age` seconds ago).
    fn with_summaries(objects: Vec<Value>, summarized: Vec<Value>, age: i64) -> Fixture {
        let stored = summary_objects(&json!({}), &cluster(summarized), age).unwrap();
        let mut all = objects;
        all.extend(stored);
        cluster(all)
    }

    /// A CREATE of a VM of `memory` in tenant-foo.
    fn request(memory: &str) -> Value {
        let spec = json!({"instanceType": "", "resources": {"cpu": 1, "memory": memory}});
        let payload = payload(
            "CREATE",
            "VMInstance",
            "tenant-foo",
            "new",
            spec,
            None,
            json!({}),
        );
        serde_json::from_slice::<Value>(&payload).unwrap()["request"].clone()
    }

    fn namespaces_listed(k8s: &Fixture) -> Vec<String> {
        k8s.calls()
            .into_iter()
            .filter_map(|l| match l {
                Lookup::Applications { namespace } => Some(namespace),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_fresh_summary_stands_in_for_the_other_namespaces() {
        let k8s = with_summaries(objects(), objects(), 0);
        let verdict = decide(&request("20Gi"), &mode(&json!({}), "required"), &k8s);
        assert!(verdict.allowed, "{verdict:?}");
        assert_eq!(namespaces_listed(&k8s), ["tenant-foo"]);
        assert_eq!(k8s.summary_reads(), ["tenant-foo"]);
        let verdict = decide(&request("21Gi"), &mode(&json!({}), "required"), &k8s);
        assert_eq!(
            message(&verdict),
            "VMInstance tenant-foo/new: memory 21Gi exceeds pool tenant-foo by 1Gi: budget 32Gi, reserved 12Gi by 2 applications (largest: VMInstance tenant-foo-dev/vm2 8Gi, VMInstance tenant-foo/vm1 4Gi), available 20Gi"
        );
        // Off, the same write walks the pool and reads no summary.
        let walking = with_summaries(objects(), objects(), 0);
        let walked = decide(&request("21Gi"), &json!({}), &walking);
        assert_eq!(walked.message, verdict.message);
        assert_eq!(
            namespaces_listed(&walking),
            ["tenant-foo", "tenant-foo-dev"]
        );
        assert!(walking.summary_reads().is_empty());
    }

    #[rstest]
    #[case::stale(
        60,
        " ago, past the 30s a summary may be old (is its controller running?)"
    )]
    #[case::ahead(-60, " in the future, past the 10s of clock skew allowed")]
    fn an_untrusted_summary_is_walked_or_refused(#[case] age: i64, #[case] why: &str) {
        let k8s = with_summaries(objects(), objects(), age);
        let walked = decide(&request("21Gi"), &json!({}), &k8s);
        let preferred = decide(&request("21Gi"), &mode(&json!({}), "preferred"), &k8s);
        assert_eq!(preferred.message, walked.message);
        // The age is measured when the write runs, to the millisecond.
        let warning = &preferred.warnings[0];
        assert!(
            warning.starts_with(
                "pool tenant-foo is read from its lists: PoolReservation tenant-foo renewed "
            ) && warning.ends_with(why),
            "{warning}"
        );
        let required = decide(&request("1Gi"), &mode(&json!({}), "required"), &k8s);
        assert!(!required.allowed);
        assert!(message(&required).starts_with(
            "VMInstance tenant-foo/new: pool tenant-foo cannot be checked (poolSummary.mode: required): PoolReservation tenant-foo renewed "
        ), "{}", message(&required));
    }

    /// The controller died when tenant-foo-dev held 8Gi; since, 16Gi more were stored there.
    /// Fresh, the summary admits what the lists refuse (the lag the threat model bounds);
    /// stale, it is not read, and the write is refused as by the lists.
    #[test]
    fn a_stale_summary_never_admits_what_the_lists_refuse() {
        let mut now = objects();
        now.push(application(
            "VMInstance",
            "tenant-foo-dev",
            "vm3",
            json!({"instanceType": "", "resources": {"cpu": 1, "memory": "16Gi"}}),
        ));
        let settings = mode(&json!({}), "preferred");
        let fresh = with_summaries(now.clone(), objects(), 0);
        assert!(decide(&request("16Gi"), &settings, &fresh).allowed);
        let stale = with_summaries(now.clone(), objects(), 31);
        let verdict = decide(&request("16Gi"), &settings, &stale);
        assert!(!verdict.allowed);
        assert!(
            message(&verdict).contains("reserved 28Gi by 3 applications"),
            "{}",
            message(&verdict)
        );
    }

    #[rstest]
    #[case::missing(
        None,
        "PoolReservation tenant-foo cannot be read: Cannot find reservations.cozystack.io/v1alpha1/PoolReservation named 'tenant-foo' inside of namespace 'Some(\"tenant-foo\")'"
    )]
    #[case::other_settings(
        Some(json!({"exemptKinds": ["VMDisk"]})),
        "PoolReservation tenant-foo was computed under other settings or another policy version"
    )]
    fn a_summary_that_is_not_this_policys_is_not_read(
        #[case] computed_under: Option<Value>,
        #[case] why: &str,
    ) {
        let mut all = objects();
        if let Some(settings) = computed_under {
            all.extend(summary_objects(&settings, &cluster(objects()), 0).unwrap());
        }
        let k8s = cluster(all);
        let preferred = decide(&request("1Gi"), &mode(&json!({}), "preferred"), &k8s);
        assert!(preferred.allowed);
        assert!(
            preferred.warnings[0].contains(why),
            "{:?}",
            preferred.warnings
        );
        let required = decide(&request("1Gi"), &mode(&json!({}), "required"), &k8s);
        assert!(message(&required).contains(why), "{}", message(&required));
    }

    /// A tenant created in the namespace written to after the summary: its namespace is not
    /// in the summary, so the pool is walked.
    #[test]
    fn a_summary_older_than_a_tenant_is_walked() {
        let mut now = objects();
        now.push(tenant("tenant-foo", "qa", json!({})));
        now.push(application(
            "VMInstance",
            "tenant-foo-qa",
            "vm4",
            json!({"instanceType": "", "resources": {"cpu": 1, "memory": "20Gi"}}),
        ));
        let k8s = with_summaries(now, objects(), 0);
        let verdict = decide(&request("1Gi"), &mode(&json!({}), "preferred"), &k8s);
        assert!(!verdict.allowed, "the walk counts qa's 20Gi");
        assert_eq!(
            verdict.warnings[0],
            "pool tenant-foo is read from its lists: PoolReservation tenant-foo does not hold namespace tenant-foo-qa of pool tenant-foo (cpu) yet"
        );
    }

    /// Under policyServerUser, a summary is read only with `get` on PoolReservations.
    #[test]
    fn a_summary_policy_server_may_not_get_is_named() {
        let k8s = with_summaries(objects(), objects(), 0)
            .denying("get poolreservations", "RBAC: no rule");
        let settings = json!({
            "policyServerUser": "system:serviceaccount:kubewarden:ps",
            "poolSummary": {"mode": "preferred"},
        });
        let verdict = decide(&request("1Gi"), &settings, &k8s);
        assert!(verdict.allowed);
        assert_eq!(
            verdict.warnings[0],
            "pool tenant-foo is read from its lists: PoolReservation tenant-foo cannot be read: policy-server's user system:serviceaccount:kubewarden:ps may not get poolreservations.reservations.cozystack.io (RBAC: no rule); grant it (deploy/policyserver.yaml)"
        );
        assert!(
            k8s.summary_reads().is_empty(),
            "nothing is asked of a refused resource"
        );
    }
}
