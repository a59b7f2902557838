//! Reading an application's values as its chart sees them: with the defaults of the
//! definition's `openAPISchema` applied.
//!
//! Defaults are applied along the path being read rather than to the whole tree first: the
//! result is the same as Kubernetes structural defaulting (a missing or `null` field takes
//! its `default`, and defaults apply inside defaulted objects too), without cloning the
//! large default trees of fields no reservation reads.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A parsed `openAPISchema` (or none: no defaults).
#[derive(Clone, Debug, Default)]
pub struct Schema(Option<Arc<SchemaNode>>);

impl Schema {
    pub fn none() -> Self {
        Schema(None)
    }

    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        Ok(Schema(Some(Arc::new(serde_json::from_str(text)?))))
    }

    pub fn root(&self) -> Option<&SchemaNode> {
        self.0.as_deref()
    }
}

/// The parts of a schema that defaulting reads: `default`, `properties`, an object
/// `additionalProperties` and an object `items`. Descriptions, patterns, enums and the rest
/// (most of a chart's schema) are skipped unread. Lenient as a JSON lookup is: a node that
/// is not an object defaults nothing, and `additionalProperties: true` or a tuple `items`
/// describe nothing further.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaNode {
    default: Option<Value>,
    properties: BTreeMap<String, SchemaNode>,
    additional_properties: Option<Box<SchemaNode>>,
    items: Option<Box<SchemaNode>>,
}

/// A schema position that may hold anything: `None` unless it is an object.
struct MaybeNode(Option<SchemaNode>);

impl<'de> Deserialize<'de> for MaybeNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MaybeNodeVisitor)
    }
}

impl<'de> Deserialize<'de> for SchemaNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(MaybeNode::deserialize(deserializer)?.0.unwrap_or_default())
    }
}

/// `properties`: a map of nodes, or nothing when it is not a map.
struct Properties(BTreeMap<String, SchemaNode>);

impl<'de> Deserialize<'de> for Properties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PropertiesVisitor;
        impl<'de> Visitor<'de> for PropertiesVisitor {
            type Value = Properties;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Properties, A::Error> {
                let mut properties = BTreeMap::new();
                while let Some((key, node)) = map.next_entry::<String, SchemaNode>()? {
                    properties.insert(key, node);
                }
                Ok(Properties(properties))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Properties, A::Error> {
                drain(seq).map(|()| Properties(BTreeMap::new()))
            }
            scalars_are!(Properties(BTreeMap::new()));
        }
        deserializer.deserialize_any(PropertiesVisitor)
    }
}

fn drain<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Every scalar visit of a lenient visitor yields `$empty`.
macro_rules! scalars_are {
    ($empty:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($empty)
        }
    };
}
use scalars_are;

struct MaybeNodeVisitor;

impl<'de> Visitor<'de> for MaybeNodeVisitor {
    type Value = MaybeNode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeNode, A::Error> {
        let mut node = SchemaNode::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "default" => node.default = Some(map.next_value()?),
                "properties" => node.properties = map.next_value::<Properties>()?.0,
                "additionalProperties" => {
                    node.additional_properties = map.next_value::<MaybeNode>()?.0.map(Box::new)
                }
                "items" => node.items = map.next_value::<MaybeNode>()?.0.map(Box::new),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(MaybeNode(Some(node)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MaybeNode, A::Error> {
        drain(seq).map(|()| MaybeNode(None))
    }

    scalars_are!(MaybeNode(None));
}

/// A position in the values, with the schema that describes it.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    pub value: Option<&'a Value>,
    schema: Option<&'a SchemaNode>,
}

impl<'a> Cursor<'a> {
    pub fn new(value: &'a Value, schema: Option<&'a SchemaNode>) -> Self {
        Cursor {
            value: Some(value),
            schema,
        }
        .defaulted()
    }

    /// A missing or `null` value takes the schema's default.
    fn defaulted(mut self) -> Self {
        if matches!(self.value, None | Some(Value::Null)) {
            self.value = self
                .schema
                .and_then(|s| s.default.as_ref())
                .filter(|d| !d.is_null());
        }
        self
    }

    fn child_schema(&self, key: &str) -> Option<&'a SchemaNode> {
        let schema = self.schema?;
        schema
            .properties
            .get(key)
            .or(schema.additional_properties.as_deref())
    }

    fn item_schema(&self) -> Option<&'a SchemaNode> {
        self.schema?.items.as_deref()
    }

    /// The field `key` of an object; reading into a non-object yields nothing here (the
    /// caller sees the type problem when it reads the parent).
    pub fn child(&self, key: &str) -> Cursor<'a> {
        Cursor {
            value: self
                .value
                .and_then(|v| v.as_object())
                .and_then(|o| o.get(key)),
            schema: self.child_schema(key),
        }
        .defaulted()
    }

    /// Follows a dot-separated path. Returns the cursor, or the prefix of the path at which
    /// the values hold something that is not an object.
    pub fn at(&self, path: &str) -> Result<Cursor<'a>, String> {
        let mut cursor = *self;
        let mut walked = 0;
        for segment in path.split('.') {
            if let Some(v) = cursor.value
                && !v.is_object()
            {
                return Err(path[..walked.max(1) - 1].to_string());
            }
            cursor = cursor.child(segment);
            walked += segment.len() + 1;
        }
        Ok(cursor)
    }

    /// The entries of a map (sorted by key) or the items of a list, each with its schema.
    pub fn entries(&self) -> Option<Vec<(String, Cursor<'a>)>> {
        match self.value? {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Some(
                    keys.into_iter()
                        .map(|k| (k.clone(), self.child(k)))
                        .collect(),
                )
            }
            Value::Array(items) => {
                let schema = self.item_schema();
                Some(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            (
                                i.to_string(),
                                Cursor {
                                    value: Some(v),
                                    schema,
                                }
                                .defaulted(),
                            )
                        })
                        .collect(),
                )
            }
            _ => None,
        }
    }

    /// The same schema position over other values (an `each` block's `whenEmpty`).
    pub fn with_value(&self, value: &'a Value) -> Cursor<'a> {
        Cursor {
            value: Some(value),
            schema: self.schema,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> SchemaNode {
        node(json!({"type": "object", "properties": {
            "instanceType": {"type": "string", "default": "u1.medium"},
            "replicas": {"type": "integer", "default": 2},
            "resources": {"type": "object", "default": {}, "properties": {
                "cpu": {"default": "1000m"}, "memory": {}}},
            "nodeGroups": {"type": "object", "default": {}, "additionalProperties": {
                "type": "object", "properties": {"maxReplicas": {"default": 10}}}},
            "gpus": {"type": "array", "default": [], "items": {"type": "object", "properties": {"count": {"default": 1}}}},
        }}))
    }

    fn node(schema: Value) -> SchemaNode {
        serde_json::from_value(schema).unwrap()
    }

    #[test]
    fn schemas_keep_only_what_defaulting_reads_and_read_anything() {
        let parsed = node(
            json!({"description": "x", "pattern": "^a$", "default": {"a": 1},
            "properties": {"a": {"default": 2, "anyOf": [{"type": "integer"}]}, "b": true},
            "additionalProperties": false, "items": [{"default": 1}]}),
        );
        assert_eq!(parsed.default, Some(json!({"a": 1})));
        assert_eq!(parsed.properties["a"].default, Some(json!(2)));
        assert_eq!(parsed.properties["b"], SchemaNode::default());
        assert!(parsed.additional_properties.is_none() && parsed.items.is_none());
        for odd in [
            json!(true),
            json!([1, [2]]),
            json!("s"),
            json!(null),
            json!(1.5),
        ] {
            assert_eq!(node(odd), SchemaNode::default());
        }
        let odd_properties = node(json!({"properties": [1], "default": null}));
        assert!(odd_properties.properties.is_empty());
        let values = json!({});
        assert_eq!(
            Cursor::new(&values, Some(&odd_properties)).value,
            Some(&values)
        );
        // Every real schema reads.
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/test_data/reference/applicationdefinitions"
        );
        let mut read = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let d: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
            let schema = d["spec"]["application"]["openAPISchema"]
                .as_str()
                .unwrap_or("{}");
            assert!(Schema::parse(schema).is_ok(), "{}", path.display());
            read += 1;
        }
        assert!(read >= 31, "{read} definitions in {dir}");
    }

    #[test]
    fn applies_defaults_along_the_path() {
        let s = schema();
        let values = json!({"replicas": null, "resources": {"memory": "1Gi"}, "nodeGroups": {"md1": {}, "md0": {"maxReplicas": 3}}});
        let root = Cursor::new(&values, Some(&s));
        assert_eq!(
            root.at("instanceType").unwrap().value,
            Some(&json!("u1.medium"))
        );
        assert_eq!(
            root.at("replicas").unwrap().value,
            Some(&json!(2)),
            "null takes the default"
        );
        assert_eq!(
            root.at("resources.cpu").unwrap().value,
            Some(&json!("1000m")),
            "defaults inside a given object"
        );
        assert_eq!(
            root.at("resources.memory").unwrap().value,
            Some(&json!("1Gi"))
        );
        assert_eq!(root.at("absent.deeper").unwrap().value, None);
        let groups = root.at("nodeGroups").unwrap().entries().unwrap();
        let names: Vec<_> = groups.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["md0", "md1"], "map entries in key order");
        assert_eq!(
            groups[0].1.at("maxReplicas").unwrap().value,
            Some(&json!(3))
        );
        assert_eq!(
            groups[1].1.at("maxReplicas").unwrap().value,
            Some(&json!(10))
        );
    }

    #[test]
    fn defaults_apply_inside_defaults_and_list_items() {
        let s = schema();
        let values = json!({"gpus": [{"class": "a10"}, {"count": 4}]});
        let root = Cursor::new(&values, Some(&s));
        assert_eq!(
            root.at("resources.cpu").unwrap().value,
            Some(&json!("1000m"))
        );
        let gpus = root.at("gpus").unwrap().entries().unwrap();
        assert_eq!(gpus[0].1.at("count").unwrap().value, Some(&json!(1)));
        assert_eq!(gpus[1].1.at("count").unwrap().value, Some(&json!(4)));
    }

    #[test]
    fn reports_where_a_path_hits_a_non_object() {
        let values = json!({"resources": "big", "a": {"b": 3}});
        let root = Cursor::new(&values, None);
        assert_eq!(root.at("resources.cpu").unwrap_err(), "resources");
        assert_eq!(root.at("a.b.c").unwrap_err(), "a.b");
        assert!(root.at("a.b").is_ok());
    }
}
