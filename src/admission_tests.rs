//! The admission flow over real Cozystack definitions and instance types.

use serde_json::{Value, json};

use super::*;
use crate::cluster::fixture::Fixture;
use crate::fixtures::{self, application, cluster, payload, tenant};
use crate::validate_payload;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap()
}

fn res(pairs: &[(&str, &str)]) -> Resources {
    pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
}

/// What one application of `kind` with `spec` reserves, by the real definition.
fn charge(kind: &str, spec: Value) -> Result<Resources, String> {
    charge_with(kind, spec, &Settings::default())
}

fn charge_with(kind: &str, spec: Value, settings: &Settings) -> Result<Resources, String> {
    let k8s = cluster(Vec::new());
    let context = Context::new(settings, &k8s).unwrap();
    let governing = context.governing(kind)?;
    context
        .charge(&governing, kind, &spec)
        .map(Option::unwrap_or_default)
}

fn create(k8s: &Fixture, kind: &str, ns: &str, name: &str, spec: Value) -> Verdict {
    validate_payload(
        &payload("CREATE", kind, ns, name, spec, None, json!({})),
        k8s,
    )
}

fn update(k8s: &Fixture, kind: &str, ns: &str, name: &str, old: Value, new: Value) -> Verdict {
    validate_payload(
        &payload("UPDATE", kind, ns, name, new, Some(old), json!({})),
        k8s,
    )
}

fn with_settings(
    k8s: &Fixture,
    settings: Value,
    kind: &str,
    ns: &str,
    name: &str,
    spec: Value,
) -> Verdict {
    validate_payload(
        &payload("CREATE", kind, ns, name, spec, None, settings),
        k8s,
    )
}

fn message(v: &Verdict) -> &str {
    v.message.as_deref().unwrap_or("")
}

// ---- evaluation per kind -------------------------------------------------------------

#[test]
fn vm_instance_defaults_to_u1_medium() {
    // KubeVirt's u1.medium (1 vCPU, 4Gi), not the resource preset of the same name (2, 8Gi).
    assert_eq!(
        charge("VMInstance", json!({})).unwrap(),
        res(&[("cpu", "1"), ("memory", "4Gi")])
    );
    assert_eq!(
        charge("VMInstance", json!({"instanceType": "u1.2xlarge"})).unwrap(),
        res(&[("cpu", "8"), ("memory", "32Gi")])
    );
}

#[test]
fn vm_instance_explicit_resources_win_key_by_key() {
    let explicit =
        json!({"instanceType": "", "resources": {"cpu": "1500m", "memory": "3Gi", "sockets": "1"}});
    assert_eq!(
        charge("VMInstance", explicit).unwrap(),
        res(&[("cpu", "1500m"), ("memory", "3Gi")])
    );
    let both = json!({"instanceType": "u1.xlarge", "resources": {"cpu": 3, "memory": "6Gi"}});
    assert_eq!(
        charge("VMInstance", both).unwrap(),
        res(&[("cpu", "3"), ("memory", "6Gi")])
    );
    let partial = json!({"instanceType": "u1.xlarge", "resources": {"cpu": "1"}});
    assert_eq!(
        charge("VMInstance", partial).unwrap(),
        res(&[("cpu", "1"), ("memory", "16Gi")])
    );
    let none = json!({"instanceType": "", "resources": {"cpu": "1"}});
    assert_eq!(
        charge("VMInstance", none).unwrap_err(),
        "spec: no memory size: resources.memory is unset, instanceType is unset"
    );
}

#[test]
fn vm_disk_charges_storage() {
    assert_eq!(
        charge("VMDisk", json!({})).unwrap(),
        res(&[("storage", "5Gi")])
    );
    assert_eq!(
        charge("VMDisk", json!({"storage": "1.5Ti"})).unwrap(),
        res(&[("storage", "1536Gi")])
    );
}

#[test]
fn kubernetes_charges_control_plane_and_node_groups_at_max_replicas() {
    // Control plane: 2 replicas of apiServer c1.medium (2, 2Gi) + three t1.micro (500m, 256Mi).
    let control_plane = res(&[("cpu", "3500m"), ("memory", "2816Mi")])
        .scaled(2)
        .unwrap();
    let spec = json!({"nodeGroups": {
        "md0": {"minReplicas": 1, "maxReplicas": 4, "instanceType": "u1.large"},
        "md1": {"minReplicas": 0, "maxReplicas": 2, "instanceType": "", "resources": {"cpu": "3", "memory": "5Gi"}, "diskSize": "50Gi"},
    }});
    let mut want = control_plane.clone();
    want.add_all(&res(&[
        ("cpu", "8"),
        ("memory", "32Gi"),
        ("storage", "80Gi"),
    ]))
    .unwrap(); // 4 x (2, 8Gi, 20Gi)
    want.add_all(&res(&[
        ("cpu", "6"),
        ("memory", "10Gi"),
        ("storage", "100Gi"),
    ]))
    .unwrap(); // 2 x (3, 5Gi, 50Gi)
    assert_eq!(charge("Kubernetes", spec).unwrap(), want);

    // No group declared: the chart's implicit md0 (10 x u1.medium, 20Gi disks) is charged.
    let mut implicit = control_plane;
    implicit
        .add_all(&res(&[
            ("cpu", "10"),
            ("memory", "40Gi"),
            ("storage", "200Gi"),
        ]))
        .unwrap();
    assert_eq!(charge("Kubernetes", json!({})).unwrap(), implicit);
}

#[test]
fn kubernetes_nodes_is_a_flat_worker_pool() {
    assert_eq!(
        charge("KubernetesNodes", json!({"cluster": "k1"})).unwrap(),
        res(&[("cpu", "10"), ("memory", "40Gi"), ("storage", "200Gi")]),
        "default: 10 x u1.medium (1, 4Gi) with 20Gi disks"
    );
    assert_eq!(
        charge(
            "KubernetesNodes",
            json!({"maxReplicas": 3, "instanceType": "u1.small", "diskSize": "30Gi"})
        )
        .unwrap(),
        res(&[("cpu", "3"), ("memory", "6Gi"), ("storage", "90Gi")])
    );
}

#[test]
fn postgres_by_preset_times_replicas() {
    assert_eq!(
        charge("Postgres", json!({})).unwrap(),
        res(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "20Gi")]),
        "default: 2 x t1.micro (500m, 256Mi) with 10Gi"
    );
    assert_eq!(
        charge(
            "Postgres",
            json!({"replicas": 3, "resourcesPreset": "u1.large", "size": "50Gi"})
        )
        .unwrap(),
        res(&[("cpu", "12"), ("memory", "48Gi"), ("storage", "150Gi")])
    );
    assert_eq!(
        charge(
            "Postgres",
            json!({"replicas": 1, "resourcesPreset": "small"})
        )
        .unwrap(),
        res(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "10Gi")]),
        "legacy alias keeps its original size"
    );
}

#[test]
fn multi_component_kinds_sum_their_parts() {
    // Kafka: 3 brokers c1.small (1, 1Gi) with 10Gi + 3 ZooKeeper c1.small with 5Gi.
    assert_eq!(
        charge("Kafka", json!({})).unwrap(),
        res(&[("cpu", "6"), ("memory", "6Gi"), ("storage", "45Gi")])
    );
    // ClickHouse: 2x1 t1.small (1, 512Mi) with 10Gi+2Gi, keeper 3 x t1.micro with 1Gi.
    assert_eq!(
        charge("ClickHouse", json!({})).unwrap(),
        res(&[("cpu", "3500m"), ("memory", "1792Mi"), ("storage", "27Gi")])
    );
    assert_eq!(
        charge(
            "ClickHouse",
            json!({"shards": 2, "clickhouseKeeper": {"enabled": false}})
        )
        .unwrap(),
        res(&[("cpu", "4"), ("memory", "2Gi"), ("storage", "48Gi")])
    );
}

#[test]
fn evaluation_failures_name_the_field() {
    let cases = [
        (
            "VMInstance",
            json!({"instanceType": "u9.huge"}),
            "spec.instanceType: instance type \"u9.huge\" does not exist",
        ),
        (
            "VMInstance",
            json!({"instanceType": 4}),
            "spec.instanceType: must be a string, not the number 4",
        ),
        (
            "VMInstance",
            json!({"instanceType": "", "resources": {"cpu": "1.5.3", "memory": "1Gi"}}),
            "spec.resources.cpu: \"1.5.3\" is not a valid quantity",
        ),
        (
            "VMInstance",
            json!({"resources": "big"}),
            "spec.resources: must be an object, not the string \"big\"",
        ),
        (
            "VMDisk",
            json!({"storage": "-5Gi"}),
            "spec.storage: \"-5Gi\" is negative",
        ),
        (
            "VMDisk",
            json!({"storage": "1e400"}),
            "spec.storage: \"1e400\" is too large",
        ),
        (
            "Postgres",
            json!({"replicas": "10"}),
            "spec.replicas: must be an integer, not the string \"10\"",
        ),
        (
            "Postgres",
            json!({"replicas": 2.5}),
            "spec.replicas: must be a whole number, got 2.5",
        ),
        (
            "Postgres",
            json!({"replicas": -1}),
            "spec.replicas: must not be negative, got -1",
        ),
        (
            "Postgres",
            json!({"resourcesPreset": "x9.giant"}),
            "spec.resourcesPreset: unknown resource preset \"x9.giant\"",
        ),
        (
            "Kubernetes",
            json!({"nodeGroups": ["md0"]}),
            "spec.nodeGroups.0: must be an object, not the string \"md0\"",
        ),
        (
            "Kubernetes",
            json!({"nodeGroups": {"md0": {"maxReplicas": 1, "gpus": [{"name": "x", "count": "2"}]}}}),
            "spec.nodeGroups.md0.gpus.0.count: must be an integer, not the string \"2\"",
        ),
        (
            "Postgres",
            json!({"replicas": u64::MAX, "size": "1Ei"}),
            "replicas overflow the reservation",
        ),
    ];
    for (kind, spec, want) in cases {
        let err = charge(kind, spec.clone()).unwrap_err();
        assert!(err.contains(want), "{kind} {spec}: {err:?} lacks {want:?}");
    }
}

// ---- admission decisions ---------------------------------------------------------------

/// tenant-root (unbounded) -> foo (16 cpu, 32Gi, 100Gi storage), holding VMs of 4Gi, 4Gi, 8Gi.
fn foo_pool(extra: Vec<Value>) -> Fixture {
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant(
            "tenant-root",
            "foo",
            json!({"cpu": "16", "memory": "32Gi", "storage": "100Gi"}),
        ),
        application(
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({"instanceType": "u1.medium"}),
        ),
        application("VMInstance", "tenant-foo", "vm2", json!({})),
        application(
            "VMInstance",
            "tenant-foo",
            "vm3",
            json!({"instanceType": "", "resources": {"cpu": 2, "memory": "8Gi"}}),
        ),
    ];
    objects.extend(extra);
    cluster(objects)
}

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
        "VMInstance tenant-foo/db1: memory 32Gi exceeds pool tenant-foo: budget 32Gi, reserved 16Gi by 3 applications, available 16Gi"
    );
}

#[test]
fn host_calls_are_constant_and_ordered() {
    let small = foo_pool(Vec::new());
    create(&small, "Postgres", "tenant-foo", "pg", json!({}));
    let many: Vec<Value> = (0..200)
        .map(|i| {
            application(
                "VMInstance",
                "tenant-foo",
                &format!("vm-x{i}"),
                json!({"instanceType": "u1.nano"}),
            )
        })
        .collect();
    let large = foo_pool(many);
    let verdict = create(&large, "Postgres", "tenant-foo", "pg", json!({}));
    assert!(!verdict.allowed, "200 more VMs fill the pool: {verdict:?}");
    assert_eq!(small.calls(), large.calls());
    assert_eq!(
        large.calls(),
        [
            Query::Definitions,
            Query::Applications,
            Query::InstanceTypes
        ]
    );
    // The HelmReleases are pruned to what the definitions' reservations read.
    assert_eq!(small.masks_asked(), large.masks_asked());
    let masks = large.masks_asked()[1].clone().expect("masks");
    for read in [
        "spec.values.instanceType",
        "spec.values.resources",
        "spec.values.resourcesPreset",
        "spec.values.nodeGroups",
        "spec.values.kafka.replicas",
        "spec.values.resourceQuotas",
        "metadata.labels",
    ] {
        assert!(masks.contains(read), "{read} not in {masks:?}");
    }
    assert!(!masks.contains("spec.values"), "{masks:?}");
}

/// The same cluster, answered whole whatever masks are asked (a host without field masks).
struct Unmasked<'a>(&'a Fixture);

impl Kubernetes for Unmasked<'_> {
    fn list(&self, query: Query, _: Option<&BTreeSet<String>>) -> Result<Vec<u8>, String> {
        self.0.list(query, None)
    }
}

#[test]
fn field_masks_never_change_a_verdict() {
    let k8s = cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant(
            "tenant-root",
            "foo",
            json!({"cpu": "64", "memory": "256Gi", "storage": "2Ti",
            "gpuclass.cozystack.io/devices": "2"}),
        ),
        tenant("tenant-foo", "dev", json!({})),
        tenant(
            "tenant-foo",
            "team",
            json!({"cpu": "4", "memory": 8589934592u64}),
        ),
        application(
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({"instanceType": "u1.large",
            "systemDisk": {"image": "ubuntu", "storage": "20Gi"}, "cloudInit": "#cloud-config"}),
        ),
        application(
            "VMInstance",
            "tenant-foo-dev",
            "gpu",
            json!({"instanceType": "",
            "resources": {"cpu": "2", "memory": "4Gi"}, "gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
        ),
        application(
            "Postgres",
            "tenant-foo",
            "pg",
            json!({"replicas": 3, "resourcesPreset": "u1.medium",
            "size": "50Gi", "users": {"app": {"password": "x"}}}),
        ),
        application(
            "Kubernetes",
            "tenant-foo-dev",
            "k8s",
            json!({"nodeGroups": {
            "md0": {"maxReplicas": 4, "instanceType": "u1.xlarge", "diskSize": "40Gi"},
            "md1": {"maxReplicas": 2, "instanceType": "", "resources": {"cpu": "4", "memory": "8Gi"}}},
            "controlPlane": {"replicas": 3, "apiServer": {"resourcesPreset": "large"}}}),
        ),
        application(
            "Kafka",
            "tenant-foo",
            "kafka",
            json!({"kafka": {"replicas": 5, "size": "100Gi"},
            "zookeeper": {"replicas": 3}}),
        ),
        application(
            "ClickHouse",
            "tenant-foo-team",
            "ch",
            json!({"shards": 2, "replicas": 2,
            "clickhouseKeeper": {"enabled": true}}),
        ),
        // Siblings whose values are malformed: the same problems must surface either way.
        application(
            "VMInstance",
            "tenant-foo",
            "bad-resources",
            json!({"instanceType": "", "resources": "big"}),
        ),
        application(
            "Kubernetes",
            "tenant-foo",
            "bad-groups",
            json!({"nodeGroups": [{"maxReplicas": "many"}]}),
        ),
        application(
            "Postgres",
            "tenant-foo",
            "bad-replicas",
            json!({"replicas": [1]}),
        ),
        application("NATS", "tenant-foo", "nats", json!({"jetstream": "yes"})),
    ]);
    let requests = [
        payload(
            "CREATE",
            "VMInstance",
            "tenant-foo",
            "new",
            json!({"instanceType": "u1.2xlarge"}),
            None,
            json!({}),
        ),
        payload(
            "CREATE",
            "VMInstance",
            "tenant-foo-dev",
            "new",
            json!({"instanceType": "u1.2xlarge"}),
            None,
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "CREATE",
            "Postgres",
            "tenant-foo",
            "huge",
            json!({"replicas": 40, "resourcesPreset": "2xlarge"}),
            None,
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "UPDATE",
            "Kubernetes",
            "tenant-foo-dev",
            "k8s",
            json!({"nodeGroups": {"md0": {"maxReplicas": 40}}}),
            Some(json!({})),
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "CREATE",
            "VMInstance",
            "tenant-foo-team",
            "gpu2",
            json!({"gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
            None,
            json!({"siblingFailure": "warn", "gpuDeviceClasses": {"nvidia.com/AD102GL_L40S": "l40s"}}),
        ),
        payload(
            "UPDATE",
            "Tenant",
            "tenant-foo",
            "team",
            json!({"resourceQuotas": {"cpu": "40"}}),
            Some(json!({"resourceQuotas": {"cpu": "4"}})),
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "CREATE",
            "Tenant",
            "tenant-foo",
            "team2",
            json!({"resourceQuotas": {"cpu": "4"}}),
            None,
            json!({}),
        ),
    ];
    let mut refused_or_warned = 0;
    for request in &requests {
        let masked = validate_payload(request, &k8s);
        let whole = validate_payload(request, &Unmasked(&k8s));
        assert_eq!(masked, whole, "{}", String::from_utf8_lossy(request));
        refused_or_warned += usize::from(!masked.allowed || !masked.warnings.is_empty());
    }
    assert_eq!(
        refused_or_warned,
        requests.len(),
        "the requests exercise rejections and warnings"
    );
    // Every masked run's lists were masked; the unmasked runs asked the same lists whole.
    let asked = k8s.masks_asked();
    assert_eq!(
        asked.iter().filter(|m| m.is_some()).count() * 2,
        asked.len()
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
        "VMInstance tenant-foo/vm1: memory grows by 28Gi to 32Gi, which exceeds pool tenant-foo: budget 32Gi, reserved 12Gi by 2 applications, available 20Gi"
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
    assert_eq!(
        k8s.calls(),
        [
            Query::Definitions,
            Query::Applications,
            Query::InstanceTypes,
            Query::Definitions,
            Query::Applications,
            Query::InstanceTypes
        ]
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
        "VMInstance tenant-a-b/vm: cpu 4 exceeds pool tenant-a: budget 10, 4 carved out by 1 sub-tenant, reserved 4 by 1 application, available 2; \
         memory 16Gi exceeds pool tenant-a: budget 40Gi, 16Gi carved out by 1 sub-tenant, reserved 16Gi by 1 application, available 8Gi"
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
        k8s.calls(),
        [Query::Definitions, Query::Applications],
        "no instance type needed outside a pool"
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
    let k8s = foo_pool(Vec::new());
    let v = create(&k8s, "Bucket", "tenant-foo", "b", json!({}));
    assert_eq!(
        message(&v),
        "Bucket tenant-foo/b cannot be evaluated: ApplicationDefinition bucket declares no spec.reservation, and Bucket is not in the exemptKinds setting"
    );
    let v = with_settings(
        &k8s,
        json!({"exemptKinds": ["Bucket"]}),
        "Bucket",
        "tenant-foo",
        "b",
        json!({}),
    );
    assert!(v.allowed, "{v:?}");
    let v = with_settings(
        &k8s,
        json!({"requireReservation": false}),
        "Bucket",
        "tenant-foo",
        "b",
        json!({}),
    );
    assert!(v.allowed, "{v:?}");
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
fn settings_that_do_not_parse_are_invalid_not_an_error() {
    let r = crate::check_settings(br#"{"siblingFailure": "ignore"}"#);
    assert!(!r.valid);
    assert!(
        r.message
            .unwrap()
            .contains("unknown variant `ignore`, expected `deny` or `warn`")
    );
    let r = crate::check_settings(br#"{"exemptKinds": ["Info"]}"#);
    assert!(r.valid && r.message.is_none());
}

#[test]
fn requests_that_are_not_checked() {
    let k8s = foo_pool(Vec::new());
    for op in ["DELETE", "CONNECT"] {
        let v = validate_payload(
            &payload(
                op,
                "VMInstance",
                "tenant-foo",
                "vm1",
                json!({"instanceType": "u1.4xlarge"}),
                None,
                json!({}),
            ),
            &k8s,
        );
        assert!(v.allowed, "{op}");
    }
    assert!(k8s.calls().is_empty(), "no lookups for DELETE or CONNECT");
    let v = validate_payload(
        &payload(
            "PATCH",
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({}),
            None,
            json!({}),
        ),
        &k8s,
    );
    assert_eq!(message(&v), "unsupported admission operation \"PATCH\"");
    let v = validate_payload(
        &payload(
            "UPDATE",
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({}),
            None,
            json!({}),
        ),
        &k8s,
    );
    assert_eq!(
        message(&v),
        "VMInstance tenant-foo/vm1: an UPDATE without oldObject cannot be checked for growth"
    );
    let v = validate_payload(b"{\"request\": 3}", &k8s);
    assert!(
        message(&v).starts_with("the admission request cannot be read"),
        "{v:?}"
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
        "VMInstance tenant-foo/vm: memory 4Gi exceeds pool tenant-foo: budget 2Gi, reserved 0 by 0 applications, available 2Gi"
    );
}

#[test]
fn a_definition_with_a_broken_schema_is_refused_by_name() {
    let mut broken = fixtures::definition("VMDisk");
    broken["spec"]["application"]["openAPISchema"] = json!("{\"type\": \"object\",");
    let mut objects: Vec<Value> = fixtures::definitions()
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
fn a_host_answer_that_is_not_a_list_is_refused() {
    let k8s = foo_pool(Vec::new()).answering(Query::Applications, Ok(b"[1,2]".to_vec()));
    let v = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert!(message(&v).starts_with("VMDisk tenant-foo/d: cannot read the applications: the HelmRelease list from the cluster is not a valid list"), "{v:?}");
    let k8s = foo_pool(Vec::new()).answering(Query::Definitions, Err("connection refused".into()));
    let v = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert_eq!(
        message(&v),
        "VMDisk tenant-foo/d cannot be evaluated: cannot read the ApplicationDefinitions: connection refused"
    );
}

// ---- GPU budgets -----------------------------------------------------------------------

const A10: &str = "nvidia.com/GA102GL_A10";

fn gpu_settings() -> Settings {
    serde_json::from_value(json!({"gpuDeviceClasses": {A10: "a10"}})).unwrap()
}

#[test]
fn gpu_entries_charge_their_class_and_all_classes() {
    let vm = json!({"instanceType": "u1.large", "gpus": [{"name": A10}, {"name": A10}]});
    assert_eq!(
        charge_with("VMInstance", vm.clone(), &gpu_settings()).unwrap(),
        res(&[
            ("cpu", "2"),
            ("memory", "8Gi"),
            ("a10.gpuclass.cozystack.io/devices", "2"),
            ("gpuclass.cozystack.io/devices", "2")
        ])
    );
    // A device with no known class counts in the all-classes key only.
    assert_eq!(
        charge("VMInstance", vm).unwrap(),
        res(&[
            ("cpu", "2"),
            ("memory", "8Gi"),
            ("gpuclass.cozystack.io/devices", "2")
        ])
    );
    let explicit = json!({"gpus": [{"class": "l40s", "count": 3}]});
    assert_eq!(
        charge("VMInstance", explicit)
            .unwrap()
            .get("l40s.gpuclass.cozystack.io/devices"),
        q("3")
    );
    let bad = json!({"gpus": [{"class": "L40S!"}]});
    assert_eq!(
        charge("VMInstance", bad).unwrap_err(),
        "spec.gpus.0.class: \"L40S!\" is not a valid GPU class (a DNS label)"
    );
}

#[test]
fn gpu_instance_types_reserve_their_devices() {
    let settings: Settings =
        serde_json::from_value(json!({"gpuDeviceClasses": {"nvidia.com/A400": "a400"}})).unwrap();
    assert_eq!(
        charge_with(
            "VMInstance",
            json!({"instanceType": "gn1.2xlarge"}),
            &settings
        )
        .unwrap(),
        res(&[
            ("cpu", "8"),
            ("memory", "32Gi"),
            ("a400.gpuclass.cozystack.io/devices", "1"),
            ("gpuclass.cozystack.io/devices", "1")
        ])
    );
}

#[test]
fn worker_pools_reserve_gpus_times_max_replicas() {
    let nodes = json!({"maxReplicas": 4, "instanceType": "u1.xlarge", "gpus": [{"name": A10}]});
    let charged = charge_with("KubernetesNodes", nodes, &gpu_settings()).unwrap();
    assert_eq!(charged.get("a10.gpuclass.cozystack.io/devices"), q("4"));
    assert_eq!(charged.get("gpuclass.cozystack.io/devices"), q("4"));
    let cluster_spec = json!({"nodeGroups": {"gpu": {"minReplicas": 0, "maxReplicas": 3, "instanceType": "u1.xlarge", "gpus": [{"name": A10}, {"name": A10}]}}});
    let charged = charge_with("Kubernetes", cluster_spec, &gpu_settings()).unwrap();
    assert_eq!(charged.get("a10.gpuclass.cozystack.io/devices"), q("6"));
}

fn gpu_pool() -> Fixture {
    cluster(vec![
        tenant(
            "tenant-root",
            "ml",
            json!({"a10.gpuclass.cozystack.io/devices": "2", "gpuclass.cozystack.io/devices": "3"}),
        ),
        application(
            "VMInstance",
            "tenant-ml",
            "train",
            json!({"gpus": [{"name": A10}]}),
        ),
        application(
            "VMInstance",
            "tenant-ml",
            "other",
            json!({"gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
        ),
    ])
}

fn gpu_create(k8s: &Fixture, name: &str, spec: Value) -> Verdict {
    let settings = json!({"gpuDeviceClasses": {A10: "a10"}});
    validate_payload(
        &payload(
            "CREATE",
            "VMInstance",
            "tenant-ml",
            name,
            spec,
            None,
            settings,
        ),
        k8s,
    )
}

#[test]
fn gpu_budgets_are_enforced_per_class_and_over_all_classes() {
    let k8s = gpu_pool();
    let v = gpu_create(&k8s, "a", json!({"gpus": [{"name": A10}]}));
    assert!(v.allowed, "one a10 left, one device left: {v:?}");
    let v = gpu_create(&k8s, "b", json!({"gpus": [{"name": A10}, {"name": A10}]}));
    assert_eq!(
        message(&v),
        "VMInstance tenant-ml/b: a10.gpuclass.cozystack.io/devices 2 exceeds pool tenant-ml: budget 2, reserved 1 by 1 application, available 1; \
         gpuclass.cozystack.io/devices 2 exceeds pool tenant-ml: budget 3, reserved 2 by 2 applications, available 1"
    );
    let v = gpu_create(&k8s, "c", json!({"gpus": [{"class": "h100", "count": 2}]}));
    assert!(message(&v).starts_with("VMInstance tenant-ml/c: gpuclass.cozystack.io/devices 2 exceeds pool tenant-ml: budget 3"), "{v:?}");
}

#[test]
fn a_gpu_shrink_passes_in_an_over_budget_pool() {
    let k8s = cluster(vec![
        tenant(
            "tenant-root",
            "ml",
            json!({"gpuclass.cozystack.io/devices": "1"}),
        ),
        application(
            "KubernetesNodes",
            "tenant-ml",
            "gpu",
            json!({"maxReplicas": 3, "gpus": [{"name": A10}]}),
        ),
    ]);
    let old = json!({"maxReplicas": 3, "gpus": [{"name": A10}]});
    let shrink = update(
        &k8s,
        "KubernetesNodes",
        "tenant-ml",
        "gpu",
        old.clone(),
        json!({"maxReplicas": 2, "gpus": [{"name": A10}]}),
    );
    assert!(shrink.allowed, "{shrink:?}");
    let grow = update(
        &k8s,
        "KubernetesNodes",
        "tenant-ml",
        "gpu",
        old,
        json!({"maxReplicas": 4, "gpus": [{"name": A10}]}),
    );
    assert!(
        message(&grow).contains(
            "gpuclass.cozystack.io/devices grows by 1 to 4, which exceeds pool tenant-ml: budget 1"
        ),
        "{grow:?}"
    );
}

// ---- the Tenant declaration gate -----------------------------------------------------------

fn tenant_write(
    k8s: &Fixture,
    namespace: &str,
    name: &str,
    quota: Value,
    old: Option<Value>,
) -> Verdict {
    let spec = json!({"resourceQuotas": quota});
    let old = old.map(|o| json!({"resourceQuotas": o}));
    let op = if old.is_some() { "UPDATE" } else { "CREATE" };
    validate_payload(
        &payload(op, "Tenant", namespace, name, spec, old, json!({})),
        k8s,
    )
}

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
        "Tenant tenant-a/y: cpu 6 exceeds pool tenant-a: budget 10, 4 carved out by 1 sub-tenant, reserved 1 by 1 application, available 5; \
         memory 29Gi exceeds pool tenant-a: budget 40Gi, 8Gi carved out by 1 sub-tenant, reserved 4Gi by 1 application, available 28Gi"
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
    assert!(message(&v).contains("memory 16Gi exceeds pool tenant-a: budget 48Gi, reserved 40Gi by 1 application, available 8Gi"), "{v:?}");
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
        "VMInstance tenant-a-y/big: memory 16Gi exceeds pool tenant-a: budget 16Gi, reserved 8Gi by 1 application, available 8Gi"
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
        "VMInstance tenant-a/more: memory 16Gi exceeds pool tenant-a: budget 16Gi, reserved 8Gi by 1 application, available 8Gi"
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
        "Tenant tenant-a/x: memory is no longer declared: what its namespaces hold returns to the pool, which exceeds pool tenant-a: \
         budget 16Gi, reserved 24Gi by 2 applications, available 0 (over budget by 8Gi)"
    );
}
