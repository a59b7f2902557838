//! A fixture cluster: Kubernetes objects from a multi-document YAML file, queried the way the
//! API server (through policy-evaluator's host capabilities) would answer a policy.
//!
//! * `list` answers `list_resources_all` / `list_resources_by_namespace` with
//!   `{"apiVersion": <apiVersion>, "items": [...], "kind": "<Kind>List",
//!   "metadata": {"resourceVersion": "<n>"}}`, items ordered by (namespace, name). `n` is the
//!   largest numeric `metadata.resourceVersion` in the file, or 1.
//! * `get` answers `get_resource` with the object, or policy-evaluator's not-found error.
//!
//! Documents that are empty are skipped; a `kind: List` document (`kubectl get -o yaml`) is
//! expanded into its items. Whether a kind is namespaced is taken, in this order, from a
//! `CustomResourceDefinition` in the file, from its objects (all with a namespace, or all
//! without), or from the built-in list of cluster-scoped kinds below; a kind with no objects and
//! no CRD is otherwise taken as namespaced (and answered with an empty list).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::selector::{FieldSelector, LabelSelector};
use field_mask::{FieldMask, strip_for_list};

/// Cluster-scoped kinds known without a CRD in the fixture.
pub const CLUSTER_SCOPED_KINDS: &[&str] = &[
    "APIService",
    "ApplicationDefinition",
    "CertificateSigningRequest",
    "ClusterRole",
    "ClusterRoleBinding",
    "CSIDriver",
    "CSINode",
    "CustomResourceDefinition",
    "IngressClass",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PriorityClass",
    "RuntimeClass",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VirtualMachineClusterInstancetype",
    "VirtualMachineClusterPreference",
    "VolumeAttachment",
];

/// Why a query got no object list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// An answer a real cluster gives (not found, wrong scope): it goes back to the policy as a
    /// host-call error, and is recorded as `type: Error`.
    Api(String),
    /// A query the fixture cannot answer faithfully (malformed or unsupported selector): the run
    /// fails.
    Unanswerable(String),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Api(m) | QueryError::Unanswerable(m) => f.write_str(m),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
}

#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    objects: BTreeMap<Key, Value>,
    /// (apiVersion, kind) → namespaced, from CRDs and objects.
    scopes: BTreeMap<(String, String), bool>,
    resource_version: String,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

impl ClusterState {
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("Cannot open cluster state file {}", path.display()))?;
        Self::from_yaml(&text)
            .with_context(|| format!("Cannot load cluster state file {}", path.display()))
    }

    pub fn from_yaml(text: &str) -> Result<Self> {
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
        let mut objects = Vec::new();
        for (n, doc) in docs {
            if doc.get("kind").and_then(Value::as_str) == Some("List") {
                let items = doc
                    .get("items")
                    .and_then(Value::as_array)
                    .ok_or_else(|| anyhow!("document #{n}: a List without items"))?;
                objects.extend(items.iter().cloned().map(|o| (n, o)));
            } else {
                objects.push((n, doc));
            }
        }
        Self::from_objects(objects)
    }

    fn from_objects(objects: Vec<(usize, Value)>) -> Result<Self> {
        let mut state = ClusterState::default();
        let mut seen_scope: BTreeMap<(String, String), BTreeSet<bool>> = BTreeMap::new();
        let mut max_rv: u64 = 0;
        for (n, obj) in objects {
            let api_version = str_at(&obj, &["apiVersion"])
                .ok_or_else(|| anyhow!("document #{n}: object without apiVersion"))?
                .to_string();
            let kind = str_at(&obj, &["kind"])
                .ok_or_else(|| anyhow!("document #{n}: object without kind"))?
                .to_string();
            let name = str_at(&obj, &["metadata", "name"])
                .ok_or_else(|| {
                    anyhow!("document #{n}: {api_version}/{kind} without metadata.name")
                })?
                .to_string();
            let namespace = str_at(&obj, &["metadata", "namespace"])
                .unwrap_or("")
                .to_string();
            if let Some(rv) =
                str_at(&obj, &["metadata", "resourceVersion"]).and_then(|s| s.parse().ok())
            {
                max_rv = max_rv.max(rv);
            }
            if kind == "CustomResourceDefinition" {
                state.add_crd_scopes(&obj);
            }
            seen_scope
                .entry((api_version.clone(), kind.clone()))
                .or_default()
                .insert(!namespace.is_empty());
            let key = Key {
                api_version,
                kind,
                namespace,
                name,
            };
            if state.objects.contains_key(&key) {
                bail!(
                    "document #{n}: duplicate object {}/{} {}{}",
                    key.api_version,
                    key.kind,
                    if key.namespace.is_empty() {
                        String::new()
                    } else {
                        format!("{}/", key.namespace)
                    },
                    key.name
                );
            }
            state.objects.insert(key, obj);
        }
        for ((api_version, kind), scopes) in seen_scope {
            if scopes.len() > 1 {
                bail!("{api_version}/{kind}: some objects have a namespace and some do not");
            }
            let namespaced = scopes.contains(&true);
            if let Some(declared) = state.scopes.get(&(api_version.clone(), kind.clone())) {
                if *declared != namespaced {
                    bail!(
                        "{api_version}/{kind}: its CustomResourceDefinition says {} but its objects {}",
                        if *declared { "Namespaced" } else { "Cluster" },
                        if namespaced {
                            "have a namespace"
                        } else {
                            "have none"
                        }
                    );
                }
            } else {
                state.scopes.insert((api_version, kind), namespaced);
            }
        }
        state.resource_version = max_rv.max(1).to_string();
        Ok(state)
    }

    fn add_crd_scopes(&mut self, crd: &Value) {
        let (Some(group), Some(kind)) = (
            str_at(crd, &["spec", "group"]),
            str_at(crd, &["spec", "names", "kind"]),
        ) else {
            return;
        };
        let namespaced = str_at(crd, &["spec", "scope"]) != Some("Cluster");
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in versions {
            if let Some(version) = v.get("name").and_then(Value::as_str) {
                self.scopes
                    .insert((format!("{group}/{version}"), kind.to_string()), namespaced);
            }
        }
    }

    /// Whether objects of this kind live in namespaces.
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> bool {
        self.scopes
            .get(&(api_version.to_string(), kind.to_string()))
            .copied()
            .unwrap_or_else(|| !CLUSTER_SCOPED_KINDS.contains(&kind))
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// `list_resources_all` (namespace `None`) and `list_resources_by_namespace`.
    pub fn list(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, QueryError> {
        let labels = LabelSelector::parse(label_selector.unwrap_or("")).map_err(|e| {
            QueryError::Unanswerable(format!("label selector {label_selector:?}: {e}"))
        })?;
        let fields = FieldSelector::parse(field_selector.unwrap_or("")).map_err(|e| {
            QueryError::Unanswerable(format!("field selector {field_selector:?}: {e}"))
        })?;
        if namespace.is_some() && !self.is_namespaced(api_version, kind) {
            // policy-evaluator's wording.
            return Err(QueryError::Api(format!(
                "resource {api_version}/{kind} is cluster wide. Cannot search for it inside of a namespace"
            )));
        }
        let mask = FieldMask::new(field_masks);
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|(k, _)| k.api_version == api_version && k.kind == kind)
            .filter(|(k, _)| namespace.is_none_or(|ns| k.namespace == ns))
            .filter(|(k, _)| fields.matches(&k.name, &k.namespace))
            .filter(|(_, obj)| labels.matches(&object_labels(obj)))
            .map(|(_, obj)| {
                let mut obj = obj.clone();
                strip_for_list(&mut obj);
                match &mask {
                    Some(m) => m.apply(&obj),
                    None => obj,
                }
            })
            .collect();
        Ok(json!({
            "apiVersion": api_version,
            "kind": format!("{kind}List"),
            "metadata": {"resourceVersion": self.resource_version},
            "items": items,
        }))
    }

    /// `get_resource`: the object as stored. The host neither applies field masks to it nor
    /// strips it (policy-evaluator reads it with a plain GET).
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<Value, QueryError> {
        let namespaced = self.is_namespaced(api_version, kind);
        let ns = if namespaced {
            namespace.ok_or_else(|| {
                QueryError::Api(format!(
                    "Resource {api_version}/{kind} is namespaced, but no namespace was provided"
                ))
            })?
        } else {
            // A cluster-wide resource is looked up without its namespace, like kube's `Api::all`.
            ""
        };
        let key = Key {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        match self.objects.get(&key) {
            Some(obj) => Ok(obj.clone()),
            None => Err(QueryError::Api(not_found_message(
                api_version,
                kind,
                name,
                namespace,
            ))),
        }
    }
}

/// policy-evaluator's error for a `get_resource` of a missing object (what kwctl records and what
/// policy-server gives the policy).
pub fn not_found_message(
    api_version: &str,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> String {
    format!("Cannot find {api_version}/{kind} named '{name}' inside of namespace '{namespace:?}'")
}

fn object_labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m: &Map<String, Value>| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn names(list: &Value) -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                format!(
                    "{}/{}",
                    i["metadata"]["namespace"].as_str().unwrap_or(""),
                    i["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn lists_are_sorted_typed_and_filtered() {
        let s = ClusterState::from_yaml(STATE).unwrap();
        assert_eq!(s.len(), 5);
        let all = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                None,
                None,
                None,
                None,
            )
            .unwrap();
        assert_eq!(all["kind"], "HelmReleaseList");
        assert_eq!(all["apiVersion"], "helm.toolkit.fluxcd.io/v2");
        assert_eq!(all["metadata"], json!({"resourceVersion": "42"}));
        assert_eq!(
            names(&all),
            ["tenant-a/etcd", "tenant-a/kafka-a", "tenant-b/kafka-b"]
        );

        let kafka = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                None,
                Some("apps.cozystack.io/application.kind=Kafka"),
                None,
                None,
            )
            .unwrap();
        assert_eq!(names(&kafka), ["tenant-a/kafka-a", "tenant-b/kafka-b"]);

        let ns = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                Some("tenant-a"),
                Some("apps.cozystack.io/application.kind in (Kafka,Redis),env"),
                None,
                None,
            )
            .unwrap();
        assert_eq!(names(&ns), ["tenant-a/kafka-a"]);

        let by_field = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                None,
                None,
                Some("metadata.namespace=tenant-b"),
                None,
            )
            .unwrap();
        assert_eq!(names(&by_field), ["tenant-b/kafka-b"]);

        let defs = s
            .list(
                "cozystack.io/v1alpha1",
                "ApplicationDefinition",
                None,
                None,
                None,
                None,
            )
            .unwrap();
        assert_eq!(names(&defs), ["/etcd", "/kafka"]);

        // A kind with no objects is an empty list, not an error.
        let none = s.list("v1", "ConfigMap", None, None, None, None).unwrap();
        assert_eq!(none["items"], json!([]));
        assert_eq!(none["kind"], "ConfigMapList");
    }

    #[test]
    fn field_masks_apply_to_items() {
        let s = ClusterState::from_yaml(STATE).unwrap();
        let masks: BTreeSet<String> = ["metadata.name", "spec.values.kafka.replicas"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let list = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                Some("tenant-b"),
                None,
                None,
                Some(&masks),
            )
            .unwrap();
        assert_eq!(
            list["items"],
            json!([{
                "apiVersion": "helm.toolkit.fluxcd.io/v2",
                "kind": "HelmRelease",
                "metadata": {"name": "kafka-b", "namespace": "tenant-b", "labels": {"apps.cozystack.io/application.kind": "Kafka"}, "annotations": {}, "managedFields": []},
                "spec": {"values": {"kafka": {"replicas": 3}}}
            }])
        );
    }

    #[test]
    fn get_and_not_found() {
        let s = ClusterState::from_yaml(STATE).unwrap();
        let obj = s
            .get(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                "etcd",
                Some("tenant-a"),
            )
            .unwrap();
        assert_eq!(obj["metadata"]["name"], "etcd");
        assert!(
            obj["metadata"].get("managedFields").is_none(),
            "get is not stripped"
        );
        let err = s
            .get(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                "etcd",
                Some("tenant-b"),
            )
            .unwrap_err();
        assert_eq!(
            err,
            QueryError::Api(
                "Cannot find helm.toolkit.fluxcd.io/v2/HelmRelease named 'etcd' inside of namespace 'Some(\"tenant-b\")'".into()
            )
        );
        let err = s.get("v1", "Namespace", "tenant-x", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cannot find v1/Namespace named 'tenant-x' inside of namespace 'None'"
        );
        // Cluster-scoped objects are found whatever namespace is passed.
        assert!(
            s.get(
                "cozystack.io/v1alpha1",
                "ApplicationDefinition",
                "kafka",
                Some("x"),
            )
            .is_ok()
        );
        let err = s
            .get("helm.toolkit.fluxcd.io/v2", "HelmRelease", "etcd", None)
            .unwrap_err();
        assert!(
            matches!(err, QueryError::Api(m) if m.contains("is namespaced, but no namespace was provided"))
        );
    }

    #[test]
    fn scope_errors_and_unsupported_selectors() {
        let s = ClusterState::from_yaml(STATE).unwrap();
        let err = s
            .list(
                "cozystack.io/v1alpha1",
                "ApplicationDefinition",
                Some("tenant-a"),
                None,
                None,
                None,
            )
            .unwrap_err();
        assert!(matches!(err, QueryError::Api(m) if m.contains("is cluster wide")));
        let err = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                None,
                None,
                Some("spec.chart=x"),
                None,
            )
            .unwrap_err();
        assert!(
            matches!(err, QueryError::Unanswerable(m) if m.contains("field label not supported: spec.chart"))
        );
        let err = s
            .list(
                "helm.toolkit.fluxcd.io/v2",
                "HelmRelease",
                None,
                Some("a in (b"),
                None,
                None,
            )
            .unwrap_err();
        assert!(matches!(err, QueryError::Unanswerable(_)));
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
        let s = ClusterState::from_yaml(crd).unwrap();
        assert!(!s.is_namespaced("example.com/v1", "Widget"));
        assert!(s.is_namespaced("example.com/v1", "Gadget"));
        assert!(!s.is_namespaced("v1", "Namespace"));

        let mixed = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n";
        assert!(ClusterState::from_yaml(mixed).is_err());
        let dup = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n";
        assert!(format!("{:#}", ClusterState::from_yaml(dup).unwrap_err()).contains("duplicate"));
        assert!(ClusterState::from_yaml("apiVersion: v1\nkind: ConfigMap\n").is_err());
        assert!(ClusterState::from_yaml("- 1\n").is_err());
    }
}
