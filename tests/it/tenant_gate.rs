//! The Tenant declaration gate.

use serde_json::{Value, json};

use crate::common::*;

/// tenant-a: 10 cpu, 40Gi; sub-tenant x declares 4 cpu, 8Gi; a VM in tenant-a reserves 4Gi.
fn parent_pool(extra: Vec<Value>) -> Fixture {
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "a", json!({"cpu": "10", "memory": "40Gi"})),
        tenant("tenant-a", "x", json!({"cpu": "4", "memory": "8Gi"})),
        application("VMInstance", "tenant-a", "vm", json!({})),
    ];
    objects.extend(extra);
    cluster(objects)
}

#[test]
fn a_child_tenant_must_fit_in_its_parents_pool() {
    let k8s = parent_pool(Vec::new());
    let fits = tenant_write(
        &k8s,
        "tenant-a",
        "y",
        json!({"cpu": "5", "memory": "28Gi"}),
        None,
    );
    assert!(fits.allowed, "{fits:?}");
    let over = tenant_write(
        &k8s,
        "tenant-a",
        "y",
        json!({"cpu": "6", "memory": "29Gi"}),
        None,
    );
    assert_eq!(
        message(&over),
        "Tenant tenant-a/y: cpu 6 exceeds pool tenant-a by 1: budget 10, 4 carved out by 1 sub-tenant, reserved 1 by 1 application (largest: VMInstance tenant-a/vm 1), available 5; memory 29Gi exceeds pool tenant-a by 1Gi: budget 40Gi, 8Gi carved out by 1 sub-tenant, reserved 4Gi by 1 application (largest: VMInstance tenant-a/vm 4Gi), available 28Gi"
    );
}

#[test]
fn a_child_may_bound_what_its_parent_leaves_unbounded() {
    let k8s = parent_pool(Vec::new());
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "y",
        json!({"storage": "10Ti", "services.loadbalancers": 3}),
        None,
    );
    assert!(v.allowed, "{v:?}");
}

#[test]
fn a_child_update_checks_only_growth_and_excludes_itself() {
    // x grows its cpu from 4 to 9: its own old carve-out does not count against it.
    let k8s = parent_pool(Vec::new());
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "x",
        json!({"cpu": "9", "memory": "8Gi"}),
        Some(json!({"cpu": "4", "memory": "8Gi"})),
    );
    assert!(v.allowed, "9 + 1 reserved fits 10: {v:?}");
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "x",
        json!({"cpu": "10", "memory": "8Gi"}),
        Some(json!({"cpu": "4", "memory": "8Gi"})),
    );
    assert!(
        message(&v)
            .starts_with("Tenant tenant-a/x: cpu grows by 6 to 10, which exceeds pool tenant-a"),
        "{v:?}"
    );
    // An overcommitted pool still lets a child shrink, with a warning.
    let k8s = parent_pool(vec![tenant("tenant-a", "z", json!({"cpu": "7"}))]);
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "x",
        json!({"cpu": "3"}),
        Some(json!({"cpu": "4", "memory": "8Gi"})),
    );
    assert!(v.allowed, "{v:?}");
    assert_eq!(
        v.warnings,
        ["pool tenant-a is overcommitted (cpu: sub-tenants declare 11 of a budget of 10)"]
    );
}

#[test]
fn the_applications_of_a_child_becoming_bounded_leave_the_parent_pool() {
    // b is unbounded, its 40Gi Postgres fills a's pool; bounding b at 40Gi moves it out.
    let k8s = cluster(vec![
        tenant("tenant-root", "a", json!({"memory": "48Gi"})),
        tenant("tenant-a", "b", json!({})),
        application(
            "Postgres",
            "tenant-a-b",
            "pg",
            json!({"replicas": 5, "resourcesPreset": "u1.medium"}),
        ),
    ]);
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "b",
        json!({"memory": "40Gi"}),
        Some(json!({})),
    );
    assert!(v.allowed, "{v:?}");
    let v = tenant_write(&k8s, "tenant-a", "c", json!({"memory": "16Gi"}), None);
    assert!(message(&v).contains("memory 16Gi exceeds pool tenant-a by 8Gi: budget 48Gi, reserved 40Gi by 1 application (largest: Postgres tenant-a-b/pg 40Gi), available 8Gi"), "{v:?}");
}

#[test]
fn tenant_declarations_are_validated() {
    let k8s = parent_pool(Vec::new());
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "y",
        json!({"a10.gpuclass.cozystack.io/memory": "1", "gpuclass.cozystack.io/devices": "1"}),
        None,
    );
    assert_eq!(
        message(&v),
        "Tenant tenant-a/y: spec.resourceQuotas.a10.gpuclass.cozystack.io/memory is in the GPU budget domain but not a budget key \
         (gpuclass.cozystack.io/devices or <class>.gpuclass.cozystack.io/devices): the tenant chart keeps such keys out of the ResourceQuota, so nothing would enforce it"
    );
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "y",
        json!({"cpu": "-1", "memory": "lots"}),
        None,
    );
    assert_eq!(
        message(&v),
        "Tenant tenant-a/y: spec.resourceQuotas.cpu: \"-1\" is negative; spec.resourceQuotas.memory: \"lots\" is not a valid quantity"
    );
    let v = tenant_write(
        &k8s,
        "tenant-root",
        "z",
        json!({"a10.gpuclass.cozystack.io/devices": 2}),
        None,
    );
    assert!(v.allowed, "no parent pool, valid keys: {v:?}");
}

#[test]
fn a_child_cannot_declare_less_than_its_subtree_holds() {
    // b (unbounded) holds a 12Gi Postgres inside a's 16Gi pool. Declaring 1Gi would move the
    // 12Gi out of a's pool while carving out only 1Gi: 11Gi handed back that is in use.
    let k8s = cluster(vec![
        tenant("tenant-root", "a", json!({"memory": "16Gi"})),
        tenant("tenant-a", "b", json!({})),
        application(
            "Postgres",
            "tenant-a-b",
            "pg",
            json!({"replicas": 3, "resourcesPreset": "u1.medium"}),
        ),
    ]);
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "b",
        json!({"memory": "1Gi"}),
        Some(json!({})),
    );
    assert_eq!(
        message(&v),
        "Tenant tenant-a/b: memory 1Gi is less than its namespaces already hold (24Gi reserved by 1 application): \
         declaring it would hand back budget of pool tenant-a that is still in use"
    );
    // Declaring what it holds or more is fine when it fits; an unrelated key is not checked.
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "b",
        json!({"memory": "12Gi", "cpu": "1"}),
        Some(json!({})),
    );
    assert!(!v.allowed, "24Gi held: {v:?}");
    let k8s = cluster(vec![
        tenant("tenant-root", "a", json!({"memory": "16Gi"})),
        tenant("tenant-a", "b", json!({"memory": "12Gi"})),
        application(
            "Postgres",
            "tenant-a-b",
            "pg",
            json!({"replicas": 2, "resourcesPreset": "u1.medium"}),
        ),
    ]);
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "b",
        json!({"memory": "8Gi"}),
        Some(json!({"memory": "12Gi"})),
    );
    assert!(!v.allowed && message(&v).contains("memory 8Gi is less than its namespaces already hold (16Gi reserved by 1 application)"), "{v:?}");
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "b",
        json!({"memory": "12Gi", "storage": "1Gi"}),
        Some(json!({"memory": "12Gi"})),
    );
    assert!(v.allowed, "memory unchanged, storage unbounded by a: {v:?}");
}

#[test]
fn a_bounded_child_stays_in_its_parents_pool_for_the_keys_it_does_not_bound() {
    // y bounds cpu only: for memory, tenant-a-y is still a member of tenant-a's pool.
    let k8s = cluster(vec![
        tenant("tenant-root", "a", json!({"memory": "16Gi"})),
        tenant("tenant-a", "y", json!({"cpu": "64"})),
        application(
            "VMInstance",
            "tenant-a",
            "vm",
            json!({"instanceType": "u1.large"}),
        ), // 8Gi
    ]);
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-a-y",
        "big",
        json!({"instanceType": "u1.xlarge"}),
    );
    assert_eq!(
        message(&v),
        "VMInstance tenant-a-y/big: memory 16Gi exceeds pool tenant-a by 8Gi: budget 16Gi, reserved 8Gi by 1 application (largest: VMInstance tenant-a/vm 8Gi), available 8Gi"
    );
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-a",
        "more",
        json!({"instanceType": "u1.large"}),
    );
    assert!(v.allowed, "8Gi + 8Gi fits: {v:?}");
}

#[test]
fn a_child_dropping_a_key_brings_what_it_holds_back_into_the_parent_pool() {
    // x declares 8Gi and holds 8Gi; dropping memory returns the 8Gi to a's pool for memory,
    // so a's next 16Gi VM no longer fits.
    let objects = |x_quota: Value| {
        vec![
            tenant("tenant-root", "a", json!({"cpu": "10", "memory": "16Gi"})),
            tenant("tenant-a", "x", x_quota),
            application(
                "VMInstance",
                "tenant-a-x",
                "vm",
                json!({"instanceType": "u1.large"}),
            ), // 2, 8Gi
        ]
    };
    let k8s = cluster(objects(json!({"cpu": "4", "memory": "8Gi"})));
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "x",
        json!({"cpu": "4"}),
        Some(json!({"cpu": "4", "memory": "8Gi"})),
    );
    assert!(v.allowed, "the pool's load does not change: {v:?}");
    let k8s = cluster(objects(json!({"cpu": "4"})));
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-a",
        "more",
        json!({"instanceType": "u1.xlarge"}),
    );
    assert_eq!(
        message(&v),
        "VMInstance tenant-a/more: memory 16Gi exceeds pool tenant-a by 8Gi: budget 16Gi, reserved 8Gi by 1 application (largest: VMInstance tenant-a-x/vm 8Gi), available 8Gi"
    );
    // An overcommitted child (declares 4Gi, holds 8Gi) dropping memory grows a's load.
    let mut crowded = objects(json!({"cpu": "4", "memory": "4Gi"}));
    crowded.push(application(
        "VMInstance",
        "tenant-a",
        "vm",
        json!({"instanceType": "u1.xlarge"}),
    )); // 16Gi
    let k8s = cluster(crowded);
    let v = tenant_write(
        &k8s,
        "tenant-a",
        "x",
        json!({"cpu": "4"}),
        Some(json!({"cpu": "4", "memory": "4Gi"})),
    );
    assert_eq!(
        message(&v),
        "Tenant tenant-a/x: memory is no longer declared: what its namespaces hold returns to the pool, which exceeds pool tenant-a by 8Gi: \
         budget 16Gi, reserved 24Gi by 2 applications (largest: VMInstance tenant-a/vm 16Gi, VMInstance tenant-a-x/vm 8Gi), available 0 (over budget by 8Gi)"
    );
}
