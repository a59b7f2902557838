//! The test kit of the integration tests: real Cozystack clusters, requests and the
//! policy's answers, through the crate's public API only.

use kubewarden_policy_sdk::settings::Validatable;
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

/// What one application of `kind` with `spec` reserves, by the real definition, with
/// `settings: {}` and with the settings the install ships (`charge_over`).
pub fn charge(kind: &str, spec: Value) -> Result<Resources, String> {
    charge_over(kind, spec, &json!({}))
}

/// What `kind` reserves with `spec` under the settings document `given`: given alone (over
/// `settings: {}`, as `kwctl scaffold manifest` writes it) and patched over the settings
/// `deploy/` ships (as a kustomization over the install patches `/spec/settings/<field>`)
/// must charge the same on a stock cluster.
pub fn charge_over(kind: &str, spec: Value, given: &Value) -> Result<Resources, String> {
    let alone = charge_with(kind, spec.clone(), &settings_from(given));
    let installed = charge_in(
        stock_cluster(Vec::new()),
        kind,
        &spec,
        &settings_from(&shipped_with(given)),
    );
    assert_eq!(
        alone, installed,
        "{kind} {spec}: settings {given} charge differently alone and over deploy/'s settings"
    );
    alone
}

/// Settings as the policy takes them: parsed, then validated (a failure panics, naming why).
pub fn settings_from(given: &Value) -> Settings {
    let settings: Settings =
        serde_json::from_value(given.clone()).unwrap_or_else(|e| panic!("settings {given}: {e}"));
    settings
        .validate()
        .unwrap_or_else(|e| panic!("settings {given}: {e}"));
    settings
}

/// The settings of `deploy/clusteradmissionpolicy.yaml`, with each field of `patch` replacing
/// the shipped one.
pub fn shipped_with(patch: &Value) -> Value {
    let mut settings = test_kit::deploy_settings();
    for (field, value) in patch.as_object().expect("a settings patch is an object") {
        settings[field] = value.clone();
    }
    settings
}

/// What `kind` reserves with `spec`, by the definition's own block; the same charge (or
/// refusal) must come from the built-in block on a stock definition, which carries none.
pub fn charge_with(kind: &str, spec: Value, settings: &Settings) -> Result<Resources, String> {
    let declared = charge_in(cluster(Vec::new()), kind, &spec, settings);
    let built_in = charge_in(stock_cluster(Vec::new()), kind, &spec, settings);
    assert_eq!(
        declared, built_in,
        "{kind} {spec}: the definition's block and the built-in one charge differently"
    );
    declared
}

fn charge_in(
    k8s: Fixture,
    kind: &str,
    spec: &Value,
    settings: &Settings,
) -> Result<Resources, String> {
    let context = Context::new(settings, &k8s).unwrap();
    context
        .charge_kind(kind, spec)
        .map(Option::unwrap_or_default)
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
    settings_from(&gpu_classes())
}

/// The settings document of `gpu_settings`.
pub fn gpu_classes() -> Value {
    json!({"gpuDeviceClasses": {A10: "a10"}})
}
