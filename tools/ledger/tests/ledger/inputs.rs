//! The three inputs give the same ledger: the cluster-state YAML, and a kubectl dump of it
//! with what the API server adds to each object (uid, resourceVersion, managedFields, the
//! last-applied annotation, status), as JSON and as YAML.

use serde_json::{Value, json};
use tenant_reservation_policy::ledger::{Ledger, ledger};

use crate::common::*;
use ledger::{settings, state};

/// The ledger of the cluster in `path`, with the example's settings.
pub fn ledger_of(path: &std::path::Path) -> Ledger {
    let settings =
        settings::parse(&settings::load(Some(&example().join("settings.json"))).unwrap()).unwrap();
    ledger(&settings, &state::Stored(state::load(path).unwrap()), 3).unwrap()
}

/// The example's objects as `kubectl get ... -A -o json` prints them.
pub fn kubectl_dump() -> Value {
    let store = state::load(&example().join("cluster.yaml")).unwrap();
    let items: Vec<Value> = store
        .objects()
        .enumerate()
        .map(|(i, object)| {
            let mut object = object.clone();
            let metadata = &mut object["metadata"];
            metadata["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
            metadata["resourceVersion"] = json!(format!("{}", 1000 + i));
            metadata["creationTimestamp"] = json!("2026-11-02T09:00:00Z");
            metadata["generation"] = json!(1);
            metadata["managedFields"] =
                json!([{"manager": "cozystack-api", "operation": "Update"}]);
            metadata["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
                json!("{\"a\":\"large copy of the object\"}");
            if object["kind"] == "HelmRelease" {
                object["status"]["observedGeneration"] = json!(1);
            }
            object
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
}

#[test]
fn a_kubectl_dump_gives_the_state_files_ledger() {
    let from_state = ledger_of(&example().join("cluster.yaml"));
    assert!(!from_state.pools.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let json_dump = dir.path().join("dump.json");
    std::fs::write(
        &json_dump,
        serde_json::to_vec_pretty(&kubectl_dump()).unwrap(),
    )
    .unwrap();
    assert_eq!(ledger_of(&json_dump), from_state);
    let yaml_dump = dir.path().join("dump.yaml");
    std::fs::write(&yaml_dump, serde_yaml::to_string(&kubectl_dump()).unwrap()).unwrap();
    assert_eq!(ledger_of(&yaml_dump), from_state);
}

#[test]
fn a_dump_of_the_wrong_resources_says_what_to_dump() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump.json");
    let mut only_definitions = kubectl_dump();
    only_definitions["items"]
        .as_array_mut()
        .unwrap()
        .retain(|o| o["kind"] == "ApplicationDefinition");
    std::fs::write(&dump, only_definitions.to_string()).unwrap();
    let args = ledger::cli::LedgerArgs {
        dump: Some(dump.clone()),
        ..Default::default()
    };
    let ran = ran(&args);
    assert_eq!(ran.code, 0, "{}", ran.err);
    assert!(
        ran.err.contains("holds no helm.toolkit.fluxcd.io/v2 HelmRelease: dump the cluster with `kubectl get applicationdefinitions,helmreleases,virtualmachineclusterinstancetypes -A -o json`"),
        "{}",
        ran.err
    );
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("missing.yaml", None, "Cannot open cluster state file"),
        ("list.yaml", Some("- 1\n"), "is not a Kubernetes object"),
        (
            "dup.yaml",
            Some(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
            ),
            "duplicate object v1/ConfigMap x/a",
        ),
    ];
    for (name, text, expected) in cases {
        let path = dir.path().join(name);
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        fails_with(&on_state(&path, &example().join("settings.json")), expected);
    }
    let settings = dir.path().join("settings.yaml");
    std::fs::write(&settings, "siblingFailure: maybe\n").unwrap();
    fails_with(
        &on_state(&example().join("cluster.yaml"), &settings),
        "error: invalid settings: unknown variant `maybe`",
    );
}
