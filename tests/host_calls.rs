//! The policy's host calls: how many, in what order, with which field masks, and what a
//! misbehaving host gets.

use serde_json::{Value, json};

mod common;
use common::*;

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
    let unmasked = k8s.unmasked();
    let mut refused_or_warned = 0;
    for request in &requests {
        let masked = validate_payload(request, &k8s);
        let whole = validate_payload(request, &unmasked);
        assert_eq!(masked, whole, "{}", String::from_utf8_lossy(request));
        refused_or_warned += usize::from(!masked.allowed || !masked.warnings.is_empty());
    }
    assert_eq!(
        refused_or_warned,
        requests.len(),
        "the requests exercise rejections and warnings"
    );
    // Every run asked for masked lists; the unmasked host was asked the same and ignored them.
    let asked = k8s.masks_asked();
    assert!(asked.iter().all(Option::is_some), "{asked:?}");
    assert_eq!(unmasked.masks_asked(), asked);
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
        "VMDisk tenant-foo/d: cannot read the ApplicationDefinitions: connection refused"
    );
}
