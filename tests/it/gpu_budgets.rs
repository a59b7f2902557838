//! GPU budgets: per-class and all-class keys, on VMs, instance types and worker pools.

use serde_json::{Value, json};

use crate::common::*;

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
    // The chart renders one device per entry, `deviceName: <name>`: a `count` or `class` the
    // entry carries reaches nothing, so it changes nothing.
    let decorated =
        json!({"instanceType": "u1.large", "gpus": [{"name": A10, "count": 0, "class": "l40s"}]});
    assert_eq!(
        charge_with("VMInstance", decorated, &gpu_settings())
            .unwrap()
            .get("a10.gpuclass.cozystack.io/devices"),
        q("1")
    );
    let nameless = json!({"gpus": [{"count": 2}]});
    assert_eq!(
        charge("VMInstance", nameless).unwrap_err(),
        "spec.gpus.0.name: must name the device to attach"
    );
}

/// The contract's other GPU list form, `{class, count, name}` entries, for a kind whose chart
/// renders counts (an out-of-tree definition), through the `reservations` setting.
#[test]
fn gpu_entries_with_counts_charge_their_class() {
    let settings: Settings = serde_json::from_value(json!({
        "gpuDeviceClasses": {A10: "a10"},
        "reservations": {"VMInstance": {"instanceType": "instanceType", "gpus": "gpus"}},
    }))
    .unwrap();
    let k8s = stock_cluster(Vec::new());
    let context = Context::new(&settings, &k8s).unwrap();
    let charged = |gpus: Value| context.charge_kind("VMInstance", &json!({"gpus": gpus}));
    let explicit = charged(json!([{"class": "l40s", "count": 3}, {"name": A10}]))
        .unwrap()
        .unwrap();
    assert_eq!(explicit.get("l40s.gpuclass.cozystack.io/devices"), q("3"));
    assert_eq!(explicit.get("a10.gpuclass.cozystack.io/devices"), q("1"));
    assert_eq!(explicit.get("gpuclass.cozystack.io/devices"), q("4"));
    assert_eq!(
        charged(json!([{"class": "L40S!"}])).unwrap_err(),
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
        "VMInstance tenant-ml/b: a10.gpuclass.cozystack.io/devices 2 exceeds pool tenant-ml by 1: budget 2, reserved 1 by 1 application (largest: VMInstance tenant-ml/train 1), available 1; gpuclass.cozystack.io/devices 2 exceeds pool tenant-ml by 1: budget 3, reserved 2 by 2 applications (largest: VMInstance tenant-ml/other 1, VMInstance tenant-ml/train 1), available 1"
    );
    let h100 = json!({"name": "nvidia.com/GH100_H100"});
    let v = gpu_create(&k8s, "c", json!({"gpus": [h100.clone(), h100]}));
    assert!(message(&v).starts_with("VMInstance tenant-ml/c: gpuclass.cozystack.io/devices 2 exceeds pool tenant-ml by 1: budget 3"), "{v:?}");
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
            "gpuclass.cozystack.io/devices grows by 1 to 4, which exceeds pool tenant-ml by "
        ),
        "{grow:?}"
    );
}
