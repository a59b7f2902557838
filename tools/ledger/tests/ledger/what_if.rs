//! `--what-if` gives the policy's own verdict and figures: on the e2e scenarios (accepted and
//! refused, CREATE, UPDATE, DELETE, sibling failures), as an AdmissionReview and as a bare
//! manifest, and through the binaries' exit codes.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_json::{Value, json};
use tenant_reservation_policy::validate_payload;
use test_kit::Fixture;

use crate::common::*;
use ledger::cli::{LedgerArgs, Output};
use ledger::{state, what_if};

const SCENARIOS: &[(&str, bool)] = &[
    ("01-vm-create-fits", true),
    ("02-vm-create-exceeds", false),
    ("03-vm-resize-up-fits", true),
    ("04-vm-resize-up-exceeds", false),
    ("05-vm-resize-down-over-budget", true),
    ("08-postgres-preset-replicas-exceeds", false),
    ("09-postgres-preset-fits", true),
    ("12-nested-bounded-child-own-pool", false),
    ("18-kubernetes-nodes-exceeds", false),
    ("25-sibling-failure-deny", false),
    ("26-sibling-failure-warn", true),
    ("29-delete-accepted", true),
    ("35-gpu-vm-class-budget-exceeded", false),
];

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The policy's verdict on a scenario, on a fixture built apart from the ledger's readers.
fn policy_verdict(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("cluster.yaml")).unwrap();
    let objects: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde_json::to_value(serde_yaml::Value::deserialize(doc).unwrap()).unwrap())
        .filter(|v| !v.is_null())
        .collect();
    let review = read_json(&dir.join("request.json"));
    let settings = read_json(&dir.join("settings.json"));
    let payload = json!({"request": review["request"], "settings": settings});
    let verdict = validate_payload(
        &serde_json::to_vec(&payload).unwrap(),
        &Fixture::new(objects),
    );
    json!({"allowed": verdict.allowed, "message": verdict.message, "warnings": verdict.warnings})
}

fn what_if_args(dir: &Path, request: &Path) -> LedgerArgs {
    LedgerArgs {
        what_if: Some(request.to_path_buf()),
        output: Output::Json,
        ..on_state(&dir.join("cluster.yaml"), &dir.join("settings.json"))
    }
}

fn decided(args: &LedgerArgs) -> (u8, Value) {
    let ran = ran(args);
    assert!(ran.code < 2, "{}", ran.err);
    (ran.code, serde_json::from_str(&ran.out).unwrap())
}

fn verdict_of(answer: &Value) -> Value {
    json!({"allowed": answer["allowed"], "message": answer["message"], "warnings": answer["warnings"]})
}

#[test]
fn an_admission_review_gets_the_policys_verdict() {
    for (name, allowed) in SCENARIOS {
        let dir = scenario(name);
        let (code, answer) = decided(&what_if_args(&dir, &dir.join("request.json")));
        let expected = policy_verdict(&dir);
        assert_eq!(verdict_of(&answer), expected, "{name}");
        assert_eq!(answer["allowed"], *allowed, "{name}");
        assert_eq!(code, if *allowed { 0 } else { 1 }, "{name}");
    }
}

#[test]
fn a_refusal_carries_the_policys_figures() {
    let dir = scenario("02-vm-create-exceeds");
    let (_, answer) = decided(&what_if_args(&dir, &dir.join("request.json")));
    let refused: Vec<&Value> = answer["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["fits"] == false)
        .collect();
    assert!(!refused.is_empty(), "{answer:#}");
    let message = answer["message"].as_str().unwrap();
    for record in refused {
        assert!(
            message.contains(record["pool"].as_str().unwrap()),
            "{message}"
        );
        assert!(
            message.contains(record["key"].as_str().unwrap()),
            "{message}"
        );
    }
}

/// A bare manifest is the CREATE or UPDATE the API server would send: the same verdict as
/// the scenario's own request, the stored version found by namespace, kind and name.
#[test]
fn a_bare_manifest_is_a_create_or_an_update_of_the_stored_one() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, _) in SCENARIOS {
        let dir = scenario(name);
        let review = read_json(&dir.join("request.json"));
        let operation = review["request"]["operation"].as_str().unwrap();
        if operation == "DELETE" {
            continue;
        }
        let manifest = tmp.path().join(format!("{name}.json"));
        std::fs::write(&manifest, review["request"]["object"].to_string()).unwrap();
        let (_, answer) = decided(&what_if_args(&dir, &manifest));
        assert_eq!(answer["operation"], operation, "{name}");
        assert_eq!(verdict_of(&answer), policy_verdict(&dir), "{name}");
    }
}

#[test]
fn a_helm_release_manifest_is_the_application_it_stores() {
    let example = example();
    let store = state::load(&example.join("cluster.yaml")).unwrap();
    let mut release = store
        .objects()
        .find(|o| o["metadata"]["name"] == "vm-instance-vm1")
        .unwrap()
        .clone();
    release["spec"]["values"]["instanceType"] = json!("u1.2xlarge");
    let settings = json!({});
    let k8s = state::Stored(store);
    let from_release = what_if::decide(&release, &settings, &k8s).unwrap();
    let application = json!({
        "apiVersion": "apps.cozystack.io/v1alpha1", "kind": "VMInstance",
        "metadata": {"name": "vm1", "namespace": "tenant-foo"},
        "spec": release["spec"]["values"],
    });
    let from_application = what_if::decide(&application, &settings, &k8s).unwrap();
    assert_eq!(from_release.request, from_application.request);
    assert_eq!(from_release.request.operation, "UPDATE");
    assert_eq!(from_release.to_json(), from_application.to_json());
    // u1.medium to u1.2xlarge: memory grows by 28Gi, more than the pool's 16Gi left.
    assert!(!from_release.verdict.allowed);
    let memory = from_release
        .verdict
        .records
        .iter()
        .find(|r| r.key == "memory")
        .unwrap();
    assert_eq!(
        tenant_reservation_policy::keys::show("memory", memory.growth),
        "28Gi"
    );
}

#[test]
fn what_is_not_an_application_write_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: tenant-foo}\n",
            "v1 ConfigMap is not a write the policy decides",
        ),
        (
            "apiVersion: apps.cozystack.io/v1alpha1\nkind: VMDisk\nmetadata: {name: d}\n",
            "the manifest names no metadata.namespace",
        ),
        (
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: r, namespace: tenant-foo}\n",
            "the HelmRelease stores no application: no label apps.cozystack.io/application.kind",
        ),
    ];
    for (i, (manifest, expected)) in cases.into_iter().enumerate() {
        let path = tmp.path().join(format!("{i}.yaml"));
        std::fs::write(&path, manifest).unwrap();
        fails_with(&what_if_args(&example(), &path), expected);
    }
}

/// The binaries' exit codes: 0 fits, 1 refused, 2 error; the plugin is the same command.
#[test]
fn exit_codes_of_the_command_and_the_kubectl_plugin() {
    for (bin, prefix) in [
        (env!("CARGO_BIN_EXE_tenant-reservation"), vec!["ledger"]),
        (env!("CARGO_BIN_EXE_kubectl-cozystack_reservations"), vec![]),
    ] {
        for (name, code) in [("01-vm-create-fits", 0), ("02-vm-create-exceeds", 1)] {
            let dir = scenario(name);
            let status = Command::new(bin)
                .args(&prefix)
                .arg("--state")
                .arg(dir.join("cluster.yaml"))
                .arg("--settings")
                .arg(dir.join("settings.json"))
                .arg("--what-if")
                .arg(dir.join("request.json"))
                .output()
                .unwrap();
            assert_eq!(status.status.code(), Some(code), "{bin} {name}");
            let out = String::from_utf8(status.stdout).unwrap();
            let verdict = if code == 0 {
                "fits: accepted"
            } else {
                "does not fit: refused"
            };
            assert!(
                out.starts_with(&format!("VMInstance tenant-foo/db1 (CREATE): {verdict}")),
                "{out}"
            );
        }
        let missing = Command::new(bin)
            .args(&prefix)
            .args(["--state", "/nonexistent/cluster.yaml"])
            .output()
            .unwrap();
        assert_eq!(missing.status.code(), Some(2), "{bin}");
    }
}
