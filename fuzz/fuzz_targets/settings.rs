//! Settings on any JSON: `check_settings` (what `validate_settings` answers) never panics, and
//! settings that parse are then used to decide real requests, which never panics either. Settings
//! it calls valid must also be readable inside a `validate` payload.
//!
//! Input: byte 0 picks the request, the rest is the settings document.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tenant_reservation_policy::settings::Settings;
use test_kit::{self, Fixture, application, payload, tenant};
use tenant_reservation_policy::{check_settings, validate_payload};

/// Writes whose outcome settings change: device classes, presets, aliases, exemptions,
/// requireReservation, siblingFailure.
fn requests() -> &'static [Value] {
    static REQUESTS: OnceLock<Vec<Value>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        let request = |kind: &str, ns: &str, spec: Value, old: Option<Value>| {
            let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
            let body = payload(operation, kind, ns, "fuzz", spec, old, json!({}));
            serde_json::from_slice::<Value>(&body).expect("a payload")["request"].take()
        };
        vec![
            request("VMInstance", "tenant-foo", json!({"gpus": [{"name": "nvidia.com/GA102GL_A10", "count": 2}]}), None),
            request("Postgres", "tenant-foo", json!({"replicas": 3, "resourcesPreset": "custom.large"}), None),
            request("Postgres", "tenant-foo", json!({"resourcesPreset": "u1.medium"}), Some(json!({"resourcesPreset": "t1.nano"}))),
            request("Bucket", "tenant-foo", json!({}), None),
            request("VMDisk", "tenant-legacy", json!({"storage": "1Gi"}), None),
            request("VMInstance", "tenant-legacy", json!({}), None),
            request("Tenant", "tenant-foo", json!({"resourceQuotas": {"requests.cpu": "2", "limits.memory": "4Gi", "a10.gpuclass.cozystack.io/devices": "1"}}), None),
            request("KubernetesNodes", "tenant-foo", json!({"maxReplicas": 3, "instanceType": "gn1.2xlarge"}), None),
        ]
    })
}

thread_local! {
    /// The cluster, built once per thread.
    static CLUSTER: &'static Fixture = {
        let fixture = test_kit::cluster(vec![
                tenant("tenant-root", "root", json!({})),
                tenant(
                    "tenant-root",
                    "foo",
                    json!({"requests.cpu": "16", "limits.memory": "32Gi", "storage": "100Gi",
                           "gpuclass.cozystack.io/devices": "4", "a10.gpuclass.cozystack.io/devices": "2"}),
                ),
                tenant("tenant-foo", "cap", json!({"limits.cpu": "4"})),
                application("VMInstance", "tenant-foo", "vm1", json!({"gpus": [{"name": "nvidia.com/GA102GL_A10"}]})),
                application("Postgres", "tenant-foo", "pg1", json!({"resourcesPreset": "custom.large"})),
                tenant("tenant-root", "legacy", json!({"memory": "8Gi"})),
                application("VMInstance", "tenant-legacy", "old", json!({"instanceType": "gone.large"})),
                application("Bucket", "tenant-legacy", "b", json!({})),
            ]);
        Box::leak(Box::new(fixture))
    };
}

fuzz_target!(|data: &[u8]| {
    let [pick, document @ ..] = data else {
        return;
    };
    let answer = check_settings(document);
    assert_eq!(answer.valid, answer.message.is_none(), "{answer:?}");
    if serde_json::from_slice::<Settings>(document).is_err() {
        assert!(
            !answer.valid,
            "settings that do not parse were called valid"
        );
        return;
    }
    // Parsed (valid or not, as a policy-server that skipped validation would pass them on).
    let Ok(raw) = serde_json::from_slice::<&RawValue>(document) else {
        return;
    };
    let request = &requests()[usize::from(*pick) % requests().len()];
    let body = format!(r#"{{"request":{request},"settings":{}}}"#, raw.get());
    let cluster = CLUSTER.with(|c| *c);
    cluster.forget_calls();
    let verdict = validate_payload(body.as_bytes(), cluster);
    assert_eq!(verdict.allowed, verdict.message.is_none(), "{verdict:?}");
    if answer.valid {
        assert!(
            !verdict
                .message
                .as_deref()
                .unwrap_or("")
                .starts_with("the admission request cannot be read"),
            "valid settings that a validate payload cannot carry: {verdict:?}"
        );
    }
});
