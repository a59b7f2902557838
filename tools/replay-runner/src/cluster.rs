//! `--cluster-state`: the Kubernetes objects of a multi-document YAML file, loaded into a
//! [`host_sim::ObjectStore`], which answers the policy's lookups as the host would (see
//! `host_sim::answer`).
//!
//! Documents that are empty are skipped; a `kind: List` document (`kubectl get -o yaml`) is
//! expanded into its items. Errors name the document (1-based) an object came from.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use host_sim::{ObjectStore, StoreError};
use serde::Deserialize;
use serde_json::Value;

/// Loads a cluster-state file.
pub fn from_file(path: &Path) -> Result<ObjectStore> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("Cannot open cluster state file {}", path.display()))?;
    from_yaml(&text).with_context(|| format!("Cannot load cluster state file {}", path.display()))
}

/// Loads the objects of a multi-document YAML text.
pub fn from_yaml(text: &str) -> Result<ObjectStore> {
    let mut docs = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(doc)
            .with_context(|| format!("document #{} is not valid YAML", i + 1))?;
        match value {
            Value::Null => {}
            Value::Object(_) => docs.push((i + 1, value)),
            _ => bail!("document #{} is not a Kubernetes object", i + 1),
        }
    }
    // The document each object comes from, for the errors.
    let mut numbers = Vec::new();
    let mut objects = Vec::new();
    for (n, doc) in docs {
        if doc.get("kind").and_then(Value::as_str) == Some("List") {
            let items = doc
                .get("items")
                .and_then(Value::as_array)
                .ok_or_else(|| anyhow!("document #{n}: a List without items"))?;
            numbers.extend(std::iter::repeat_n(n, items.len()));
            objects.extend(items.iter().cloned());
        } else {
            numbers.push(n);
            objects.push(doc);
        }
    }
    ObjectStore::new(objects).map_err(|e| match e {
        StoreError::Object { index, problem } => anyhow!("document #{}: {problem}", numbers[index]),
        scope => anyhow!(scope),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_sim::ListQuery;

    const STATE: &str = r#"
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kafka-b
  namespace: tenant-b
  labels: {apps.cozystack.io/application.kind: Kafka}
spec: {values: {kafka: {replicas: 3}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kafka-a
  namespace: tenant-a
  resourceVersion: "42"
  labels: {apps.cozystack.io/application.kind: Kafka, env: prod}
spec: {values: {kafka: {replicas: 1}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: etcd
  namespace: tenant-a
  labels: {apps.cozystack.io/application.kind: Etcd}
---
---
apiVersion: v1
kind: List
items:
- apiVersion: cozystack.io/v1alpha1
  kind: ApplicationDefinition
  metadata: {name: kafka}
- apiVersion: cozystack.io/v1alpha1
  kind: ApplicationDefinition
  metadata: {name: etcd}
"#;

    #[test]
    fn documents_and_lists_are_loaded() {
        let s = from_yaml(STATE).unwrap();
        assert_eq!(s.len(), 5);
        let defs = s
            .list(
                &ListQuery::all("cozystack.io/v1alpha1", "ApplicationDefinition"),
                None,
            )
            .unwrap();
        assert_eq!(defs["items"].as_array().unwrap().len(), 2);
        assert_eq!(defs["metadata"]["resourceVersion"], "42");
    }

    #[test]
    fn crd_declares_scope_and_bad_fixtures_are_rejected() {
        let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1}]
"#;
        let s = from_yaml(crd).unwrap();
        assert!(!s.is_namespaced("example.com/v1", "Widget"));
        assert!(s.is_namespaced("example.com/v1", "Gadget"));
        assert!(!s.is_namespaced("v1", "Namespace"));

        let mixed = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n";
        assert!(from_yaml(mixed).is_err());
        let dup = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n";
        assert_eq!(
            format!("{:#}", from_yaml(dup).unwrap_err()),
            "document #2: duplicate object v1/ConfigMap x/a"
        );
        assert!(from_yaml("apiVersion: v1\nkind: ConfigMap\n").is_err());
        assert!(from_yaml("- 1\n").is_err());
        // Objects of a List are named by the List's document; empty documents count.
        let list = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {namespace: x}}\n";
        assert_eq!(
            from_yaml(list).unwrap_err().to_string(),
            "document #3: v1/ConfigMap without metadata.name"
        );
    }
}
