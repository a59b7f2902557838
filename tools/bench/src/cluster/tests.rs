use super::*;
use std::collections::{BTreeSet, HashSet};
use tenant_reservation_policy::cluster::{Lookup, Source, parse_applications};
use tenant_reservation_policy::validate_payload;

fn shape(cluster: usize, pool: usize, variant: Variant) -> Shape {
    Shape {
        cluster,
        pool,
        variant,
    }
}

#[test]
fn the_cluster_holds_its_applications_in_trees_one_to_three_deep() {
    let d = Defaults::load();
    for (cluster, pool) in [(1000, 20), (1000, 1000), (3000, 400)] {
        let c = generate(shape(cluster, pool, Variant::Same), &d);
        assert_eq!(c.apps(), cluster);
        let hrs = c
            .objects
            .iter()
            .filter(|o| o["kind"] == "HelmRelease")
            .count();
        assert_eq!(hrs, cluster + c.tenants.len());
        assert!(c.tenants.iter().all(|t| t.apps <= APPS_PER_TENANT));
        assert!(c.tenants.iter().all(|t| t.level <= 3));
        // Every namespace is owned by exactly one tenant, named as the chart names it.
        let owned: HashSet<&str> = c.tenants.iter().map(|t| t.owns.as_str()).collect();
        assert_eq!(owned.len(), c.tenants.len());
        assert!(c.tenants[1..].iter().all(|t| !t.name.contains('-')));
        assert!(
            c.tenants[1..]
                .iter()
                .all(|t| owned.contains(t.namespace.as_str()))
        );
        let pool_apps: usize = c
            .tenants
            .iter()
            .filter(|t| matches!(t.role, Role::Pool | Role::Member))
            .map(|t| t.apps)
            .sum();
        assert_eq!(pool_apps, pool);
        assert_eq!(c.pool_mix.values().sum::<usize>(), pool);
    }
    let c = generate(shape(10_000, 1000, Variant::Same), &d);
    assert_eq!(c.levels().iter().filter(|&&n| n > 0).count(), 3);
    let background: Vec<&TenantSpec> = c
        .tenants
        .iter()
        .filter(|t| t.role == Role::Background)
        .collect();
    assert!(background.iter().any(|t| t.bounded && t.level == 1));
    assert!(background.iter().any(|t| t.bounded && t.level == 2));
    assert!(background.iter().any(|t| !t.bounded));
    assert_eq!(c.tenant_count(), 500);
}

#[test]
fn the_pool_is_the_same_objects_in_every_cluster() {
    let d = Defaults::load();
    let pool_objects = |cluster| {
        let c = generate(shape(cluster, 100, Variant::Distinct), &d);
        let mut v: Vec<String> = c
            .objects
            .iter()
            .filter(|o| {
                o["metadata"]["namespace"]
                    .as_str()
                    .is_some_and(|ns| c.pool_namespaces.contains(ns))
            })
            .map(|o| o.to_string())
            .collect();
        v.sort();
        (v, c.create, c.update)
    };
    let small = pool_objects(1000);
    assert_eq!(small.0.len(), 100 + 5); // 4 members and the carve-out live there too
    assert_eq!(small, pool_objects(5000));
}

/// The policy's own walk: the namespaces it lists one by one are the pool's (all of them,
/// holding exactly `pool` applications, up to `NAMESPACE_LISTS`; when more, fewer than that,
/// then one list of every application); the carve-out is
/// never listed; both requests are admitted.
#[test]
fn the_policys_walk_reads_exactly_the_pool() {
    let d = Defaults::load();
    for (cluster, pool) in [(1000, 20), (2000, 1000), (1000, 1000), (3000, 2000)] {
        for variant in [Variant::Same, Variant::Distinct] {
            let c = generate(shape(cluster, pool, variant), &d);
            let fixture = test_kit::Fixture::new(c.objects.clone());
            for payload in [&c.create, &c.update] {
                fixture.forget_calls();
                let verdict = validate_payload(payload, &fixture);
                assert!(verdict.allowed, "{:?}", verdict.message);
                let listed: BTreeSet<String> = fixture
                    .calls()
                    .into_iter()
                    .filter_map(|l| match l {
                        Lookup::Applications { namespace } => Some(namespace),
                        _ => None,
                    })
                    .collect();
                assert!(!listed.contains(CARVE_OUT_NAMESPACE));
                // A pool of more namespaces: the first ones (fewer than the cap: the walk
                // switches once it sees it needs more) one by one, the rest from one list of
                // every application.
                if c.pool_namespaces.len() > tenant_reservation_policy::NAMESPACE_LISTS {
                    assert!(listed.len() < tenant_reservation_policy::NAMESPACE_LISTS);
                    assert!(listed.is_subset(&c.pool_namespaces));
                    let broad = fixture
                        .calls()
                        .iter()
                        .filter(|l| **l == Lookup::AllApplications)
                        .count();
                    assert_eq!(broad, 1, "{cluster}/{pool}");
                    continue;
                }
                assert_eq!(listed, c.pool_namespaces, "{cluster}/{pool}");
                let mut apps = 0;
                for namespace in &listed {
                    let lookup = Lookup::Applications {
                        namespace: namespace.clone(),
                    };
                    let bytes = serde_json::to_vec(&fixture.list_value(&lookup, None)).unwrap();
                    apps += parse_applications(&bytes, |_| None)
                        .unwrap()
                        .iter()
                        .filter(|a| &*a.kind != "Tenant")
                        .count();
                }
                assert_eq!(apps, pool, "{cluster}/{pool}");
                // The tenants above: read by name, one per level.
                let tenants = fixture
                    .sources()
                    .iter()
                    .filter(|s| **s == Source::Tenant)
                    .count();
                assert!((2..=4).contains(&tenants), "{tenants}");
            }
        }
    }
}

/// In the distinct variant no two applications of a kind serve the same values once
/// pruned to the masks the policy asks for.
#[test]
fn distinct_values_differ_in_what_the_policy_reads() {
    let d = Defaults::load();
    let count_distinct = |variant| {
        let c = generate(shape(1000, 1000, variant), &d);
        let fixture = test_kit::Fixture::new(c.objects.clone());
        assert!(validate_payload(&c.create, &fixture).allowed);
        let masks = fixture
            .calls()
            .iter()
            .zip(fixture.masks_asked())
            .find(|(l, _)| l.source() == Source::Applications)
            .map(|(_, m)| m)
            .unwrap();
        let mut distinct = HashSet::new();
        let mut apps = 0;
        for namespace in &c.pool_namespaces {
            let lookup = Lookup::Applications {
                namespace: namespace.clone(),
            };
            let list = fixture.list_value(&lookup, Some(&masks));
            for item in list["items"].as_array().unwrap() {
                let kind = item["metadata"]["labels"]["apps.cozystack.io/application.kind"]
                    .as_str()
                    .unwrap();
                if kind != "Tenant" {
                    apps += 1;
                    distinct.insert((kind.to_string(), item["spec"]["values"].to_string()));
                }
            }
        }
        (apps, distinct.len())
    };
    assert_eq!(count_distinct(Variant::Distinct), (1000, 1000));
    let (apps, same) = count_distinct(Variant::Same);
    assert_eq!(apps, 1000);
    assert!(same < 250, "{same} distinct of 1000");
}
