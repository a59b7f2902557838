//! The reservation evaluator and the whole policy (`validate_payload`) on arbitrary application
//! values, against the real Cozystack definitions and instance types and a few quota pools.
//!
//! Input: byte 0 picks the kind, byte 1 the shape of the request, the rest is JSON: the values
//! (`spec`) written; for an UPDATE, a JSON list `[new, old]` gives both versions.
//!
//! Every input is charged (definitions prepared once, so this runs fast); with bit 0x80 of
//! byte 1 it is also decided end to end, CREATE and UPDATE (and, with bit 0x08, stored as a
//! sibling), which reads the cluster's lists each time as the policy does. Checked: no
//! panic; a rejection always says why; an object that cannot be charged is never admitted
//! into a pool; one that charges nothing always is; an UPDATE that changes nothing never
//! exceeds a pool.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tenant_reservation_policy::Resources;
use tenant_reservation_policy::settings::Settings;
use test_kit::{self, Fixture, application, payload, tenant};
use tenant_reservation_policy::validate_payload;
use tenant_reservation_policy::{Context, Verdict};

/// Byte 0 of an input, modulo the length: the corpus files depend on this order.
const KINDS: &[&str] = &[
    "VMInstance",
    "VMDisk",
    "KubernetesNodes",
    "Kubernetes",
    "Postgres",
    "MariaDB",
    "MongoDB",
    "Redis",
    "RabbitMQ",
    "Qdrant",
    "OpenBAO",
    "Ingress",
    "TCPBalancer",
    "VPN",
    "Etcd",
    "NATS",
    "OpenSearch",
    "ClickHouse",
    "Kafka",
    "Tenant",
    "Bucket",
    "Unicorn",
];

/// Byte 1 bits 0-2: the namespace written to. The first five are in a pool.
const NAMESPACES: &[&str] = &[
    "tenant-foo",
    "tenant-foo-kid",
    "tenant-zero",
    "tenant-legacy",
    "tenant-edge",
    "tenant-free",
    "tenant-root",
    "default",
];

/// The pools of test_data/bad-inputs/cluster.yaml, smaller: foo (16 cpu, 32Gi, 100Gi, 4 GPUs)
/// with an unbounded child and a bounded one; zero (all 0); legacy (a member that does not
/// evaluate); edge (budget 0 against the largest carve-out); free (no pool).
fn pools() -> Vec<Value> {
    vec![
        tenant("tenant-root", "root", json!({})),
        tenant(
            "tenant-root",
            "foo",
            json!({"cpu": "16", "requests.memory": "32Gi", "storage": "100Gi",
                   "gpuclass.cozystack.io/devices": "4", "a10.gpuclass.cozystack.io/devices": "2"}),
        ),
        tenant("tenant-foo", "kid", json!({})),
        tenant("tenant-foo", "cap", json!({"cpu": "4", "memory": "8Gi"})),
        application(
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({"instanceType": "u1.medium"}),
        ),
        application("Postgres", "tenant-foo-kid", "pg1", json!({})),
        application(
            "KubernetesNodes",
            "tenant-foo",
            "np",
            json!({"maxReplicas": 2, "gpus": [{"name": "nvidia.com/GA102GL_A10"}]}),
        ),
        tenant(
            "tenant-root",
            "zero",
            json!({"cpu": "0", "memory": "0", "storage": "0"}),
        ),
        tenant("tenant-root", "legacy", json!({"memory": "8Gi"})),
        application(
            "VMInstance",
            "tenant-legacy",
            "old",
            json!({"instanceType": "gone.large"}),
        ),
        tenant("tenant-root", "edge", json!({"memory": "0"})),
        tenant(
            "tenant-edge",
            "huge",
            json!({"memory": "170141183460469231731687303715884105727n"}),
        ),
        application(
            "VMInstance",
            "tenant-edge",
            "tiny",
            json!({"instanceType": "", "resources": {"cpu": "1", "memory": "1n"}}),
        ),
        tenant("tenant-root", "free", json!({})),
    ]
}

thread_local! {
    /// The cluster, built once per thread; a request's lookups are answered from it as the
    /// host answers them.
    static CLUSTER: &'static Fixture = Box::leak(Box::new(test_kit::cluster(pools())));
}

/// The cluster with one more stored object.
fn stored_with(object: Value) -> Fixture {
    let mut cluster = CLUSTER.with(|c| Fixture::clone(c));
    cluster.add(object);
    cluster
}

fn settings(shape: u8) -> Value {
    json!({
        "siblingFailure": if shape & 0x40 != 0 { "warn" } else { "deny" },
        "gpuDeviceClasses": {"nvidia.com/GA102GL_A10": "a10"},
    })
}

const IN_A_POOL: usize = 5;

thread_local! {
    /// One context for every charge: the definitions are read and prepared once.
    static CHARGING: Context<'static> = {
        let settings: &'static Settings = Box::leak(Box::new(
            serde_json::from_value(settings(0)).expect("valid settings"),
        ));
        Context::new(settings, CLUSTER.with(|c| *c)).expect("valid settings")
    };
}

/// What the values reserve, as the policy charges the object under admission.
fn charge(kind: &str, values: &Value) -> Result<Option<Resources>, String> {
    CHARGING.with(|context| context.charge_kind(kind, values))
}

fn check(verdict: &Verdict) {
    match &verdict.message {
        Some(m) => assert!(!verdict.allowed && !m.is_empty(), "{verdict:?}"),
        None => assert!(verdict.allowed, "a rejection without a reason: {verdict:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let [kind, shape, rest @ ..] = data else {
        return;
    };
    let Ok(values) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let kind = KINDS[usize::from(*kind) % KINDS.len()];
    let at = usize::from(shape & 0x07);
    let ns = NAMESPACES[at];
    let charged = charge(kind, &values);
    if let Ok(Some(r)) = &charged {
        assert_eq!(
            charge(kind, &values),
            Ok(Some(r.clone())),
            "a charge is deterministic"
        );
    }
    if let Value::Array(pair) = &values
        && pair.len() == 2
    {
        let _ = charge(kind, &pair[0]);
        let _ = charge(kind, &pair[1]);
    }
    if shape & 0x80 == 0 {
        return;
    }
    let no_stored = CLUSTER.with(|c| *c);
    no_stored.forget_calls();

    // CREATE of the values.
    let verdict = validate_payload(
        &payload(
            "CREATE",
            kind,
            ns,
            "fuzz",
            values.clone(),
            None,
            settings(*shape),
        ),
        no_stored,
    );
    check(&verdict);
    if kind != "Tenant" {
        match &charged {
            Err(e) if at < IN_A_POOL => {
                assert!(
                    !verdict.allowed,
                    "{kind} that cannot be charged ({e}) was admitted into {ns}"
                )
            }
            Ok(None) => {}
            Ok(Some(r)) if r.is_empty() => {
                assert!(
                    verdict.allowed,
                    "{kind} that reserves nothing was refused: {verdict:?}"
                )
            }
            _ => {}
        }
    }

    // UPDATE: [new, old], or the values against themselves (which never grows). As in a real
    // cluster, the object being updated is stored in its old version.
    let (new, old) = match &values {
        Value::Array(pair) if pair.len() == 2 => (pair[0].clone(), pair[1].clone()),
        _ => (values.clone(), values.clone()),
    };
    let verdict = validate_payload(
        &payload(
            "UPDATE",
            kind,
            ns,
            "fuzz",
            new.clone(),
            Some(old.clone()),
            settings(*shape),
        ),
        &stored_with(application(kind, ns, "fuzz", old.clone())),
    );
    check(&verdict);
    if new == old {
        let message = verdict.message.as_deref().unwrap_or("");
        assert!(
            !message.contains("exceeds pool") && !message.contains("is less than"),
            "an unchanged {kind} was refused for its size: {verdict:?}"
        );
    }

    // The values stored as a sibling in the pool, while a small disk is written next to it.
    if shape & 0x08 != 0 {
        let verdict = validate_payload(
            &payload(
                "CREATE",
                "VMDisk",
                ns,
                "disk",
                json!({"storage": "1Gi"}),
                None,
                settings(*shape),
            ),
            &stored_with(application(kind, ns, "stored", values)),
        );
        check(&verdict);
    }
});
