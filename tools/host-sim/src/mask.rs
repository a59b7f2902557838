//! Field masks of kubewarden-policy-sdk 0.17 list requests (`field_masks`), applied the way
//! Kubewarden's host does it (policy-evaluator's reflector, since field masks exist): the masks
//! are dot paths from the object's root; paths traverse arrays implicitly
//! (`spec.containers.image` keeps `image` of every element of `spec.containers`).
//!
//! What the host does, and so what this does:
//! * masks prune everything **but** `apiVersion`, `kind` and `metadata`, which are always kept
//!   whole (policy-evaluator prunes the `data` part of a `DynamicObject` only);
//! * a key named by a mask is kept; below a path's last segment everything is kept, unless
//!   longer masks go deeper into it (`spec` and `spec.a` together keep only `spec.a`);
//! * a scalar reached by a mask is kept even if the mask goes deeper;
//! * `Some(empty list)` keeps nothing but `apiVersion`, `kind` and `metadata`; `None` keeps all.
//!
//! Objects served in lists also lose `metadata.managedFields` (set to `[]`) and the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (`annotations` becomes at
//! least `{}`), as the host's reflector does whether or not masks are given.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Node {
    terminal: bool,
    children: BTreeMap<String, Node>,
}

/// A compiled set of field masks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMask {
    root: Node,
}

/// The parts of an object that masks never touch.
const ALWAYS_KEPT: [&str; 3] = ["apiVersion", "kind", "metadata"];

pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

impl FieldMask {
    /// `None` when there are no masks (everything is kept).
    pub fn new(masks: Option<&BTreeSet<String>>) -> Option<FieldMask> {
        let masks = masks?;
        let mut root = Node::default();
        for mask in masks {
            let mut node = &mut root;
            for segment in mask.split('.') {
                node = node.children.entry(segment.to_string()).or_default();
            }
            node.terminal = true;
        }
        Some(FieldMask { root })
    }

    /// The object pruned to the masked fields (`apiVersion`, `kind`, `metadata` kept).
    pub fn apply(&self, object: &Value) -> Value {
        let Value::Object(map) = object else {
            let mut v = object.clone();
            prune(&mut v, &self.root);
            return v;
        };
        let mut out = Map::new();
        for (key, value) in map {
            if ALWAYS_KEPT.contains(&key.as_str()) {
                out.insert(key.clone(), value.clone());
            } else if let Some(child) = self.root.children.get(key) {
                let mut v = value.clone();
                prune(&mut v, child);
                out.insert(key.clone(), v);
            }
        }
        Value::Object(out)
    }
}

fn prune(value: &mut Value, node: &Node) {
    if node.terminal && node.children.is_empty() {
        return;
    }
    match value {
        Value::Object(map) => map.retain(|key, v| match node.children.get(key) {
            Some(child) => {
                prune(v, child);
                true
            }
            None => false,
        }),
        Value::Array(items) => items.iter_mut().for_each(|item| prune(item, node)),
        _ => {}
    }
}

/// What the host's reflector does to every object it serves in a list: `managedFields`
/// emptied, the last-applied-configuration annotation dropped.
pub fn strip_for_list(object: &mut Value) {
    let Some(Value::Object(metadata)) = object.get_mut("metadata") else {
        return;
    };
    metadata.insert("managedFields".into(), Value::Array(vec![]));
    match metadata.get_mut("annotations") {
        Some(Value::Object(annotations)) => {
            annotations.remove(LAST_APPLIED_ANNOTATION);
        }
        _ => {
            metadata.insert("annotations".into(), Value::Object(Map::new()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mask(paths: &[&str]) -> FieldMask {
        FieldMask::new(Some(&paths.iter().map(|s| s.to_string()).collect())).unwrap()
    }

    #[test]
    fn keeps_only_listed_paths_and_always_the_type_and_metadata() {
        let obj = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}], "nodeName": "x"},
            "status": {"phase": "Running"}
        });
        let m = mask(&["metadata.name", "spec.containers.image"]);
        assert_eq!(
            m.apply(&obj),
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "n", "labels": {"a": "b"}},
                "spec": {"containers": [{"image": "i1"}, {"image": "i2"}]}
            })
        );
    }

    #[test]
    fn subtree_masks_scalars_and_nested_arrays() {
        let obj = json!({"spec": {"a": {"x": 1, "y": 2}, "b": 3, "s": "scalar", "g": [[{"a": 1, "b": 2}], [{"a": 3}]]}});
        // "spec" together with deeper masks keeps only the deeper paths, like the host.
        assert_eq!(
            mask(&["spec", "spec.a.x"]).apply(&obj),
            json!({"spec": {"a": {"x": 1}}})
        );
        // A whole subtree; a scalar reached by a deeper mask is kept.
        assert_eq!(
            mask(&["spec.a", "spec.s.deeper", "spec.g.a"]).apply(&obj),
            json!({"spec": {"a": {"x": 1, "y": 2}, "s": "scalar", "g": [[{"a": 1}], [{"a": 3}]]}})
        );
        // Missing paths are simply absent.
        assert_eq!(mask(&["status.phase"]).apply(&obj), json!({}));
    }

    #[test]
    fn none_keeps_everything_and_empty_keeps_only_type_and_metadata() {
        assert!(FieldMask::new(None).is_none());
        let obj = json!({"kind": "X", "metadata": {"name": "a"}, "spec": {"a": 1}});
        let empty = FieldMask::new(Some(&BTreeSet::new())).unwrap();
        assert_eq!(
            empty.apply(&obj),
            json!({"kind": "X", "metadata": {"name": "a"}})
        );
    }

    #[test]
    fn list_objects_lose_managed_fields_and_last_applied() {
        let mut obj = json!({"metadata": {"name": "a", "managedFields": [{"manager": "m"}], "annotations": {LAST_APPLIED_ANNOTATION: "{}", "keep": "me"}}});
        strip_for_list(&mut obj);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "a", "managedFields": [], "annotations": {"keep": "me"}}})
        );
        let mut bare = json!({"metadata": {"name": "a"}});
        strip_for_list(&mut bare);
        assert_eq!(
            bare,
            json!({"metadata": {"name": "a", "managedFields": [], "annotations": {}}})
        );
    }
}
