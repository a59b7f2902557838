//! The object store: the Kubernetes objects a simulated cluster holds, and whether each kind is
//! namespaced.
//!
//! Every object must have `apiVersion`, `kind` and `metadata.name` (and `metadata.namespace`
//! when its kind is namespaced); two objects with the same (apiVersion, kind, namespace, name)
//! are refused. Whether a kind is namespaced is taken, in this order, from a
//! `CustomResourceDefinition` in the store (the last one for that kind wins), from its objects
//! (all with a namespace, or all without), or from [`CLUSTER_SCOPED_KINDS`]; a kind with no
//! objects and no CRD is otherwise taken as namespaced. A kind whose objects mix the two, or
//! contradict their CRD, is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

/// Cluster-scoped kinds known without a CRD in the store.
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

/// The order in which lists give their items.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// By (namespace, name): deterministic, as the replay-runner has always listed.
    #[default]
    Sorted,
    /// In the order the objects were given to the store (a test that shuffles the cluster).
    AsGiven,
}

/// Why one object cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectProblem {
    NoApiVersion,
    NoKind,
    NoName {
        api_version: String,
        kind: String,
    },
    Duplicate {
        api_version: String,
        kind: String,
        namespace: String,
        name: String,
    },
}

impl fmt::Display for ObjectProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectProblem::NoApiVersion => f.write_str("object without apiVersion"),
            ObjectProblem::NoKind => f.write_str("object without kind"),
            ObjectProblem::NoName { api_version, kind } => {
                write!(f, "{api_version}/{kind} without metadata.name")
            }
            ObjectProblem::Duplicate {
                api_version,
                kind,
                namespace,
                name,
            } => {
                write!(f, "duplicate object {api_version}/{kind} ")?;
                if !namespace.is_empty() {
                    write!(f, "{namespace}/")?;
                }
                f.write_str(name)
            }
        }
    }
}

/// Why a set of objects is not a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The object at `index` (0-based, in the order given; for [`ObjectStore::insert`], the
    /// number of objects already stored).
    Object {
        index: usize,
        problem: ObjectProblem,
    },
    /// Some objects of the kind have a namespace and some do not.
    MixedScope { api_version: String, kind: String },
    /// The kind's CRD says `Namespaced` (`crd_namespaced`) and its objects have none, or the
    /// reverse.
    ScopeConflict {
        api_version: String,
        kind: String,
        crd_namespaced: bool,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Object { index, problem } => write!(f, "object #{}: {problem}", index + 1),
            StoreError::MixedScope { api_version, kind } => write!(
                f,
                "{api_version}/{kind}: some objects have a namespace and some do not"
            ),
            StoreError::ScopeConflict {
                api_version,
                kind,
                crd_namespaced,
            } => write!(
                f,
                "{api_version}/{kind}: its CustomResourceDefinition says {} but its objects {}",
                if *crd_namespaced {
                    "Namespaced"
                } else {
                    "Cluster"
                },
                if *crd_namespaced {
                    "have none"
                } else {
                    "have a namespace"
                }
            ),
        }
    }
}

impl std::error::Error for StoreError {}

/// (apiVersion, kind, namespace, name); `namespace` is `""` for cluster-scoped objects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

type KindKey = (String, String);

/// Kubernetes objects, queried as the Kubewarden host answers a policy (see [`crate::answer`]).
#[derive(Debug, Clone, Default)]
pub struct ObjectStore {
    /// In the order given.
    objects: Vec<(Key, Value)>,
    /// Key -> position in `objects`.
    index: BTreeMap<Key, usize>,
    /// (apiVersion, kind) -> namespaced, declared by CRDs.
    declared: BTreeMap<KindKey, bool>,
    /// (apiVersion, kind) -> whether its objects have a namespace.
    seen: BTreeMap<KindKey, BTreeSet<bool>>,
    max_resource_version: u64,
    order: Order,
}

pub(crate) fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

impl ObjectStore {
    /// A store of `objects`, or the first reason they are not a cluster: an object's problem
    /// first (in the order given), else a scope problem (in (apiVersion, kind) order).
    pub fn new(objects: impl IntoIterator<Item = Value>) -> Result<Self, StoreError> {
        let mut store = ObjectStore::default();
        for object in objects {
            store.add(object)?;
        }
        store.check_scopes()?;
        Ok(store)
    }

    /// The same store, listing in `order`.
    pub fn with_order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    pub fn set_order(&mut self, order: Order) {
        self.order = order;
    }

    pub fn order(&self) -> Order {
        self.order
    }

    /// Adds one object, as if it had been given last to [`ObjectStore::new`]; on error the
    /// store is unchanged.
    pub fn insert(&mut self, object: Value) -> Result<(), StoreError> {
        let saved = (
            self.declared.clone(),
            self.seen.clone(),
            self.max_resource_version,
        );
        self.add(object)?;
        if let Err(e) = self.check_scopes() {
            let (key, _) = self.objects.pop().expect("just added");
            self.index.remove(&key);
            (self.declared, self.seen, self.max_resource_version) = saved;
            return Err(e);
        }
        Ok(())
    }

    /// Checks and stores one object; scopes are checked by [`Self::check_scopes`].
    fn add(&mut self, object: Value) -> Result<(), StoreError> {
        let index = self.objects.len();
        let problem = |problem| StoreError::Object { index, problem };
        let api_version = str_at(&object, &["apiVersion"])
            .ok_or_else(|| problem(ObjectProblem::NoApiVersion))?
            .to_string();
        let kind = str_at(&object, &["kind"])
            .ok_or_else(|| problem(ObjectProblem::NoKind))?
            .to_string();
        let name = str_at(&object, &["metadata", "name"])
            .ok_or_else(|| {
                problem(ObjectProblem::NoName {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                })
            })?
            .to_string();
        let namespace = str_at(&object, &["metadata", "namespace"])
            .unwrap_or("")
            .to_string();
        let key = Key {
            api_version,
            kind,
            namespace,
            name,
        };
        if self.index.contains_key(&key) {
            return Err(problem(ObjectProblem::Duplicate {
                api_version: key.api_version,
                kind: key.kind,
                namespace: key.namespace,
                name: key.name,
            }));
        }
        if let Some(rv) =
            str_at(&object, &["metadata", "resourceVersion"]).and_then(|s| s.parse().ok())
        {
            self.max_resource_version = self.max_resource_version.max(rv);
        }
        if key.kind == "CustomResourceDefinition" {
            self.add_crd_scopes(&object);
        }
        self.seen
            .entry((key.api_version.clone(), key.kind.clone()))
            .or_default()
            .insert(!key.namespace.is_empty());
        self.index.insert(key.clone(), index);
        self.objects.push((key, object));
        Ok(())
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
            .map(Vec::as_slice)
            .unwrap_or_default();
        for v in versions {
            if let Some(version) = v.get("name").and_then(Value::as_str) {
                self.declared
                    .insert((format!("{group}/{version}"), kind.to_string()), namespaced);
            }
        }
    }

    fn check_scopes(&self) -> Result<(), StoreError> {
        for ((api_version, kind), scopes) in &self.seen {
            if scopes.len() > 1 {
                return Err(StoreError::MixedScope {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                });
            }
            let namespaced = scopes.contains(&true);
            if let Some(&declared) = self.declared.get(&(api_version.clone(), kind.clone()))
                && declared != namespaced
            {
                return Err(StoreError::ScopeConflict {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    crd_namespaced: declared,
                });
            }
        }
        Ok(())
    }

    /// Whether objects of this kind live in namespaces.
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> bool {
        let key = (api_version.to_string(), kind.to_string());
        self.declared
            .get(&key)
            .copied()
            .or_else(|| self.seen.get(&key).map(|s| s.contains(&true)))
            .unwrap_or_else(|| !CLUSTER_SCOPED_KINDS.contains(&kind))
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The objects, in the order given.
    pub fn objects(&self) -> impl Iterator<Item = &Value> {
        self.objects.iter().map(|(_, o)| o)
    }

    /// The `metadata.resourceVersion` of every list: the largest numeric one among the
    /// objects, or `1`.
    pub fn resource_version(&self) -> String {
        self.max_resource_version.max(1).to_string()
    }

    /// The objects of (apiVersion, kind), in the store's [`Order`].
    pub(crate) fn of_kind<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> Box<dyn Iterator<Item = (&'a Key, &'a Value)> + 'a> {
        let wanted = move |k: &Key| k.api_version == api_version && k.kind == kind;
        match self.order {
            Order::Sorted => Box::new(
                self.index
                    .iter()
                    .filter(move |(k, _)| wanted(k))
                    .map(|(k, &i)| (k, &self.objects[i].1)),
            ),
            Order::AsGiven => Box::new(
                self.objects
                    .iter()
                    .filter(move |(k, _)| wanted(k))
                    .map(|(k, o)| (k, o)),
            ),
        }
    }

    pub(crate) fn lookup(&self, key: &Key) -> Option<&Value> {
        self.index.get(key).map(|&i| &self.objects[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(name: &str, namespace: Option<&str>) -> Value {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        if let Some(ns) = namespace {
            o["metadata"]["namespace"] = json!(ns);
        }
        o
    }

    #[test]
    fn crd_declares_scope_and_bad_objects_are_refused() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                     "names": {"kind": "Widget", "plural": "widgets"}, "versions": [{"name": "v1"}]}
        });
        let s = ObjectStore::new([crd.clone()]).unwrap();
        assert!(!s.is_namespaced("example.com/v1", "Widget"));
        assert!(s.is_namespaced("example.com/v1", "Gadget"));
        assert!(!s.is_namespaced("v1", "Namespace"));

        let mixed = ObjectStore::new([config_map("a", Some("x")), config_map("b", None)]);
        assert_eq!(
            mixed.unwrap_err().to_string(),
            "v1/ConfigMap: some objects have a namespace and some do not"
        );
        let dup = ObjectStore::new([config_map("a", Some("x")), config_map("a", Some("x"))]);
        assert_eq!(
            dup.unwrap_err().to_string(),
            "object #2: duplicate object v1/ConfigMap x/a"
        );
        let nameless = ObjectStore::new([json!({"apiVersion": "v1", "kind": "ConfigMap"})]);
        assert_eq!(
            nameless.unwrap_err(),
            StoreError::Object {
                index: 0,
                problem: ObjectProblem::NoName {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into()
                }
            }
        );
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": "w", "namespace": "x"}});
        assert_eq!(
            ObjectStore::new([widget, crd]).unwrap_err().to_string(),
            "example.com/v1/Widget: its CustomResourceDefinition says Cluster but its objects have a namespace"
        );
    }

    #[test]
    fn insert_checks_like_new_and_leaves_the_store_unchanged_on_error() {
        let mut s = ObjectStore::new([config_map("a", Some("x"))]).unwrap();
        let err = s.insert(config_map("b", None)).unwrap_err();
        assert!(matches!(err, StoreError::MixedScope { .. }), "{err}");
        assert_eq!(s.len(), 1);
        assert!(s.is_namespaced("v1", "ConfigMap"));
        let err = s.insert(config_map("a", Some("x"))).unwrap_err();
        assert!(
            matches!(err, StoreError::Object { index: 1, .. }),
            "{err:?}"
        );
        let mut cm = config_map("b", Some("x"));
        cm["metadata"]["resourceVersion"] = json!("17");
        s.insert(cm).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s.resource_version(), "17");
        assert_eq!(ObjectStore::default().resource_version(), "1");
    }
}
