//! Every HelmRelease of every cluster state under `test_data/` (the e2e scenarios, the
//! example, the bad inputs) has what Flux's real CRD requires: `spec.interval` and a chart
//! source (`spec.chart.spec.{chart,sourceRef}` or `spec.chartRef`). The full check against the
//! real CRDs on a real API server is `scripts/check-cluster-states.sh`; this one runs anywhere.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

fn cluster_files() -> Vec<PathBuf> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data");
    let mut files = vec![
        data.join("example/cluster.yaml"),
        data.join("bad-inputs/cluster.yaml"),
    ];
    for entry in std::fs::read_dir(data.join("scenarios")).expect("test_data/scenarios") {
        let path = entry
            .expect("a directory entry")
            .path()
            .join("cluster.yaml");
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// What the HelmRelease CRD (`helm.toolkit.fluxcd.io/v2`) would refuse in `hr`.
fn crd_faults(hr: &Value) -> Vec<&'static str> {
    let spec = &hr["spec"];
    let mut faults = Vec::new();
    if !spec["interval"].is_string() {
        faults.push("spec.interval is required");
    }
    let chart = &spec["chart"]["spec"];
    let from_chart = chart["chart"].is_string()
        && chart["sourceRef"]["kind"].is_string()
        && chart["sourceRef"]["name"].is_string();
    let from_ref = spec["chartRef"]["kind"].is_string() && spec["chartRef"]["name"].is_string();
    if !(from_chart || from_ref) {
        faults.push(
            "a chart source (spec.chart.spec.{chart,sourceRef} or spec.chartRef) is required",
        );
    }
    faults
}

#[test]
fn the_check_sees_a_missing_interval_and_source() {
    let bare = serde_json::json!({"spec": {"chart": {"spec": {"chart": "nats"}}}});
    assert_eq!(crd_faults(&bare).len(), 2);
}

#[test]
fn every_helmrelease_in_the_cluster_states_is_valid_for_flux() {
    let files = cluster_files();
    assert!(
        files.len() > 60,
        "only {} cluster states found",
        files.len()
    );
    let mut bad = Vec::new();
    let mut releases = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a cluster.yaml");
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let v = serde_json::to_value(serde_yaml::Value::deserialize(doc).expect("YAML"))
                .expect("JSON-compatible");
            if v["kind"] != "HelmRelease" {
                continue;
            }
            releases += 1;
            for fault in crd_faults(&v) {
                bad.push(format!(
                    "{}: {}: {fault}",
                    file.display(),
                    v["metadata"]["name"]
                ));
            }
        }
    }
    assert!(releases > 100, "only {releases} HelmReleases found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
