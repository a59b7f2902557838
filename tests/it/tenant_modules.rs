//! Tenant modules: what a Tenant write switches on is checked where it lands, a module is
//! charged once, and a module that cannot be evaluated never refuses another write.

use serde_json::{Value, json};

use crate::common::*;

/// Settings of a stock installation with small, fixed module blocks: the mechanism is tested
/// here, the real blocks in the charge tables.
fn settings() -> Value {
    json!({
        "exemptKinds": ["Info"],
        "reservations": {
            "VMInstance": {"instanceType": "instanceType"},
            "Etcd": {"fixed": {"cpu": "3", "memory": "1536Mi", "storage": "12Gi"}},
            "Monitoring": {"fixed": {"cpu": "20", "memory": "32Gi"}},
            "Tenant": {"implies": [
                {"kind": "Info", "name": "info"},
                {"kind": "Etcd", "name": "etcd", "when": {"path": "etcd", "set": true}},
                {"kind": "Monitoring", "name": "monitoring", "when": {"path": "monitoring", "set": true}},
            ]},
        },
    })
}

/// tenant-a: 10 cpu, 40Gi; sub-tenant x declares 4 cpu, 8Gi; a u1.medium VM (1, 4Gi) in tenant-a.
fn pool(extra: Vec<Value>) -> Fixture {
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "a", json!({"cpu": "10", "memory": "40Gi"})),
        tenant("tenant-a", "x", json!({"cpu": "4", "memory": "8Gi"})),
        application("VMInstance", "tenant-a", "vm", json!({})),
    ];
    objects.extend(extra);
    stock_cluster(objects)
}

fn write(
    k8s: &Fixture,
    ns: &str,
    name: &str,
    spec: Value,
    old: Option<Value>,
    settings: Value,
) -> Verdict {
    let op = if old.is_some() { "UPDATE" } else { "CREATE" };
    validate_payload(&payload(op, "Tenant", ns, name, spec, old, settings), k8s)
}

#[test]
fn a_module_that_lands_in_the_parent_pool_must_fit_there() {
    let k8s = pool(Vec::new());
    let etcd = write(
        &k8s,
        "tenant-a",
        "y",
        json!({"etcd": true}),
        None,
        settings(),
    );
    assert!(etcd.allowed, "4 carved + 1 + 3 fits 10: {etcd:?}");
    let monitoring = write(
        &k8s,
        "tenant-a",
        "y",
        json!({"monitoring": true}),
        None,
        settings(),
    );
    assert_eq!(
        message(&monitoring),
        "Tenant tenant-a/y: cpu: the modules it switches on (Monitoring tenant-a-y/monitoring) reserve 20, which exceeds pool tenant-a by 15: budget 10, 4 carved out by 1 sub-tenant, reserved 1 by 1 application (largest: VMInstance tenant-a/vm 1), available 5; memory: the modules it switches on (Monitoring tenant-a-y/monitoring) reserve 32Gi, which exceeds pool tenant-a by 4Gi: budget 40Gi, 8Gi carved out by 1 sub-tenant, reserved 4Gi by 1 application (largest: VMInstance tenant-a/vm 4Gi), available 28Gi"
    );
}

#[test]
fn a_module_in_a_bounded_child_must_fit_its_own_quota() {
    let k8s = pool(Vec::new());
    let v = write(
        &k8s,
        "tenant-a",
        "y",
        json!({"etcd": true, "resourceQuotas": {"cpu": "2", "memory": "8Gi"}}),
        None,
        settings(),
    );
    assert_eq!(
        message(&v),
        "Tenant tenant-a/y: cpu 2 does not cover what its namespaces will hold (0 reserved by 0 applications and 3 by the modules it switches on (Etcd tenant-a-y/etcd)) in pool tenant-a-y"
    );
    let fits = write(
        &k8s,
        "tenant-a",
        "y",
        json!({"etcd": true, "resourceQuotas": {"cpu": "3", "memory": "8Gi"}}),
        None,
        settings(),
    );
    assert!(fits.allowed, "{fits:?}");
}

#[test]
fn the_root_tenant_s_modules_are_checked_in_its_own_pools() {
    let k8s = stock_cluster(vec![tenant("tenant-root", "root", json!({"cpu": "10"}))]);
    let quota = json!({"cpu": "10"});
    let v = write(
        &k8s,
        "tenant-root",
        "root",
        json!({"monitoring": true, "resourceQuotas": quota}),
        Some(json!({"resourceQuotas": quota})),
        settings(),
    );
    assert_eq!(
        message(&v),
        "Tenant tenant-root/root: cpu 10 does not cover what its namespaces will hold (0 reserved by 0 applications and 20 by the modules it switches on (Monitoring tenant-root/monitoring)) in pool tenant-root"
    );
}

#[test]
fn a_module_is_charged_once() {
    // The release exists: it is an application of tenant-a-y (3 cpu), not charged again.
    let k8s = pool(vec![
        tenant_with("tenant-a", "y", json!({"etcd": true})),
        module("Etcd", "tenant-a-y", "etcd"),
    ]);
    let spec = json!({"etcd": true, "monitoring": false});
    let v = write(
        &k8s,
        "tenant-a",
        "y",
        spec,
        Some(json!({"etcd": true})),
        settings(),
    );
    assert!(v.allowed, "{v:?}");
    // Switched on in the previous version too, release not there yet: no growth.
    let tight = stock_cluster(vec![
        tenant("tenant-root", "a", json!({"cpu": "7", "memory": "40Gi"})),
        tenant("tenant-a", "x", json!({"cpu": "4", "memory": "8Gi"})),
        application("VMInstance", "tenant-a", "vm", json!({})),
        tenant_with("tenant-a", "y", json!({"etcd": true})),
    ]);
    let v = write(
        &tight,
        "tenant-a",
        "y",
        json!({"etcd": true, "monitoring": false}),
        Some(json!({"etcd": true})),
        settings(),
    );
    assert!(
        v.allowed,
        "the pool is over budget (4 + 1 + 3 of 7), but nothing grows: {v:?}"
    );
}

#[test]
fn a_module_that_cannot_be_evaluated_never_refuses_a_write() {
    // `null` removes the block, the built-in one included.
    let mut no_monitoring_block = settings();
    no_monitoring_block["reservations"]["Monitoring"] = Value::Null;
    let k8s = pool(vec![module("Monitoring", "tenant-a", "monitoring")]);
    let v = validate_payload(
        &payload(
            "CREATE",
            "VMInstance",
            "tenant-a",
            "vm2",
            json!({}),
            None,
            no_monitoring_block.clone(),
        ),
        &k8s,
    );
    assert!(v.allowed, "{v:?}");
    assert_eq!(
        v.warnings,
        [
            "tenant module counted as zero in pool tenant-a: Monitoring tenant-a/monitoring: ApplicationDefinition monitoring declares no spec.reservation, the reservations setting has no block for Monitoring, and Monitoring is not in the exemptKinds setting"
        ]
    );
    // Switching one on is not refused for it either, and says so.
    let v = write(
        &k8s,
        "tenant-a",
        "z",
        json!({"monitoring": true}),
        None,
        no_monitoring_block,
    );
    assert!(v.allowed, "{v:?}");
    assert!(
        v.warnings
            .iter()
            .any(|w| w.contains("Monitoring tenant-a-z/monitoring (pending release)")),
        "{v:?}"
    );
}
