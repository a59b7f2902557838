//! Reading an application's values as its chart sees them: with the defaults of the
//! definition's `openAPISchema` applied.
//!
//! Defaults are applied along the path being read rather than to the whole tree first: the
//! result is the same as Kubernetes structural defaulting (a missing or `null` field takes
//! its `default`, and defaults apply inside defaulted objects too), without cloning the
//! large default trees of fields no reservation reads.

use std::sync::Arc;

use serde_json::Value;

/// A parsed `openAPISchema` (or none: no defaults).
#[derive(Clone, Debug, Default)]
pub struct Schema(Option<Arc<Value>>);

impl Schema {
    pub fn none() -> Self {
        Schema(None)
    }

    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        Ok(Schema(Some(Arc::new(serde_json::from_str(text)?))))
    }

    pub fn root(&self) -> Option<&Value> {
        self.0.as_deref()
    }
}

/// A position in the values, with the schema that describes it.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    pub value: Option<&'a Value>,
    schema: Option<&'a Value>,
}

impl<'a> Cursor<'a> {
    pub fn new(value: &'a Value, schema: Option<&'a Value>) -> Self {
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
                .and_then(|s| s.get("default"))
                .filter(|d| !d.is_null());
        }
        self
    }

    fn child_schema(&self, key: &str) -> Option<&'a Value> {
        let schema = self.schema?;
        schema
            .get("properties")
            .and_then(|p| p.get(key))
            .or_else(|| schema.get("additionalProperties").filter(|s| s.is_object()))
    }

    fn item_schema(&self) -> Option<&'a Value> {
        self.schema?.get("items").filter(|s| s.is_object())
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

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "instanceType": {"type": "string", "default": "u1.medium"},
            "replicas": {"type": "integer", "default": 2},
            "resources": {"type": "object", "default": {}, "properties": {
                "cpu": {"default": "1000m"}, "memory": {}}},
            "nodeGroups": {"type": "object", "default": {}, "additionalProperties": {
                "type": "object", "properties": {"maxReplicas": {"default": 10}}}},
            "gpus": {"type": "array", "default": [], "items": {"type": "object", "properties": {"count": {"default": 1}}}},
        }})
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
