//! A stock Cozystack installation, with `settings: {}` and with the settings `deploy/` ships
//! (both charge through the built-in blocks of src/reservations.yaml): the definitions carry no
//! reservation block, a tenant runs what the tenant chart renders with its modules on and one
//! application of every other kind at its chart's defaults. Every one of them is charged (no
//! sibling fails), writes that fit pass and writes that do not are refused with the figures.

use rstest::rstest;
use serde_json::{Value, json};

use crate::common::*;

/// The kinds a tenant writes (Tenant and the modules aside), at their chart defaults.
const KINDS: &[&str] = &[
    "BootBox",
    "Bucket",
    "ClickHouse",
    "ComputePlane",
    "ExternalDNS",
    "FoundationDB",
    "HTTPCache",
    "Harbor",
    "Kafka",
    "Kubernetes",
    "KubernetesNodes",
    "MariaDB",
    "MongoDB",
    "NATS",
    "OpenBAO",
    "OpenSearch",
    "Postgres",
    "Qdrant",
    "RabbitMQ",
    "Redis",
    "TCPBalancer",
    "VMDisk",
    "VMInstance",
    "VPN",
    "VirtualPrivateCloud",
];

/// The modules of tenant-acme's values, as the tenant chart creates them.
const MODULES: &[(&str, &str)] = &[
    ("Info", "info"),
    ("Etcd", "etcd"),
    ("Ingress", "ingress"),
    ("Monitoring", "monitoring"),
    ("SeaweedFS", "seaweedfs"),
    ("Gateway", "gateway"),
];

fn acme_spec(quota: Value) -> Value {
    json!({"etcd": true, "ingress": true, "monitoring": true, "seaweedfs": true, "gateway": true,
           "resourceQuotas": quota})
}

fn objects(quota: Value) -> Vec<Value> {
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant_with("tenant-root", "acme", acme_spec(quota)),
    ];
    for (kind, name) in MODULES {
        objects.push(module(kind, "tenant-acme", name));
    }
    for kind in KINDS {
        // Named apart from the modules (a module named like a stored application exists).
        objects.push(application(
            kind,
            "tenant-acme",
            &format!("my{}", kind.to_lowercase()),
            json!({}),
        ));
    }
    objects
}

/// What tenant-acme holds, kind by kind, by the shipped blocks on the stock definitions.
fn held(given: &Value) -> Resources {
    let k8s = stock_cluster(Vec::new());
    let settings = settings_from(given);
    let context = Context::new(&settings, &k8s).unwrap();
    let mut total = Resources::new();
    let modules = MODULES
        .iter()
        .map(|(kind, _)| *kind)
        .filter(|k| *k != "Gateway");
    for kind in KINDS.iter().copied().chain(modules) {
        let charge = context
            .charge_kind(kind, &json!({}))
            .unwrap_or_else(|e| panic!("{kind} at its defaults: {e}"))
            .unwrap_or_default();
        assert!(
            !charge.is_empty() || ["Info", "VirtualPrivateCloud"].contains(&kind),
            "{kind} charges nothing"
        );
        total.add_all(&charge).unwrap();
    }
    total
}

fn write(k8s: &Fixture, given: &Value, kind: &str, name: &str, spec: Value) -> Verdict {
    validate_payload(
        &payload(
            "CREATE",
            kind,
            "tenant-acme",
            name,
            spec,
            None,
            given.clone(),
        ),
        k8s,
    )
}

#[rstest]
#[case::no_settings(json!({}))]
#[case::shipped_settings(test_kit::deploy_settings())]
fn the_shipped_settings_charge_a_realistic_tenant(#[case] given: Value) {
    let held = held(&given);
    // The tenant's quota leaves 2 cpu, 4Gi and 50Gi free.
    let plus = |key: &str, extra: &str| {
        let total = held.get(key).checked_add(q(extra)).unwrap();
        json!(total.to_canonical(if key == "cpu" {
            tenant_reservation_policy::quantity::Notation::Decimal
        } else {
            tenant_reservation_policy::quantity::Notation::Binary
        }))
    };
    let quota = json!({"cpu": plus("cpu", "2"), "memory": plus("memory", "4Gi"), "storage": plus("storage", "50Gi")});
    let k8s = stock_cluster(objects(quota));

    // A default Postgres (1 cpu, 512Mi, 2 x 10Gi) fits.
    let fits = write(&k8s, &given, "Postgres", "orders", json!({}));
    assert!(fits.allowed && fits.warnings.is_empty(), "{fits:?}");

    // Three u1.large replicas (12 cpu, 48Gi) do not; the figures are the pool's.
    let over = write(
        &k8s,
        &given,
        "Postgres",
        "big",
        json!({"replicas": 3, "resourcesPreset": "u1.large"}),
    );
    let message = message(&over);
    let reserved = held
        .get("cpu")
        .to_canonical(tenant_reservation_policy::quantity::Notation::Decimal);
    assert!(
        message.starts_with(&format!(
            "Postgres tenant-acme/big: cpu 12 exceeds pool tenant-acme by 10: budget {}, reserved {reserved} by {} applications (largest: ",
            plus("cpu", "2").as_str().unwrap(),
            // Gateway is exempt; Info, VirtualPrivateCloud and VMDisk hold no cpu.
            KINDS.len() + MODULES.len() - 4,
        )),
        "{message}"
    );
    assert!(
        message.contains("memory 48Gi exceeds pool tenant-acme by 44Gi"),
        "{message}"
    );

    // A module switched on when the quota is this tight does not fit either.
    let computeplane = validate_payload(
        &payload(
            "UPDATE",
            "Tenant",
            "tenant-root",
            "acme",
            {
                let mut on = acme_spec(json!({"cpu": "1000"}));
                on["computeplane"] = json!(true);
                on
            },
            Some(acme_spec(json!({"cpu": "1000"}))),
            given.clone(),
        ),
        &k8s,
    );
    assert!(
        computeplane.allowed,
        "1000 cpu covers a ComputePlane: {computeplane:?}"
    );
    let tight = validate_payload(
        &payload(
            "UPDATE",
            "Tenant",
            "tenant-root",
            "acme",
            {
                let mut on = acme_spec(json!({"cpu": plus("cpu", "2")}));
                on["computeplane"] = json!(true);
                on
            },
            Some(acme_spec(json!({"cpu": plus("cpu", "2")}))),
            given.clone(),
        ),
        &k8s,
    );
    assert!(
        message_of(&tight)
            .contains("by the modules it switches on (ComputePlane tenant-acme/computeplane)"),
        "{tight:?}"
    );
}

fn message_of(v: &Verdict) -> &str {
    v.message.as_deref().unwrap_or("")
}
