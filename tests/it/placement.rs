//! Where the stored applications and Tenants are placed: names as Cozystack derives them
//! (the release's name less its kind's prefix), never in a namespace that cannot exist.

use serde_json::{Value, json};

use crate::common::*;

fn vm(k8s: &Fixture, ns: &str) -> Verdict {
    create(k8s, "VMInstance", ns, "vm", json!({}))
}

/// The root Tenant as cozystack-basics creates it: its release's name label says `tenant-root`,
/// but Cozystack names the application `root`, which owns `tenant-root`.
#[test]
fn the_real_root_release_bounds_tenant_root() {
    let root = release(
        "Tenant",
        "tenant-root",
        "tenant-root",
        Some("tenant-root"),
        json!({"resourceQuotas": {"cpu": "0"}}),
    );
    let v = vm(&cluster(vec![root]), "tenant-root");
    assert!(
        message(&v).starts_with(
            "VMInstance tenant-root/vm: cpu 1 exceeds pool tenant-root by 1: budget 0"
        ),
        "{v:?}"
    );
}

#[test]
fn a_release_without_the_name_label_is_placed_by_its_name() {
    let foo = release(
        "Tenant",
        "tenant-root",
        "tenant-foo",
        None,
        json!({"resourceQuotas": {"memory": "1Gi"}}),
    );
    let k8s = cluster(vec![tenant("tenant-root", "root", json!({})), foo]);
    let v = vm(&k8s, "tenant-foo");
    assert!(
        message(&v).starts_with(
            "VMInstance tenant-foo/vm: memory 4Gi exceeds pool tenant-foo by 3Gi: budget 1Gi"
        ),
        "{v:?}"
    );
    // The other kinds too: a VM release without the label, named vm-instance-<name>, is the
    // application <name>, so it is the one an UPDATE of <name> replaces.
    let old = release(
        "VMInstance",
        "tenant-foo",
        "vm-instance-vm",
        None,
        json!({"instanceType": "u1.nano"}),
    );
    let k8s = cluster(vec![
        tenant("tenant-root", "foo", json!({"memory": "1Gi"})),
        old,
    ]);
    let v = update(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm",
        json!({"instanceType": "u1.nano"}),
        json!({"instanceType": "u1.nano"}),
    );
    assert!(
        v.allowed,
        "the stored release is the application being updated: {v:?}"
    );
}

#[test]
fn a_tenant_release_the_chart_cannot_render_is_ignored_with_a_warning() {
    for name in ["foo", "tenant-my-team"] {
        let odd = release(
            "Tenant",
            "tenant-root",
            name,
            None,
            json!({"resourceQuotas": {"cpu": "0"}}),
        );
        let root = tenant("tenant-root", "root", json!({"memory": "64Gi"}));
        let k8s = cluster(vec![root, odd.clone()]);
        let v = vm(&k8s, "tenant-root");
        assert!(v.allowed, "{v:?}");
        assert_eq!(
            v.warnings,
            [format!(
                "Tenant release tenant-root/{name} is ignored: the tenant chart renders only releases named tenant-<name> with no other dash, so it owns no namespace and bounds nothing"
            )]
        );
        // Outside any pool the namespace is not read at all, so neither is the release.
        let k8s = cluster(vec![tenant("tenant-root", "root", json!({})), odd]);
        let v = vm(&k8s, "tenant-root");
        assert!(v.allowed && v.warnings.is_empty(), "{v:?}");
        assert!(!k8s.sources().contains(&Source::Applications));
    }
}

#[test]
fn a_tenant_the_chart_cannot_render_is_refused() {
    let k8s = cluster(vec![tenant("tenant-root", "root", json!({}))]);
    let v = tenant_write(&k8s, "tenant-root", "my-team", json!({"cpu": "1"}), None);
    assert_eq!(
        message(&v),
        "Tenant tenant-root/my-team: the tenant chart renders a Tenant only as the release tenant-<name> with no other dash, so \"my-team\" would own no namespace"
    );
}

fn grow_only_settings() -> Value {
    json!({"reservations": {"VMDisk": {"storage": ["storage"], "growOnly": ["storage"]}}})
}

#[test]
fn a_grow_only_key_cannot_shrink() {
    let k8s = stock_cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "foo", json!({"storage": "100Gi"})),
        application("VMDisk", "tenant-foo", "d", json!({"storage": "50Gi"})),
    ]);
    let write = |old: &str, new: &str| {
        validate_payload(
            &payload(
                "UPDATE",
                "VMDisk",
                "tenant-foo",
                "d",
                json!({"storage": new}),
                Some(json!({"storage": old})),
                grow_only_settings(),
            ),
            &k8s,
        )
    };
    assert_eq!(
        message(&write("50Gi", "10Gi")),
        "VMDisk tenant-foo/d: storage cannot shrink from 50Gi to 10Gi: the chart keeps what it has provisioned, so the lower value would under-charge it"
    );
    assert!(write("50Gi", "100Gi").allowed);
    assert!(
        message(&write("50Gi", "101Gi"))
            .starts_with("VMDisk tenant-foo/d: storage grows by 51Gi to 101Gi"),
    );
}
