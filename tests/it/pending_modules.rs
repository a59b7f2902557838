//! A Tenant's modules count in their pool from the moment the Tenant is stored: the tenant
//! chart's releases are created after the Tenant write, and possibly much later, with no
//! admission of their own. On a stock installation (the reference definitions, `settings: {}`).

use serde_json::{Value, json};
use tenant_reservation_policy::ledger::ledger;

use crate::common::*;

/// tenant-a bounds cpu at 4; its sub-tenant c (unbounded, so its namespace is in a's pool)
/// switches Etcd on (3 cpu at the chart's defaults), whose release does not exist yet.
fn pool(extra: Vec<Value>) -> Fixture {
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "a", json!({"cpu": "4"})),
        tenant_with("tenant-a", "c", json!({"etcd": true})),
    ];
    objects.extend(extra);
    stock_cluster(objects)
}

/// A Tenant write of the whole `spec` (and `old` on UPDATE) with `settings: {}`.
fn tenant_write_stock(
    k8s: &Fixture,
    namespace: &str,
    name: &str,
    spec: Value,
    old: Option<Value>,
) -> Verdict {
    let op = if old.is_some() { "UPDATE" } else { "CREATE" };
    validate_payload(
        &payload(op, "Tenant", namespace, name, spec, old, json!({})),
        k8s,
    )
}

fn vm(size: &str) -> Value {
    json!({"instanceType": size})
}

#[test]
fn an_application_write_counts_a_stored_tenants_pending_module() {
    let k8s = pool(Vec::new());
    let large = create(&k8s, "VMInstance", "tenant-a", "vm", vm("u1.large"));
    assert_eq!(
        message(&large),
        "VMInstance tenant-a/vm: cpu 2 exceeds pool tenant-a by 1: budget 4, reserved 3 by 1 application (largest: Etcd tenant-a-c/etcd (pending release) 3), available 1"
    );
    let medium = create(&k8s, "VMInstance", "tenant-a", "vm", vm("u1.medium"));
    assert!(medium.allowed, "3 + 1 fits 4: {medium:?}");
    // Into the namespace the module will land in, too.
    let there = create(&k8s, "VMInstance", "tenant-a-c", "vm", vm("u1.large"));
    assert!(!there.allowed, "{there:?}");
}

#[test]
fn a_sibling_tenant_write_counts_it_too() {
    let k8s = pool(Vec::new());
    let d = tenant_write_stock(&k8s, "tenant-a", "d", json!({"etcd": true}), None);
    assert_eq!(
        message(&d),
        "Tenant tenant-a/d: cpu: the modules it switches on (Etcd tenant-a-d/etcd) reserve 3, which exceeds pool tenant-a by 2: budget 4, reserved 3 by 1 application (largest: Etcd tenant-a-c/etcd (pending release) 3), available 1"
    );
}

#[test]
fn once_the_release_exists_it_is_charged_once() {
    let k8s = pool(vec![module("Etcd", "tenant-a-c", "etcd")]);
    let medium = create(&k8s, "VMInstance", "tenant-a", "vm", vm("u1.medium"));
    assert!(medium.allowed, "{medium:?}");
    let large = create(&k8s, "VMInstance", "tenant-a", "vm", vm("u1.large"));
    assert_eq!(
        message(&large),
        "VMInstance tenant-a/vm: cpu 2 exceeds pool tenant-a by 1: budget 4, reserved 3 by 1 application (largest: Etcd tenant-a-c/etcd 3), available 1"
    );
}

#[test]
fn the_tenant_itself_is_not_charged_twice_for_its_modules() {
    // An UPDATE that keeps etcd on in a pool its module already fills does not grow it.
    let k8s = pool(vec![application(
        "VMInstance",
        "tenant-a",
        "vm",
        vm("u1.medium"),
    )]);
    let same = tenant_write_stock(
        &k8s,
        "tenant-a",
        "c",
        json!({"etcd": true, "ingress": false}),
        Some(json!({"etcd": true})),
    );
    assert!(same.allowed, "{same:?}");
    // Writing the module's own application is charged as the write, not besides it.
    let etcd = create(&k8s, "Etcd", "tenant-a-c", "etcd", json!({}));
    assert!(etcd.allowed, "{etcd:?}");
}

#[test]
fn the_ledger_names_the_pending_release() {
    let k8s = pool(Vec::new());
    let ledger = ledger(&Settings::default(), &k8s, 3).unwrap();
    let cpu = ledger
        .pools
        .iter()
        .find(|l| l.standing.pool == "tenant-a" && l.standing.key == "cpu")
        .unwrap();
    assert_eq!(cpu.show(cpu.standing.reserved), "3");
    assert_eq!(cpu.pending, ["Etcd tenant-a-c/etcd"]);
    assert_eq!(
        cpu.standing.largest,
        [(q("3"), "Etcd tenant-a-c/etcd (pending release)".to_string())]
    );
    assert_eq!(cpu.to_json()["pending"], json!(["Etcd tenant-a-c/etcd"]));
}
