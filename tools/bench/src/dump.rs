//! `--dump`: a generated cluster written out for a real API server (`make bench-cluster`).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cluster::Cluster;

/// Writes `c` for a real API server to `dir`/pool-<pool>/: what the API server sets itself
/// (uid, resourceVersion, ...) is dropped from every object.
pub fn dump(c: &Cluster, dir: &std::path::Path) -> Result<()> {
    let out = dir.join(format!("pool-{}", c.shape.pool));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut by_kind: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut namespaces = std::collections::BTreeSet::new();
    for object in &c.objects {
        let mut object = object.clone();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "managedFields",
            ] {
                metadata.remove(field);
            }
            if let Some(ns) = metadata.get("namespace").and_then(Value::as_str) {
                namespaces.insert(ns.to_string());
            }
        }
        if let Some(o) = object.as_object_mut() {
            o.remove("status");
        }
        let kind = object["kind"].as_str().unwrap_or("unknown").to_lowercase();
        by_kind.entry(kind).or_default().push(object);
    }
    let write = |name: &str, value: &Value| -> Result<()> {
        let path = out.join(name);
        std::fs::write(&path, serde_json::to_vec(value)?)
            .with_context(|| format!("writing {}", path.display()))
    };
    for (kind, objects) in &by_kind {
        write(&format!("{kind}.json"), &Value::from(objects.clone()))?;
    }
    let namespaces: Vec<Value> = namespaces
        .iter()
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
        .collect();
    write("namespace.json", &Value::from(namespaces))?;
    for (name, payload) in [("create", &c.create), ("update", &c.update)] {
        let payload: Value = serde_json::from_slice(payload)?;
        write(
            &format!("{name}.json"),
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": payload["request"]}),
        )?;
        write("settings.json", &payload["settings"])?;
    }
    write(
        "shape.json",
        &json!({"cluster": c.shape.cluster, "pool": c.shape.pool,
                "pool_namespaces": c.pool_namespaces.len(),
                "tenants": c.tenant_count(), "create_namespace": c.create_namespace}),
    )?;
    eprintln!(
        "dump: {} ({} objects, pool {} in {} namespaces)",
        out.display(),
        c.objects.len(),
        c.shape.pool,
        c.pool_namespaces.len()
    );
    Ok(())
}
