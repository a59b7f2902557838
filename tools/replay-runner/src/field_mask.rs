//! Field masks of kubewarden-policy-sdk 0.17 requests (`field_masks`): an allow-list of dot
//! paths. Only the listed fields are kept; paths traverse arrays implicitly
//! (`spec.containers.image` keeps `image` of every element of `spec.containers`); an empty or
//! absent list keeps the whole object.
//!
//! Details the SDK leaves open, decided here: a path that ends inside a kept subtree keeps that
//! subtree whole (`metadata` and `metadata.name` together keep all of `metadata`); a path that
//! needs an object but meets a scalar keeps nothing there; an object on the path is kept (maybe
//! empty) so array elements keep their positions; nothing is implied: list `apiVersion` and
//! `kind` too if the guest deserializes items into typed resources.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Node {
    /// The whole value at this point is wanted.
    whole: bool,
    children: BTreeMap<String, Node>,
}

/// A compiled set of field masks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMask {
    root: Node,
}

impl FieldMask {
    /// `None` when the masks keep everything (absent or empty list).
    pub fn new(masks: Option<&BTreeSet<String>>) -> Option<FieldMask> {
        let masks = masks.filter(|m| !m.is_empty())?;
        let mut root = Node::default();
        for mask in masks {
            let mut node = &mut root;
            for segment in mask.split('.').filter(|s| !s.is_empty()) {
                node = node.children.entry(segment.to_string()).or_default();
            }
            node.whole = true;
        }
        if root.whole {
            // A mask of "" (or ".") means "everything".
            return None;
        }
        Some(FieldMask { root })
    }

    /// The object pruned to the masked fields.
    pub fn apply(&self, value: &Value) -> Value {
        prune(value, &self.root).unwrap_or_else(|| Value::Object(Map::new()))
    }
}

fn prune(value: &Value, node: &Node) -> Option<Value> {
    if node.whole {
        return Some(value.clone());
    }
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, child) in &node.children {
                if let Some(v) = map.get(key).and_then(|v| prune(v, child)) {
                    out.insert(key.clone(), v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => Some(Value::Array(
            items.iter().filter_map(|item| prune(item, node)).collect(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mask(paths: &[&str]) -> Option<FieldMask> {
        FieldMask::new(Some(&paths.iter().map(|s| s.to_string()).collect()))
    }

    #[test]
    fn keeps_only_listed_paths() {
        let obj = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}], "nodeName": "x"}
        });
        let m = mask(&[
            "metadata.name",
            "metadata.namespace",
            "spec.containers.image",
        ])
        .unwrap();
        assert_eq!(
            m.apply(&obj),
            json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"image": "i1"}, {"image": "i2"}]}})
        );
    }

    #[test]
    fn subtree_paths_and_missing_fields() {
        let obj = json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"x": 1}});
        let m = mask(&["metadata", "metadata.name", "spec.x.y", "status.phase"]).unwrap();
        // spec.x is a scalar where an object was needed: dropped; status is absent: dropped.
        assert_eq!(
            m.apply(&obj),
            json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {}})
        );
    }

    #[test]
    fn arrays_of_scalars_and_nested_arrays() {
        let obj = json!({"spec": {"values": [1, 2], "groups": [[{"a": 1, "b": 2}], [{"a": 3}]]}});
        let m = mask(&["spec.values", "spec.groups.a"]).unwrap();
        assert_eq!(
            m.apply(&obj),
            json!({"spec": {"values": [1, 2], "groups": [[{"a": 1}], [{"a": 3}]]}})
        );
    }

    #[test]
    fn empty_or_absent_keeps_everything() {
        assert!(FieldMask::new(None).is_none());
        assert!(FieldMask::new(Some(&BTreeSet::new())).is_none());
        assert!(mask(&[""]).is_none());
    }
}
