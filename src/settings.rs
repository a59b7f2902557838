//! Policy settings, checked by `validate_settings` before any request is evaluated.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::evaluate::is_dns_label;
use crate::presets::Presets;
use crate::quantity::Quantity;
use crate::resources::{CPU, MEMORY, Resources, STORAGE};

/// What to do when another application in the pool cannot be evaluated.
#[derive(Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum SiblingFailure {
    /// Reject the write, naming the application: an unknown charge can hide an overcommit.
    #[default]
    Deny,
    /// Decide with it counted as zero, and return a warning naming it.
    Warn,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    pub sibling_failure: SiblingFailure,
    /// Reject writes of kinds whose definition has no reservation block, unless exempt.
    pub require_reservation: bool,
    /// Kinds that reserve nothing, by design.
    pub exempt_kinds: BTreeSet<String>,
    /// Declared quota key -> the reservation key it bounds.
    pub quota_key_aliases: BTreeMap<String, String>,
    /// Extra or replacement resource presets.
    pub presets: BTreeMap<String, PresetSize>,
    /// Use only `presets`, not Cozystack's built-in table.
    pub replace_builtin_presets: bool,
    /// GPU device name (`nvidia.com/GA102GL_A10`) -> GPU class, for entries that name a
    /// device rather than a class.
    pub gpu_device_classes: BTreeMap<String, String>,
}

#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PresetSize {
    pub cpu: QuantityText,
    pub memory: QuantityText,
}

/// A quantity as written in settings: a string or a number.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum QuantityText {
    Text(String),
    Number(serde_json::Number),
}

impl QuantityText {
    fn parse(&self) -> Result<Quantity, String> {
        let text = match self {
            QuantityText::Text(s) => s.clone(),
            QuantityText::Number(n) => n.to_string(),
        };
        Quantity::parse_non_negative(&text).map_err(|e| e.to_string())
    }
}

pub fn default_aliases() -> BTreeMap<String, String> {
    [
        ("requests.cpu", CPU),
        ("limits.cpu", CPU),
        ("requests.memory", MEMORY),
        ("limits.memory", MEMORY),
        ("requests.storage", STORAGE),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_string(), to.to_string()))
    .collect()
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sibling_failure: SiblingFailure::Deny,
            require_reservation: true,
            exempt_kinds: BTreeSet::new(),
            quota_key_aliases: default_aliases(),
            presets: BTreeMap::new(),
            replace_builtin_presets: false,
            gpu_device_classes: BTreeMap::new(),
        }
    }
}

/// Keys a reservation produces directly, which an alias may point at.
const ALIAS_TARGETS: [&str; 3] = [CPU, MEMORY, STORAGE];

impl Settings {
    /// The preset table in force: the built-in one, extended or replaced by settings.
    pub fn preset_table(&self) -> Result<Presets, String> {
        let mut table = if self.replace_builtin_presets {
            Presets::default()
        } else {
            Presets::built_in()
        };
        for (name, size) in &self.presets {
            let mut r = Resources::new();
            for (key, text) in [(CPU, &size.cpu), (MEMORY, &size.memory)] {
                let q = text
                    .parse()
                    .map_err(|e| format!("presets.{name}.{key}: {e}"))?;
                r.add(key, q).expect("two keys cannot overflow");
            }
            table.insert(name.clone(), r);
        }
        Ok(table)
    }

    /// The reservation key a declared quota key bounds.
    pub fn canonical_key<'a>(&'a self, declared: &'a str) -> &'a str {
        self.quota_key_aliases
            .get(declared)
            .map(String::as_str)
            .unwrap_or(declared)
    }
}

impl kubewarden_policy_sdk::settings::Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for kind in &self.exempt_kinds {
            if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
                problems.push(format!("exemptKinds: {kind:?} is not a Kubernetes kind"));
            }
        }
        for (from, to) in &self.quota_key_aliases {
            if !ALIAS_TARGETS.contains(&to.as_str()) {
                problems.push(format!(
                    "quotaKeyAliases.{from}: {to:?} is not a reservation key (one of {})",
                    ALIAS_TARGETS.join(", ")
                ));
            }
            if ALIAS_TARGETS.contains(&from.as_str()) {
                problems.push(format!(
                    "quotaKeyAliases.{from}: {from:?} is itself a reservation key and cannot be an alias"
                ));
            }
        }
        if self.replace_builtin_presets && self.presets.is_empty() {
            problems.push(
                "replaceBuiltinPresets is true but presets is empty: no preset could resolve"
                    .into(),
            );
        }
        if let Err(e) = self.preset_table() {
            problems.push(e);
        }
        for (device, class) in &self.gpu_device_classes {
            if device.is_empty() {
                problems.push("gpuDeviceClasses: a device name is empty".into());
            }
            if !is_dns_label(class) {
                problems.push(format!(
                    "gpuDeviceClasses.{device}: {class:?} is not a valid GPU class (a DNS label)"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::settings::Validatable;
    use serde_json::json;

    fn settings(v: serde_json::Value) -> Result<Settings, String> {
        let s: Settings = serde_json::from_value(v).map_err(|e| e.to_string())?;
        s.validate().map(|_| s)
    }

    #[test]
    fn defaults_are_fail_closed() {
        let s = settings(json!({})).unwrap();
        assert_eq!(s.sibling_failure, SiblingFailure::Deny);
        assert!(s.require_reservation);
        assert_eq!(s.canonical_key("requests.cpu"), "cpu");
        assert_eq!(s.canonical_key("limits.memory"), "memory");
        assert_eq!(s.canonical_key("requests.storage"), "storage");
        assert_eq!(
            s.canonical_key("services.loadbalancers"),
            "services.loadbalancers"
        );
        assert!(s.preset_table().unwrap().get("u1.medium").is_some());
    }

    #[test]
    fn accepts_a_full_configuration() {
        let s = settings(json!({
            "siblingFailure": "warn",
            "requireReservation": false,
            "exemptKinds": ["Info", "VirtualPrivateCloud"],
            "quotaKeyAliases": {"requests.cpu": "cpu"},
            "presets": {"gpu.large": {"cpu": 16, "memory": "64Gi"}, "u1.medium": {"cpu": "3", "memory": "8Gi"}},
            "gpuDeviceClasses": {"nvidia.com/GA102GL_A10": "a10"},
        }))
        .unwrap();
        assert_eq!(s.sibling_failure, SiblingFailure::Warn);
        assert_eq!(
            s.canonical_key("limits.cpu"),
            "limits.cpu",
            "aliases given replace the defaults"
        );
        let table = s.preset_table().unwrap();
        assert_eq!(
            table.get("gpu.large").unwrap().to_string(),
            "cpu 16, memory 64Gi"
        );
        assert_eq!(
            table.get("u1.medium").unwrap().to_string(),
            "cpu 3, memory 8Gi"
        );
        assert!(table.get("t1.nano").is_some());
    }

    #[test]
    fn refuses_bad_settings_with_specific_messages() {
        let cases = [
            (
                json!({"siblingFailure": "ignore"}),
                "unknown variant `ignore`",
            ),
            (
                json!({"sibingFailure": "warn"}),
                "unknown field `sibingFailure`",
            ),
            (json!({"requireReservation": "yes"}), "invalid type"),
            (
                json!({"exemptKinds": ["vm instance"]}),
                "exemptKinds: \"vm instance\" is not a Kubernetes kind",
            ),
            (
                json!({"quotaKeyAliases": {"requests.cpu": "cores"}}),
                "quotaKeyAliases.requests.cpu: \"cores\" is not a reservation key",
            ),
            (
                json!({"quotaKeyAliases": {"cpu": "memory"}}),
                "\"cpu\" is itself a reservation key",
            ),
            (
                json!({"presets": {"big": {"cpu": "1.5.3", "memory": "1Gi"}}}),
                "presets.big.cpu: \"1.5.3\" is not a valid quantity",
            ),
            (
                json!({"presets": {"big": {"cpu": "-1", "memory": "1Gi"}}}),
                "presets.big.cpu: \"-1\" is negative",
            ),
            (
                json!({"presets": {"big": {"cpu": "1"}}}),
                "missing field `memory`",
            ),
            (json!({"replaceBuiltinPresets": true}), "presets is empty"),
            (
                json!({"gpuDeviceClasses": {"nvidia.com/A10": "A10!"}}),
                "\"A10!\" is not a valid GPU class",
            ),
        ];
        for (input, want) in cases {
            let err = settings(input.clone()).unwrap_err();
            assert!(err.contains(want), "{input}: {err:?} lacks {want:?}");
        }
    }
}
