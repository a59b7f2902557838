//! The application gate over real Cozystack definitions and instance types.

use serde_json::{Value, json};

use crate::common::*;

#[test]
fn create_that_fits_is_accepted_and_one_that_does_not_is_explained() {
    let k8s = foo_pool(Vec::new());
    let fits = create(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "db1",
        json!({"instanceType": "u1.xlarge"}),
    );
    assert!(fits.allowed, "16Gi + 16Gi fits in 32Gi: {fits:?}");
    let over = create(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "db1",
        json!({"instanceType": "u1.2xlarge"}),
    );
    assert!(!over.allowed);
    assert_eq!(
        message(&over),
        "VMInstance tenant-foo/db1: memory 32Gi exceeds pool tenant-foo by 16Gi: budget 32Gi, reserved 16Gi by 3 applications (largest: VMInstance tenant-foo/vm3 8Gi, VMInstance tenant-foo/vm1 4Gi, VMInstance tenant-foo/vm2 4Gi), available 16Gi"
    );
}

#[test]
fn update_checks_growth_only() {
    let k8s = foo_pool(Vec::new());
    let grow = update(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm1",
        json!({"instanceType": "u1.medium"}),
        json!({"instanceType": "u1.2xlarge"}),
    );
    assert_eq!(
        message(&grow),
        "VMInstance tenant-foo/vm1: memory grows by 28Gi to 32Gi, which exceeds pool tenant-foo by 12Gi: budget 32Gi, reserved 12Gi by 2 applications (largest: VMInstance tenant-foo/vm3 8Gi, VMInstance tenant-foo/vm2 4Gi), available 20Gi"
    );
    let ok = update(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm1",
        json!({"instanceType": "u1.medium"}),
        json!({"instanceType": "u1.xlarge"}),
    );
    assert!(ok.allowed, "16Gi + 4Gi + 8Gi fits in 32Gi: {ok:?}");
}

#[test]
fn shrinking_passes_even_over_budget() {
    // The parent lowered foo's quota to 8Gi after three 4Gi VMs existed.
    let k8s = cluster(vec![
        tenant("tenant-root", "foo", json!({"memory": "8Gi"})),
        application("VMInstance", "tenant-foo", "vm1", json!({})),
        application("VMInstance", "tenant-foo", "vm2", json!({})),
        application("VMInstance", "tenant-foo", "vm3", json!({})),
    ]);
    let shrink = update(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm1",
        json!({}),
        json!({"instanceType": "u1.small"}),
    );
    assert!(shrink.allowed, "{shrink:?}");
    let same = update(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm1",
        json!({}),
        json!({"instanceType": "u1.medium", "runStrategy": "Halted"}),
    );
    assert!(same.allowed, "{same:?}");
    // Nothing grows: the pool is not read, only the tenants above and the two sizes, their
    // instance types in one list (u1.medium, the default, and u1.small; then u1.medium).
    let above = [
        Source::Definitions,
        Source::Tenant,
        Source::Tenant,
        Source::Schema,
    ];
    let it = Source::InstanceTypes;
    assert_eq!(
        k8s.sources(),
        [&above[..], &[it], &above[..], &[it]].concat()
    );
}

#[test]
fn nested_tenants_carve_out_and_unbounded_children_share() {
    let k8s = cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "a", json!({"cpu": "10", "memory": "40Gi"})),
        tenant("tenant-a", "b", json!({})), // unbounded: shares a's pool
        tenant(
            "tenant-a",
            "c",
            json!({"requests.cpu": "4", "memory": "16Gi"}),
        ), // carved out
        application(
            "Postgres",
            "tenant-a-b",
            "pg",
            json!({"replicas": 2, "resourcesPreset": "u1.medium"}),
        ), // 4 cpu, 16Gi
        application(
            "VMInstance",
            "tenant-a-c",
            "big",
            json!({"instanceType": "u1.2xlarge"}),
        ), // not in a's pool
    ]);
    // Pool tenant-a: cpu 10 - 4 carved = 6 for members; Postgres reserves 4.
    let fits = create(
        &k8s,
        "VMInstance",
        "tenant-a",
        "vm",
        json!({"instanceType": "u1.medium"}),
    );
    assert!(fits.allowed, "{fits:?}");
    let over = create(
        &k8s,
        "VMInstance",
        "tenant-a-b",
        "vm",
        json!({"instanceType": "u1.xlarge"}),
    );
    assert_eq!(
        message(&over),
        "VMInstance tenant-a-b/vm: cpu 4 exceeds pool tenant-a by 2: budget 10, 4 carved out by 1 sub-tenant, reserved 4 by 1 application (largest: Postgres tenant-a-b/pg 4), available 2; memory 16Gi exceeds pool tenant-a by 8Gi: budget 40Gi, 16Gi carved out by 1 sub-tenant, reserved 16Gi by 1 application (largest: Postgres tenant-a-b/pg 16Gi), available 8Gi"
    );
    // The bounded child is its own pool: 4 cpu, its big VM already takes 8.
    let child = create(
        &k8s,
        "VMDisk",
        "tenant-a-c",
        "disk",
        json!({"storage": "10Gi"}),
    );
    assert!(child.allowed, "c bounds no storage: {child:?}");
}

#[test]
fn a_namespace_outside_any_pool_is_accepted() {
    let k8s = cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "free", json!({})),
    ]);
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-free",
        "huge",
        json!({"instanceType": "u1.4xlarge"}),
    );
    assert!(v.allowed);
    assert_eq!(
        k8s.sources(),
        [Source::Definitions, Source::Tenant, Source::Tenant],
        "neither values nor pools read outside a pool"
    );
    let v = create(
        &k8s,
        "VMInstance",
        "default",
        "x",
        json!({"instanceType": "nope"}),
    );
    assert!(v.allowed, "not a tenant namespace");
}

#[test]
fn the_object_under_admission_fails_closed() {
    let k8s = foo_pool(Vec::new());
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "x",
        json!({"instanceType": "u1.mega"}),
    );
    assert_eq!(
        message(&v),
        "VMInstance tenant-foo/x cannot be evaluated: spec.instanceType: instance type \"u1.mega\" does not exist"
    );
    let v = create(
        &k8s,
        "VMDisk",
        "tenant-foo",
        "d",
        json!({"storage": "10 Gi"}),
    );
    assert_eq!(
        message(&v),
        "VMDisk tenant-foo/d cannot be evaluated: spec.storage: \"10 Gi\" is not a valid quantity"
    );
    let v = create(&k8s, "Unicorn", "tenant-foo", "u", json!({}));
    assert_eq!(
        message(&v),
        "Unicorn tenant-foo/u cannot be evaluated: no ApplicationDefinition declares kind Unicorn"
    );
}

#[test]
fn kinds_without_a_reservation_need_an_exemption() {
    // A stock installation: no definition has a block; `settings: {}` charges by the built-in
    // ones, and a kind whose built-in block the settings remove is refused unless exempt.
    let k8s = stock_cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "foo", json!({"cpu": "16"})),
    ]);
    let v = create(&k8s, "Bucket", "tenant-foo", "b", json!({}));
    assert!(v.allowed, "the built-in block charges Bucket: {v:?}");
    let opted_out = json!({"reservations": {"Bucket": null}});
    let v = with_settings(
        &k8s,
        opted_out.clone(),
        "Bucket",
        "tenant-foo",
        "b",
        json!({}),
    );
    assert_eq!(
        message(&v),
        "Bucket tenant-foo/b cannot be evaluated: ApplicationDefinition bucket declares no spec.reservation, the reservations setting has no block for Bucket, and Bucket is not in the exemptKinds setting"
    );
    let v = with_settings(
        &k8s,
        json!({"reservations": {"Bucket": null}, "exemptKinds": ["Bucket"]}),
        "Bucket",
        "tenant-foo",
        "b",
        json!({}),
    );
    assert!(v.allowed, "{v:?}");
    let v = with_settings(
        &k8s,
        json!({"reservations": {"Bucket": null}, "requireReservation": false}),
        "Bucket",
        "tenant-foo",
        "b",
        json!({}),
    );
    assert!(v.allowed, "{v:?}");
}

#[test]
fn a_definitions_block_wins_over_the_setting_which_wins_over_the_built_in_one() {
    let objects = || {
        vec![
            tenant("tenant-root", "root", json!({})),
            tenant(
                "tenant-root",
                "foo",
                json!({"cpu": "4", "memory": "64Gi", "storage": "1Ti"}),
            ),
        ]
    };
    // 8 cpu: more than the pool's 4, whatever the built-in block says of Postgres.
    let huge = json!({"reservations": {"Postgres": {"fixed": {"cpu": "8"}}}});
    let default_postgres = json!({});
    // Stock definitions: the setting's block replaces the built-in one.
    let stock = stock_cluster(objects());
    assert!(
        create(
            &stock,
            "Postgres",
            "tenant-foo",
            "db",
            default_postgres.clone()
        )
        .allowed
    );
    let v = with_settings(
        &stock,
        huge.clone(),
        "Postgres",
        "tenant-foo",
        "db",
        default_postgres.clone(),
    );
    assert!(
        message(&v).starts_with("Postgres tenant-foo/db: cpu 8 exceeds pool tenant-foo"),
        "{v:?}"
    );
    // Definitions that declare their block: it wins over the setting.
    let declared = cluster(objects());
    let v = with_settings(
        &declared,
        huge,
        "Postgres",
        "tenant-foo",
        "db",
        default_postgres,
    );
    assert!(v.allowed, "the definition's own block charges 1 cpu: {v:?}");
}

#[test]
fn a_sibling_that_cannot_be_evaluated_denies_or_warns() {
    let k8s = foo_pool(vec![application(
        "VMInstance",
        "tenant-foo",
        "legacy",
        json!({"instanceType": "gone.large"}),
    )]);
    let v = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert!(!v.allowed);
    assert_eq!(
        message(&v),
        "VMDisk tenant-foo/d: pool tenant-foo cannot be checked, 1 other object cannot be evaluated (siblingFailure: deny): \
         VMInstance tenant-foo/legacy: spec.instanceType: instance type \"gone.large\" does not exist"
    );
    let v = with_settings(
        &k8s,
        json!({"siblingFailure": "warn"}),
        "VMDisk",
        "tenant-foo",
        "d",
        json!({}),
    );
    assert!(v.allowed, "{v:?}");
    assert_eq!(
        v.warnings,
        [
            "counted as zero in pool tenant-foo: VMInstance tenant-foo/legacy: spec.instanceType: instance type \"gone.large\" does not exist"
        ]
    );
}

#[test]
fn a_missing_spec_is_charged_at_the_defaults() {
    let k8s = cluster(vec![tenant("tenant-root", "foo", json!({"memory": "2Gi"}))]);
    let mut request: Value = serde_json::from_slice(&payload(
        "CREATE",
        "VMInstance",
        "tenant-foo",
        "vm",
        json!({}),
        None,
        json!({}),
    ))
    .unwrap();
    request["request"]["object"]
        .as_object_mut()
        .unwrap()
        .remove("spec");
    let v = validate_payload(&serde_json::to_vec(&request).unwrap(), &k8s);
    assert_eq!(
        message(&v),
        "VMInstance tenant-foo/vm: memory 4Gi exceeds pool tenant-foo by 2Gi: budget 2Gi, reserved 0 by 0 applications, available 2Gi"
    );
}

#[test]
fn a_definition_with_a_broken_schema_is_refused_by_name() {
    let mut broken = test_kit::definition("VMDisk");
    broken["spec"]["application"]["openAPISchema"] = json!("{\"type\": \"object\",");
    let mut objects: Vec<Value> = test_kit::definitions()
        .into_iter()
        .filter(|d| d["spec"]["application"]["kind"] != "VMDisk")
        .collect();
    objects.push(broken);
    objects.push(tenant("tenant-root", "foo", json!({"storage": "10Gi"})));
    let k8s = Fixture::new(objects);
    let v = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert!(message(&v).starts_with("VMDisk tenant-foo/d cannot be evaluated: ApplicationDefinition vm-disk: spec.application.openAPISchema is not valid JSON"), "{v:?}");
}

#[test]
fn hundreds_of_broken_siblings_still_give_a_bounded_answer() {
    let broken: Vec<Value> = (0..300)
        .map(|i| {
            application(
                "VMInstance",
                "tenant-foo",
                &format!("old{i:03}"),
                json!({"instanceType": format!("gone.{i}")}),
            )
        })
        .collect();
    let k8s = foo_pool(broken);
    let deny = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    let message = message(&deny);
    assert!(
        message.starts_with("VMDisk tenant-foo/d: pool tenant-foo cannot be checked, 300 other objects cannot be evaluated (siblingFailure: deny): VMInstance tenant-foo/old000: spec.instanceType: instance type \"gone.0\" does not exist; "),
        "{message}"
    );
    assert!(message.ends_with("; +297 more"), "{message}");
    assert!(message.len() < 1024, "{} bytes", message.len());

    let warn = with_settings(
        &k8s,
        json!({"siblingFailure": "warn"}),
        "VMDisk",
        "tenant-foo",
        "d",
        json!({}),
    );
    assert!(warn.allowed, "{warn:?}");
    assert_eq!(warn.warnings.len(), 4, "{:?}", warn.warnings);
    assert_eq!(
        warn.warnings[3],
        "counted as zero in pool tenant-foo: 297 more that cannot be evaluated"
    );
    assert!(warn.warnings.iter().all(|w| w.chars().count() <= 256));
}

/// An out-of-tree catalog adds a kind the webhook's rules do not name: its own writes never
/// reach the policy, but its applications sit in their tenant's pool, so every write the policy
/// does see in that pool names them (siblingFailure decides whether to refuse or warn), and
/// `scripts/generate-rules.sh` names the plural to add (docs/operating.md).
#[test]
fn an_application_of_a_kind_without_a_block_is_named_by_every_write_in_its_pool() {
    let mut streams = definition("Bucket");
    streams["metadata"]["name"] = json!("stream");
    streams["spec"]["application"]["kind"] = json!("Stream");
    streams["spec"]["application"]["plural"] = json!("streams");
    streams["spec"]["application"]["singular"] = json!("stream");
    streams["spec"]["release"]["prefix"] = json!("stream-");
    streams["spec"]
        .as_object_mut()
        .unwrap()
        .remove("reservation");
    let mut k8s = foo_pool(vec![release(
        "Stream",
        "tenant-foo",
        "stream-events",
        Some("events"),
        json!({}),
    )]);
    k8s.add(streams);

    let deny = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert!(!deny.allowed);
    assert_eq!(
        message(&deny),
        "VMDisk tenant-foo/d: pool tenant-foo cannot be checked, 1 other object cannot be evaluated (siblingFailure: deny): \
         Stream tenant-foo/events: ApplicationDefinition stream declares no spec.reservation, the reservations setting has no block for Stream, and Stream is not in the exemptKinds setting"
    );
    let warn = with_settings(
        &k8s,
        json!({"siblingFailure": "warn"}),
        "VMDisk",
        "tenant-foo",
        "d",
        json!({}),
    );
    assert!(warn.allowed, "{warn:?}");
    assert_eq!(warn.warnings.len(), 1, "{:?}", warn.warnings);
    assert!(
        warn.warnings[0].starts_with("counted as zero in pool tenant-foo: Stream tenant-foo/events: ApplicationDefinition stream declares no spec.reservation"),
        "{:?}",
        warn.warnings
    );
}
