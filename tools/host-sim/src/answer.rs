//! The host's answers to the three Kubernetes operations of the Kubewarden SDK, computed from an
//! [`ObjectStore`] as the API server (through policy-evaluator's host capabilities) answers a
//! policy.
//!
//! * `list_resources_all` ([`ListQuery::all`]) and `list_resources_by_namespace`
//!   ([`ListQuery::in_namespace`]) answer `{"apiVersion": <apiVersion>, "items": [...],
//!   "kind": "<Kind>List", "metadata": {"resourceVersion": "<n>"}}`: the items of that
//!   apiVersion and kind (and namespace) that match the label and field selectors, in the
//!   store's [`Order`](crate::Order), each stripped as the host's reflector strips what it
//!   serves ([`strip_for_list`]) and pruned to the field masks ([`FieldMask`]). `n` is
//!   [`ObjectStore::resource_version`].
//! * `get_resource` ([`GetQuery`]) answers the object as stored (the host neither masks nor
//!   strips it), or policy-evaluator's not-found error.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value, json};

use crate::mask::{FieldMask, strip_for_list};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{Key, ObjectStore};

/// A `list_resources_all` (`namespace: None`) or `list_resources_by_namespace` request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListQuery {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

impl ListQuery {
    /// `list_resources_all`, no selectors.
    pub fn all(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        ListQuery {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            label_selector: None,
            field_selector: None,
        }
    }

    /// `list_resources_by_namespace`, no selectors.
    pub fn in_namespace(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: impl Into<String>,
    ) -> Self {
        ListQuery {
            namespace: Some(namespace.into()),
            ..ListQuery::all(api_version, kind)
        }
    }

    /// The request a policy's list lookup makes, from its parts: the resource
    /// (`apiVersion`, `kind`), the namespace (`None`: `list_resources_all`) and the selectors.
    pub fn new(
        (api_version, kind): (&str, &str),
        namespace: Option<&str>,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Self {
        let query = match namespace {
            Some(namespace) => ListQuery::in_namespace(api_version, kind, namespace),
            None => ListQuery::all(api_version, kind),
        };
        ListQuery {
            label_selector,
            field_selector,
            ..query
        }
    }

    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}

/// A `get_resource` request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GetQuery {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl GetQuery {
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        name: impl Into<String>,
        namespace: Option<&str>,
    ) -> Self {
        GetQuery {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.map(str::to_string),
        }
    }
}

/// Any of the three Kubernetes requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Request {
    List(ListQuery),
    Get(GetQuery),
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// An answer a real cluster gives (not found, wrong scope): it goes back to the policy as a
    /// host-call error.
    Api(String),
    /// A request the simulation cannot answer faithfully (a malformed or unsupported selector).
    Unanswerable(String),
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Api(m) | QueryError::Unanswerable(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for QueryError {}

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

impl ObjectStore {
    /// The answer to `request`; `field_masks` apply to lists only.
    pub fn answer(
        &self,
        request: &Request,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, QueryError> {
        match request {
            Request::List(query) => self.list(query, field_masks),
            Request::Get(query) => self.get(query),
        }
    }

    /// `list_resources_all` (namespace `None`) and `list_resources_by_namespace`.
    pub fn list(
        &self,
        query: &ListQuery,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, QueryError> {
        let ListQuery {
            api_version,
            kind,
            namespace,
            label_selector,
            field_selector,
        } = query;
        let labels =
            LabelSelector::parse(label_selector.as_deref().unwrap_or("")).map_err(|e| {
                QueryError::Unanswerable(format!("label selector {label_selector:?}: {e}"))
            })?;
        let fields =
            FieldSelector::parse(field_selector.as_deref().unwrap_or("")).map_err(|e| {
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
            .of_kind(api_version, kind)
            .filter(|(k, _)| namespace.as_ref().is_none_or(|ns| k.namespace == *ns))
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
            "metadata": {"resourceVersion": self.resource_version()},
            "items": items,
        }))
    }

    /// `get_resource`: the object as stored. The host neither applies field masks to it nor
    /// strips it (policy-evaluator reads it with a plain GET).
    pub fn get(&self, query: &GetQuery) -> Result<Value, QueryError> {
        let GetQuery {
            api_version,
            kind,
            name,
            namespace,
        } = query;
        let ns = if self.is_namespaced(api_version, kind) {
            namespace.as_deref().ok_or_else(|| {
                QueryError::Api(format!(
                    "Resource {api_version}/{kind} is namespaced, but no namespace was provided"
                ))
            })?
        } else {
            // A cluster-wide resource is looked up without its namespace, like kube's `Api::all`.
            ""
        };
        let key = Key {
            api_version: api_version.clone(),
            kind: kind.clone(),
            namespace: ns.to_string(),
            name: name.clone(),
        };
        match self.lookup(&key) {
            Some(obj) => Ok(obj.clone()),
            None => Err(QueryError::Api(not_found_message(
                api_version,
                kind,
                name,
                namespace.as_deref(),
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Order;

    const HR: &str = "helm.toolkit.fluxcd.io/v2";

    /// The replay-runner's test cluster (its YAML file, as objects).
    fn state() -> ObjectStore {
        ObjectStore::new([
            json!({"apiVersion": HR, "kind": "HelmRelease",
                   "metadata": {"name": "kafka-b", "namespace": "tenant-b",
                                "labels": {"apps.cozystack.io/application.kind": "Kafka"}},
                   "spec": {"values": {"kafka": {"replicas": 3}}}}),
            json!({"apiVersion": HR, "kind": "HelmRelease",
                   "metadata": {"name": "kafka-a", "namespace": "tenant-a", "resourceVersion": "42",
                                "labels": {"apps.cozystack.io/application.kind": "Kafka", "env": "prod"}},
                   "spec": {"values": {"kafka": {"replicas": 1}}}}),
            json!({"apiVersion": HR, "kind": "HelmRelease",
                   "metadata": {"name": "etcd", "namespace": "tenant-a",
                                "labels": {"apps.cozystack.io/application.kind": "Etcd"}}}),
            json!({"apiVersion": "cozystack.io/v1alpha1", "kind": "ApplicationDefinition",
                   "metadata": {"name": "kafka"}}),
            json!({"apiVersion": "cozystack.io/v1alpha1", "kind": "ApplicationDefinition",
                   "metadata": {"name": "etcd"}}),
        ])
        .unwrap()
    }

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

    fn releases() -> ListQuery {
        ListQuery::all(HR, "HelmRelease")
    }

    #[test]
    fn a_lookup_s_parts_make_the_request_of_its_scope() {
        assert_eq!(
            ListQuery::new((HR, "HelmRelease"), None, None, None),
            releases()
        );
        assert_eq!(
            ListQuery::new(
                (HR, "HelmRelease"),
                Some("tenant-a"),
                Some("app".into()),
                Some("metadata.name=x".into())
            ),
            ListQuery::in_namespace(HR, "HelmRelease", "tenant-a")
                .with_label_selector("app")
                .with_field_selector("metadata.name=x")
        );
    }

    #[test]
    fn lists_are_sorted_typed_and_filtered() {
        let s = state();
        assert_eq!(s.len(), 5);
        let all = s.list(&releases(), None).unwrap();
        assert_eq!(all["kind"], "HelmReleaseList");
        assert_eq!(all["apiVersion"], HR);
        assert_eq!(all["metadata"], json!({"resourceVersion": "42"}));
        assert_eq!(
            names(&all),
            ["tenant-a/etcd", "tenant-a/kafka-a", "tenant-b/kafka-b"]
        );

        let kafka = releases().with_label_selector("apps.cozystack.io/application.kind=Kafka");
        assert_eq!(
            names(&s.list(&kafka, None).unwrap()),
            ["tenant-a/kafka-a", "tenant-b/kafka-b"]
        );

        let ns = ListQuery::in_namespace(HR, "HelmRelease", "tenant-a")
            .with_label_selector("apps.cozystack.io/application.kind in (Kafka,Redis),env");
        assert_eq!(names(&s.list(&ns, None).unwrap()), ["tenant-a/kafka-a"]);

        let by_field = releases().with_field_selector("metadata.namespace=tenant-b");
        assert_eq!(
            names(&s.list(&by_field, None).unwrap()),
            ["tenant-b/kafka-b"]
        );

        let defs = ListQuery::all("cozystack.io/v1alpha1", "ApplicationDefinition");
        assert_eq!(names(&s.list(&defs, None).unwrap()), ["/etcd", "/kafka"]);

        // A kind with no objects is an empty list, not an error.
        let none = s.list(&ListQuery::all("v1", "ConfigMap"), None).unwrap();
        assert_eq!(none["items"], json!([]));
        assert_eq!(none["kind"], "ConfigMapList");
    }

    #[test]
    fn as_given_order_keeps_the_order_of_the_objects() {
        let s = state().with_order(Order::AsGiven);
        assert_eq!(
            names(&s.list(&releases(), None).unwrap()),
            ["tenant-b/kafka-b", "tenant-a/kafka-a", "tenant-a/etcd"]
        );
        let defs = ListQuery::all("cozystack.io/v1alpha1", "ApplicationDefinition");
        assert_eq!(names(&s.list(&defs, None).unwrap()), ["/kafka", "/etcd"]);
    }

    #[test]
    fn field_masks_apply_to_items() {
        let s = state();
        let masks: BTreeSet<String> = ["metadata.name", "spec.values.kafka.replicas"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let query = ListQuery::in_namespace(HR, "HelmRelease", "tenant-b");
        let list = s.list(&query, Some(&masks)).unwrap();
        assert_eq!(
            list["items"],
            json!([{
                "apiVersion": HR,
                "kind": "HelmRelease",
                "metadata": {"name": "kafka-b", "namespace": "tenant-b", "labels": {"apps.cozystack.io/application.kind": "Kafka"}, "annotations": {}, "managedFields": []},
                "spec": {"values": {"kafka": {"replicas": 3}}}
            }])
        );
    }

    #[test]
    fn get_and_not_found() {
        let s = state();
        let get = |name: &str, ns: Option<&str>| s.get(&GetQuery::new(HR, "HelmRelease", name, ns));
        let obj = get("etcd", Some("tenant-a")).unwrap();
        assert_eq!(obj["metadata"]["name"], "etcd");
        assert!(
            obj["metadata"].get("managedFields").is_none(),
            "get is not stripped"
        );
        assert_eq!(
            get("etcd", Some("tenant-b")).unwrap_err(),
            QueryError::Api(
                "Cannot find helm.toolkit.fluxcd.io/v2/HelmRelease named 'etcd' inside of namespace 'Some(\"tenant-b\")'".into()
            )
        );
        let err = s
            .get(&GetQuery::new("v1", "Namespace", "tenant-x", None))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cannot find v1/Namespace named 'tenant-x' inside of namespace 'None'"
        );
        // Cluster-scoped objects are found whatever namespace is passed.
        let def = GetQuery::new(
            "cozystack.io/v1alpha1",
            "ApplicationDefinition",
            "kafka",
            Some("x"),
        );
        assert!(s.answer(&Request::Get(def), None).is_ok());
        let err = get("etcd", None).unwrap_err();
        assert!(
            matches!(err, QueryError::Api(m) if m.contains("is namespaced, but no namespace was provided"))
        );
    }

    #[test]
    fn scope_errors_and_unsupported_selectors() {
        let s = state();
        let defs =
            ListQuery::in_namespace("cozystack.io/v1alpha1", "ApplicationDefinition", "tenant-a");
        let err = s.list(&defs, None).unwrap_err();
        assert!(matches!(err, QueryError::Api(m) if m.contains("is cluster wide")));
        let err = s
            .list(&releases().with_field_selector("spec.chart=x"), None)
            .unwrap_err();
        assert!(
            matches!(err, QueryError::Unanswerable(m) if m.contains("field label not supported: spec.chart"))
        );
        let err = s
            .list(&releases().with_label_selector("a in (b"), None)
            .unwrap_err();
        assert!(matches!(err, QueryError::Unanswerable(_)));
    }
}
