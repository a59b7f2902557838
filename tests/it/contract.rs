//! The reservation contract in general, on the real definitions: what a value that cannot be
//! charged is refused with (the field named, the reason said). Each kind's charges are in the
//! `charges_*` tables.

use serde_json::json;

use crate::common::*;

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
            json!({"instanceType": "", "resources": {"cpu": "-1.0", "sockets": 1, "memory": "1Gi"}}),
            "spec.resources.cpu: must not be negative: the chart's int64 reads \"-1.0\" as -1",
        ),
        (
            "Postgres",
            json!({"resources": "big"}),
            "spec.resources: must be an object, not the string \"big\"",
        ),
        (
            "Postgres",
            json!({"resources": {"cpu": "1.5.3"}}),
            "spec.resources.cpu: \"1.5.3\" is not a valid quantity",
        ),
        (
            "Postgres",
            json!({"resources": {"cpu": 0}}),
            "spec.resources.cpu: an explicit 0 renders a container without a cpu limit",
        ),
        (
            "Postgres",
            json!({"resources": {"nvidia.com/gpu": 1}}),
            "spec.resources.nvidia.com/gpu: \"nvidia.com/gpu\" is an extended resource the chart sets as a container limit",
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
            json!({"nodeGroups": {"md0": {"maxReplicas": 1, "gpus": [{"count": 2}]}}}),
            "spec.nodeGroups.md0.gpus.0.name: must name the device to attach",
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

#[test]
fn a_gpu_device_in_a_resources_map_is_charged_as_devices() {
    let settings: Settings =
        serde_json::from_value(json!({"gpuDeviceClasses": {"nvidia.com/gpu": "any"}})).unwrap();
    let charged = charge_with(
        "Postgres",
        json!({"replicas": 2, "resources": {"nvidia.com/gpu": 1}}),
        &settings,
    )
    .unwrap();
    assert_eq!(charged.get("gpuclass.cozystack.io/devices"), q("2"));
    assert_eq!(charged.get("any.gpuclass.cozystack.io/devices"), q("2"));
    let half = charge_with(
        "Postgres",
        json!({"resources": {"nvidia.com/gpu": "500m"}}),
        &settings,
    )
    .unwrap_err();
    assert!(half.contains("must be a whole number of devices"), "{half}");
}
