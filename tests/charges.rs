//! What each kind reserves, by its real definition and the proposed reservation block.

use serde_json::json;

mod common;
use common::*;

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
