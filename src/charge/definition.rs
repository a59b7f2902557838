//! `cozystack.io/v1alpha1` ApplicationDefinition: the parts this policy reads, and the
//! declarative `spec.reservation` contract.

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::terms::{self, Amount, Condition, Count, Fixed, From, Gpus, Implied, Name, Path, Size};
use crate::keys::{CPU, MEMORY, STORAGE};
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
    /// How the kind's HelmReleases are named: `prefix` + the application's name.
    #[serde(default)]
    pub release: Release,
    /// Kept raw: a malformed block is a problem of that definition alone, reported when an
    /// application of its kind is evaluated, not a reason to fail every other kind.
    #[serde(default)]
    pub reservation: Option<Value>,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct Release {
    #[serde(default)]
    pub prefix: String,
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
/// into the values the block applies to (the application's `spec`, or one item of `each`);
/// `$.` reads from the application's top-level values wherever the block is.
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reservation {
    /// Conditions on the values (all must hold), else this block reserves nothing.
    #[serde(default, deserialize_with = "terms::deserialize_conditions")]
    pub when: Vec<Condition>,
    /// A boolean path: when it reads `false` this block reserves nothing.
    pub enabled_by: Option<Path>,
    /// Multipliers (their product); an absent path or field counts as 1.
    #[serde(default, deserialize_with = "one_or_many")]
    pub replicas: Vec<Count>,
    /// A cozy-lib resources map of one replica: `cpu` and `memory` win key by key over the
    /// two below; its other keys are the container's extended resource limits.
    pub resources: Option<Path>,
    /// A VirtualMachineClusterInstancetype name: `spec.cpu.guest`, `spec.memory.guest`, `spec.gpus`.
    pub instance_type: Option<Name>,
    /// A resource preset name (`u1.medium`, legacy `small`, ...).
    pub preset: Option<Name>,
    /// The explicit size of one replica per key, winning over all three above.
    pub size: Option<Size>,
    /// Constant quantities of one replica (hard-coded containers).
    #[serde(default, deserialize_with = "terms::deserialize_fixed")]
    pub fixed: Option<Fixed>,
    /// Quantities charged as `storage`.
    #[serde(default, deserialize_with = "one_or_many")]
    pub storage: Vec<Amount>,
    /// A list of GPUs.
    pub gpus: Option<Gpus>,
    /// Sub-pools read from a map or list (Kubernetes `nodeGroups`).
    #[serde(default, deserialize_with = "one_or_many")]
    pub each: Vec<Each>,
    /// Further parts of the same application (Kafka brokers and ZooKeeper), read from the
    /// same values and summed.
    #[serde(default)]
    pub components: Vec<Reservation>,
    /// Output keys an UPDATE may not lower: the chart keeps what it provisioned (a volume).
    #[serde(default)]
    pub grow_only: Vec<String>,
    /// The applications a Tenant's chart creates as releases of their own (its modules).
    #[serde(default)]
    pub implies: Vec<Implied>,
    /// Values the chart hands on verbatim that can change what it renders past anything a
    /// term reads (a JSON Patch over a rendered object): when one is set to Helm and the
    /// block applies, the application is refused, naming it.
    #[serde(default, deserialize_with = "one_or_many")]
    pub unchargeable: Vec<Path>,
}

#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Each {
    pub path: Path,
    pub reservation: Reservation,
    /// What the chart renders when the collection is empty (Kubernetes' implicit `md0`
    /// pool), charged in its place so that an empty collection is not free.
    pub when_empty: Option<Value>,
}

/// Deepest nesting of `each`/`components` accepted in a definition.
const MAX_NESTING: usize = 8;

/// Output keys `growOnly` may name.
const GROW_ONLY_KEYS: [&str; 3] = [CPU, MEMORY, STORAGE];

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
        if depth > 0 && !self.grow_only.is_empty() {
            return Err(
                "growOnly applies to a whole application: only at the top of the block".into(),
            );
        }
        if depth > 0 && !self.implies.is_empty() {
            return Err(
                "implies applies to a whole application: only at the top of the block".into(),
            );
        }
        if let Some(key) = self
            .grow_only
            .iter()
            .find(|k| !GROW_ONLY_KEYS.contains(&k.as_str()))
        {
            return Err(format!(
                "growOnly: {key:?} is not one of {}",
                GROW_ONLY_KEYS.join(", ")
            ));
        }
        for each in &self.each {
            if let Some(v) = &each.when_empty
                && !(v.is_object() || v.is_array())
            {
                return Err(format!(
                    "each {:?}: whenEmpty must be a map or a list",
                    each.path.text
                ));
            }
            each.reservation.check(depth + 1)?;
        }
        self.components.iter().try_for_each(|c| c.check(depth + 1))
    }

    /// The paths of this block itself (not of its components, nor inside `each` items).
    fn own_paths(&self) -> Vec<&Path> {
        let mut paths = Vec::new();
        self.when.iter().for_each(|c| c.paths(&mut paths));
        for implied in &self.implies {
            implied.when.iter().for_each(|c| c.paths(&mut paths));
        }
        self.replicas.iter().for_each(|c| c.paths(&mut paths));
        self.storage.iter().for_each(|a| a.paths(&mut paths));
        if let Some(size) = &self.size {
            size.cpu
                .iter()
                .chain(&size.memory)
                .for_each(|a| a.paths(&mut paths));
        }
        self.instance_type
            .iter()
            .chain(&self.preset)
            .for_each(|n| n.paths(&mut paths));
        paths.extend(
            self.resources
                .iter()
                .chain(&self.enabled_by)
                .chain(self.gpus.as_ref().map(Gpus::path))
                .chain(self.each.iter().map(|e| &e.path))
                .chain(&self.unchargeable),
        );
        paths
    }

    /// Every path of the values this block reads, relative to the values it applies to. An
    /// `each` collection is read whole: its items' paths are relative to each item, but for
    /// those read from the top-level values (`$.`).
    pub fn read_paths<'a>(&'a self, into: &mut BTreeSet<&'a str>) {
        into.extend(self.own_paths().into_iter().map(Path::relative));
        for component in &self.components {
            component.read_paths(into);
        }
        for each in &self.each {
            each.reservation.top_level_paths(into, true);
        }
    }

    /// The top-level paths read inside an item: `$.` paths, and `^.` paths of a first-level
    /// item (whose enclosing values are the top level).
    fn top_level_paths<'a>(&'a self, into: &mut BTreeSet<&'a str>, first_level: bool) {
        into.extend(
            self.own_paths()
                .into_iter()
                .filter(|p| p.from == From::Root || (first_level && p.from == From::Enclosing))
                .map(Path::relative),
        );
        for component in &self.components {
            component.top_level_paths(into, first_level);
        }
        for each in &self.each {
            each.reservation.top_level_paths(into, false);
        }
    }

    /// Whether the block reads a size (and so must find one for cpu and memory).
    pub fn sizes_replicas(&self) -> bool {
        self.resources.is_some()
            || self.instance_type.is_some()
            || self.preset.is_some()
            || self.size.is_some()
    }
}

/// One term or a list of them; the error of a malformed item is the item's own.
fn one_or_many<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::de::Error;
    let value = Value::deserialize(deserializer)?;
    let items = match value {
        Value::Array(items) => items,
        one => vec![one],
    };
    items
        .into_iter()
        .map(|item| serde_json::from_value(item).map_err(D::Error::custom))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(s: &str) -> Path {
        Path::parse(s).unwrap()
    }

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
        assert_eq!(r.replicas, [Count::Path(path("replicas"))]);
        assert_eq!(r.storage, [Amount::Term(terms::Term::Path(path("size")))]);
        assert_eq!(
            r.each[0].reservation.replicas,
            [Count::Path(path("maxReplicas"))]
        );
        assert!(r.sizes_replicas());
        let single = Reservation::from_value(
            &json!({"storage": "storage", "replicas": ["replicas", "shards", 2]}),
        )
        .unwrap();
        assert_eq!(
            single.storage,
            [Amount::Term(terms::Term::Path(path("storage")))]
        );
        assert_eq!(
            single.replicas,
            [
                Count::Path(path("replicas")),
                Count::Path(path("shards")),
                Count::Literal(2)
            ]
        );
        assert!(!single.sizes_replicas());
    }

    #[test]
    fn refuses_typos_and_bad_paths() {
        let err = Reservation::from_value(&json!({"replica": "replicas"})).unwrap_err();
        assert!(err.contains("unknown field `replica`"), "{err}");
        let err = Reservation::from_value(&json!({"storage": ["a..b"]})).unwrap_err();
        assert!(err.contains("not a dot-separated path"), "{err}");
        let err = Reservation::from_value(&json!({"replicas": [true]})).unwrap_err();
        assert!(err.contains("a count is a literal, a path"), "{err}");
        let err = Reservation::from_value(
            &json!({"each": {"path": "x", "reservation": {}, "whenEmpty": 3}}),
        )
        .unwrap_err();
        assert!(err.contains("whenEmpty"), "{err}");
        let err = Reservation::from_value(&json!({"growOnly": ["disk"]})).unwrap_err();
        assert!(
            err.contains("growOnly: \"disk\" is not one of cpu, memory, storage"),
            "{err}"
        );
        let err = Reservation::from_value(&json!({"components": [{"growOnly": ["storage"]}]}))
            .unwrap_err();
        assert!(err.contains("only at the top"), "{err}");
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

    #[test]
    fn reads_every_path_it_may_read_and_top_level_paths_inside_items() {
        let r = Reservation::from_value(&json!({
            "when": {"path": "mode", "notEquals": "Client"},
            "size": {"cpu": {"max": ["resources.cpu", 1]}},
            "storage": [{"path": "diskSize", "default": "20Gi"}],
            "gpus": {"devices": "gpus"},
            "unchargeable": "patch",
            "each": {"path": "shards", "reservation": {
                "replicas": "replicas", "resources": "$.resources", "preset": "$.resourcesPreset",
                "storage": {"path": "size", "default": {"path": "^.size"}}}},
        }))
        .unwrap();
        let mut paths = BTreeSet::new();
        r.read_paths(&mut paths);
        assert_eq!(
            paths.into_iter().collect::<Vec<_>>(),
            [
                "diskSize",
                "gpus",
                "mode",
                "patch",
                "resources",
                "resources.cpu",
                "resourcesPreset",
                "shards",
                "size"
            ]
        );
    }
}
