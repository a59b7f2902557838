//! The test kit of the integration tests: real Cozystack clusters, requests and the
//! policy's answers, through the crate's public API only.

use serde_json::{Value, json};
pub use tenant_reservation_policy::cluster::{Lookup, Source};
pub use tenant_reservation_policy::quantity::Quantity;
pub use tenant_reservation_policy::settings::Settings;
pub use tenant_reservation_policy::{
    Context, Resources, Verdict, check_settings, validate_payload,
};
pub use test_kit::{
    self, Fixture, application, cluster, definition, module, payload, release, stock_cluster,
    tenant, tenant_with,
};

pub fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap()
}

pub fn res(pairs: &[(&str, &str)]) -> Resources {
    pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
}

/// What one application of `kind` with `spec` reserves, by the real definition.
pub fn charge(kind: &str, spec: Value) -> Result<Resources, String> {
    charge_with(kind, spec, &Settings::default())
}

/// What `kind` reserves with `spec`, by the definition's own block; the same charge (or
/// refusal) must come from the built-in block on a stock definition, which carries none.
pub fn charge_with(kind: &str, spec: Value, settings: &Settings) -> Result<Resources, String> {
    let by = |k8s: Fixture| {
        let context = Context::new(settings, &k8s).unwrap();
        context
            .charge_kind(kind, &spec)
            .map(Option::unwrap_or_default)
    };
    let declared = by(cluster(Vec::new()));
    let built_in = by(stock_cluster(Vec::new()));
    assert_eq!(
        declared, built_in,
        "{kind} {spec}: the definition's block and the built-in one charge differently"
    );
    declared
}

pub fn create(k8s: &Fixture, kind: &str, ns: &str, name: &str, spec: Value) -> Verdict {
    validate_payload(
        &payload("CREATE", kind, ns, name, spec, None, json!({})),
        k8s,
    )
}

pub fn update(k8s: &Fixture, kind: &str, ns: &str, name: &str, old: Value, new: Value) -> Verdict {
    validate_payload(
        &payload("UPDATE", kind, ns, name, new, Some(old), json!({})),
        k8s,
    )
}

pub fn with_settings(
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

pub fn message(v: &Verdict) -> &str {
    v.message.as_deref().unwrap_or("")
}

/// tenant-root (unbounded) -> foo (16 cpu, 32Gi, 100Gi storage), holding VMs of 4Gi, 4Gi, 8Gi.
pub fn foo_pool(extra: Vec<Value>) -> Fixture {
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

pub fn tenant_write(
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

/// The device name Cozystack's VMInstance and worker pools use for an A10.
pub const A10: &str = "nvidia.com/GA102GL_A10";

pub fn gpu_settings() -> Settings {
    serde_json::from_value(json!({"gpuDeviceClasses": {A10: "a10"}})).unwrap()
}
