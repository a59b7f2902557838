//! `cozystack.io/v1alpha1` ApplicationDefinition: the parts this policy reads, and the
//! declarative `spec.reservation` contract.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// An ApplicationDefinition as listed from the cluster (only the fields the policy reads).
#[derive(Deserialize, Debug, Clone)]
pub struct ApplicationDefinition {
    #[serde(default)]
    pub metadata: Metadata,
    pub spec: DefinitionSpec,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct Metadata {
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize, Debug, Clone)]
pub struct DefinitionSpec {
    pub application: ApplicationSpec,
    /// Kept raw: a malformed block is a problem of that definition alone, reported when an
    /// application of its kind is evaluated, not a reason to fail every other kind.
    #[serde(default)]
    pub reservation: Option<Value>,
}

#[derive(Deserialize, Debug, Clone)]
pub struct ApplicationSpec {
    pub kind: String,
    /// The raw JSON string token, decoded (unescaped, then parsed) only for the kinds a
    /// request evaluates: the schemas are most of the definitions list.
    #[serde(default, rename = "openAPISchema")]
    pub open_api_schema: Option<Box<RawValue>>,
}

/// How to read one application's size from its values. Every path is a dot-separated path
/// into the values the block applies to (the application's `spec`, or one item of `each`).
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reservation {
    /// Integer multipliers (their product); an absent path or field counts as 1.
    #[serde(default, deserialize_with = "one_or_many")]
    pub replicas: Vec<String>,
    /// Explicit `{cpu, memory}` of one replica; wins key by key over the two below.
    pub resources: Option<String>,
    /// A VirtualMachineClusterInstancetype name: `spec.cpu.guest`, `spec.memory.guest`, `spec.gpus`.
    pub instance_type: Option<String>,
    /// A resource preset name (`u1.medium`, legacy `small`, ...).
    pub preset: Option<String>,
    /// Quantities charged as `storage`.
    #[serde(default, deserialize_with = "one_or_many")]
    pub storage: Vec<String>,
    /// A list of `{class, count, name}` GPU entries.
    pub gpus: Option<String>,
    /// Sub-pools read from a map or list (Kubernetes `nodeGroups`).
    #[serde(default, deserialize_with = "one_or_many")]
    pub each: Vec<Each>,
    /// Further parts of the same application (Kafka brokers and ZooKeeper), read from the
    /// same values and summed.
    #[serde(default)]
    pub components: Vec<Reservation>,
    /// A boolean path: when it reads `false` this block reserves nothing.
    pub enabled_by: Option<String>,
}

#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Each {
    pub path: String,
    pub reservation: Reservation,
    /// What the chart renders when the collection is empty (Kubernetes' implicit `md0`
    /// pool), charged in its place so that an empty collection is not free.
    pub when_empty: Option<Value>,
}

/// Deepest nesting of `each`/`components` accepted in a definition.
const MAX_NESTING: usize = 8;

impl Reservation {
    pub fn from_value(value: &Value) -> Result<Reservation, String> {
        let reservation = Reservation::deserialize(value).map_err(|e| e.to_string())?;
        reservation.check(0)?;
        Ok(reservation)
    }

    fn check(&self, depth: usize) -> Result<(), String> {
        if depth > MAX_NESTING {
            return Err(format!("nested deeper than {MAX_NESTING} levels"));
        }
        for path in self.own_paths() {
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(format!("{path:?} is not a dot-separated path"));
            }
        }
        for each in &self.each {
            if let Some(v) = &each.when_empty
                && !(v.is_object() || v.is_array())
            {
                return Err(format!(
                    "each {:?}: whenEmpty must be a map or a list",
                    each.path
                ));
            }
            each.reservation.check(depth + 1)?;
        }
        self.components.iter().try_for_each(|c| c.check(depth + 1))
    }

    /// The paths of this block itself (not of its components, nor inside `each` items).
    fn own_paths(&self) -> impl Iterator<Item = &String> {
        self.replicas
            .iter()
            .chain(&self.storage)
            .chain(&self.resources)
            .chain(&self.instance_type)
            .chain(&self.preset)
            .chain(&self.gpus)
            .chain(&self.enabled_by)
            .chain(self.each.iter().map(|e| &e.path))
    }

    /// Every path of the values this block reads, relative to the values it applies to. An
    /// `each` collection is read whole: its items' paths are relative to each item.
    pub fn read_paths<'a>(&'a self, into: &mut BTreeSet<&'a str>) {
        into.extend(self.own_paths().map(String::as_str));
        for component in &self.components {
            component.read_paths(into);
        }
    }

    /// Whether the block reads a size (and so must find one for cpu and memory).
    pub fn sizes_replicas(&self) -> bool {
        self.resources.is_some() || self.instance_type.is_some() || self.preset.is_some()
    }
}

fn one_or_many<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany<T> {
        One(T),
        Many(Vec<T>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_documented_contract() {
        let r = Reservation::from_value(&json!({
            "replicas": "replicas",
            "resources": "resources",
            "preset": "resourcesPreset",
            "storage": ["size"],
            "each": {"path": "nodeGroups", "reservation": {"replicas": "maxReplicas", "instanceType": "instanceType"}},
        }))
        .unwrap();
        assert_eq!(r.replicas, ["replicas"]);
        assert_eq!(r.storage, ["size"]);
        assert_eq!(r.each[0].reservation.replicas, ["maxReplicas"]);
        assert!(r.sizes_replicas());
        let single = Reservation::from_value(
            &json!({"storage": "storage", "replicas": ["replicas", "shards"]}),
        )
        .unwrap();
        assert_eq!(single.storage, ["storage"]);
        assert_eq!(single.replicas, ["replicas", "shards"]);
        assert!(!single.sizes_replicas());
    }

    #[test]
    fn refuses_typos_and_bad_paths() {
        let err = Reservation::from_value(&json!({"replica": "replicas"})).unwrap_err();
        assert!(err.contains("unknown field `replica`"), "{err}");
        let err = Reservation::from_value(&json!({"storage": ["a..b"]})).unwrap_err();
        assert!(err.contains("not a dot-separated path"), "{err}");
        let err = Reservation::from_value(&json!({"replicas": 3})).unwrap_err();
        assert!(err.contains("did not match"), "{err}");
        let err = Reservation::from_value(
            &json!({"each": {"path": "x", "reservation": {}, "whenEmpty": 3}}),
        )
        .unwrap_err();
        assert!(err.contains("whenEmpty"), "{err}");
        let mut deep = json!({});
        for _ in 0..12 {
            deep = json!({"components": [deep]});
        }
        assert!(
            Reservation::from_value(&deep)
                .unwrap_err()
                .contains("nested deeper")
        );
    }
}
