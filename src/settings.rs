//! Policy settings, checked by `validate_settings` before any request is evaluated.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer};

use serde_json::Value;

use crate::builtin;
use crate::charge::definition::Reservation;
use crate::charge::presets::Presets;
use crate::cluster::permissions::User;
use crate::keys::{ALIAS_TARGETS, CPU, KeyAliases, MEMORY, is_dns_label};
use crate::quantity::Quantity;
use crate::resources::Resources;

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
    /// Kinds that reserve nothing, by design: these and the built-in ones (Gateway).
    #[serde(deserialize_with = "with_builtin_exemptions")]
    pub exempt_kinds: BTreeSet<String>,
    /// Declared quota key -> the reservation key it bounds.
    pub quota_key_aliases: KeyAliases,
    /// Extra or replacement resource presets.
    pub presets: BTreeMap<String, PresetSize>,
    /// Use only `presets`, not Cozystack's built-in table.
    pub replace_builtin_presets: bool,
    /// GPU device name (`nvidia.com/GA102GL_A10`) -> GPU class, for entries that name a
    /// device rather than a class.
    pub gpu_device_classes: BTreeMap<String, String>,
    /// Kind -> the reservation block of a kind whose ApplicationDefinition carries none (on a
    /// stock installation the CRD prunes `spec.reservation`); a definition's own block wins.
    /// The built-in blocks (src/reservations.yaml) with the setting's entries over them: a
    /// block adds or replaces a kind's, `null` removes the built-in one.
    #[serde(deserialize_with = "over_builtin_reservations")]
    pub reservations: BTreeMap<String, Value>,
    /// The user policy-server reads the cluster as (its ServiceAccount,
    /// `system:serviceaccount:NAMESPACE:NAME`): when set, a write first checks that it may list
    /// what the policy reads, and a refusal names a missing permission instead of
    /// waiting out the webhook's timeout (`cluster::permissions`). Empty: no check (what a
    /// form left blank sends).
    #[serde(deserialize_with = "empty_as_unset")]
    pub policy_server_user: Option<String>,
    /// Whether a write reads its pools from their `PoolReservation` summaries instead of
    /// listing every namespace, and how far it trusts them (`crate::summary`).
    pub pool_summary: PoolSummarySettings,
}

/// `poolSummary`: when and how far a write trusts a pool's summary.
#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolSummarySettings {
    pub mode: PoolSummaryMode,
    /// A summary renewed longer ago is stale (its controller may be gone).
    pub max_age_seconds: u32,
    /// A summary renewed this far in the future is still read (clock skew between the
    /// controller's node and policy-server's); further, it is not.
    pub max_clock_skew_seconds: u32,
}

impl Default for PoolSummarySettings {
    fn default() -> Self {
        PoolSummarySettings {
            mode: PoolSummaryMode::Off,
            max_age_seconds: 30,
            max_clock_skew_seconds: 10,
        }
    }
}

/// Whether pools are read from their summaries.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum PoolSummaryMode {
    /// Every pool is read from its namespaces' lists.
    Off,
    /// A trusted summary stands in for the lists; without one, the lists are read, with a
    /// warning naming the summary.
    Preferred,
    /// A write into a pool without a trusted summary is refused, naming the summary.
    Required,
}

impl PoolSummarySettings {
    /// The trust rule these settings set.
    pub fn trust(&self) -> crate::summary::freshness::Trust {
        use k8s_openapi::jiff::SignedDuration;
        crate::summary::freshness::Trust {
            max_age: SignedDuration::from_secs(self.max_age_seconds.into()),
            max_skew: SignedDuration::from_secs(self.max_clock_skew_seconds.into()),
        }
    }
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
        let json = match self {
            QuantityText::Text(s) => serde_json::Value::String(s.clone()),
            QuantityText::Number(n) => serde_json::Value::Number(n.clone()),
        };
        Quantity::from_json(&json).map_err(|e| e.to_string())
    }
}

impl PresetSize {
    /// The preset's `(key, size)` pairs; the error names the field (`presets.<name>.cpu: ...`).
    pub fn sizes(&self, name: &str) -> Result<[(&'static str, Quantity); 2], String> {
        let read = |key: &str, text: &QuantityText| {
            text.parse()
                .map_err(|e| format!("presets.{name}.{key}: {e}"))
        };
        Ok([
            (CPU, read(CPU, &self.cpu)?),
            (MEMORY, read(MEMORY, &self.memory)?),
        ])
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sibling_failure: SiblingFailure::Deny,
            require_reservation: true,
            exempt_kinds: builtin::EXEMPT_KINDS
                .iter()
                .map(|k| k.to_string())
                .collect(),
            quota_key_aliases: KeyAliases::default(),
            presets: BTreeMap::new(),
            replace_builtin_presets: false,
            gpu_device_classes: BTreeMap::new(),
            reservations: builtin::reservations().clone(),
            policy_server_user: None,
            pool_summary: PoolSummarySettings::default(),
        }
    }
}

impl Settings {
    /// The preset table in force: the built-in one, extended or replaced by `presets`.
    pub fn preset_table(&self) -> Result<Presets, String> {
        let mut table = if self.replace_builtin_presets {
            Presets::default()
        } else {
            Presets::built_in()
        };
        for (name, size) in &self.presets {
            let mut r = Resources::new();
            for (key, q) in size.sizes(name)? {
                r.add(key, q).expect("two keys cannot overflow");
            }
            table.insert(name.clone(), r);
        }
        Ok(table)
    }
}

/// The oldest a summary may be trusted at: past ten minutes, the lists are the better read.
const MAX_SUMMARY_AGE_SECONDS: u32 = 600;

/// `exemptKinds` as given, plus the built-in exemptions (a list never un-exempts Gateway).
fn with_builtin_exemptions<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeSet<String>, D::Error> {
    let mut kinds = BTreeSet::<String>::deserialize(d)?;
    kinds.extend(builtin::EXEMPT_KINDS.iter().map(|k| k.to_string()));
    Ok(kinds)
}

/// The built-in blocks with the `reservations` setting over them: an entry's block adds or
/// replaces the kind's, `null` removes the built-in block (an explicit opt-out, refused for a
/// kind that has none: a misspelt kind must not pass silently).
fn over_builtin_reservations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Value>, D::Error> {
    use serde::de::Error;
    let given = BTreeMap::<String, Value>::deserialize(d)?;
    let mut blocks = builtin::reservations().clone();
    for (kind, block) in given {
        if block.is_null() {
            if blocks.remove(&kind).is_none() {
                return Err(D::Error::custom(format!(
                    "reservations.{kind}: null removes a built-in block, and {kind:?} has none"
                )));
            }
        } else {
            blocks.insert(kind, block);
        }
    }
    Ok(blocks)
}

/// A settings document without `policyServerUser`, for what does not read the cluster as
/// policy-server: the ledger's what-if (its user's reads), the e2e scenarios and the bench's
/// model of the host (no RBAC behind them).
pub fn without_permission_check(mut settings: Value) -> Value {
    if let Some(fields) = settings.as_object_mut() {
        fields.remove("policyServerUser");
    }
    settings
}

fn empty_as_unset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.filter(|s| !s.is_empty()))
}

fn is_kind(kind: &str) -> bool {
    !kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphanumeric())
}

impl kubewarden_policy_sdk::settings::Validatable for Settings {
    fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for kind in &self.exempt_kinds {
            if !is_kind(kind) {
                problems.push(format!("exemptKinds: {kind:?} is not a Kubernetes kind"));
            }
        }
        for (kind, block) in &self.reservations {
            if !is_kind(kind) {
                problems.push(format!("reservations: {kind:?} is not a Kubernetes kind"));
            } else if let Err(e) = Reservation::from_value(block) {
                problems.push(format!("reservations.{kind}: {e}"));
            }
        }
        for (from, to) in self.quota_key_aliases.iter() {
            if !ALIAS_TARGETS.contains(&to) {
                problems.push(format!(
                    "quotaKeyAliases.{from}: {to:?} is not a reservation key (one of {})",
                    ALIAS_TARGETS.join(", ")
                ));
            }
            if ALIAS_TARGETS.contains(&from) {
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
        if let Some(problem) = self.policy_server_user.as_deref().and_then(User::invalid) {
            problems.push(format!("policyServerUser: {problem}"));
        }
        let summary = &self.pool_summary;
        if !(1..=MAX_SUMMARY_AGE_SECONDS).contains(&summary.max_age_seconds) {
            problems.push(format!(
                "poolSummary.maxAgeSeconds: {} is not between 1 and {MAX_SUMMARY_AGE_SECONDS}",
                summary.max_age_seconds
            ));
        }
        if summary.max_clock_skew_seconds > summary.max_age_seconds {
            problems.push(format!(
                "poolSummary.maxClockSkewSeconds: {} is more than maxAgeSeconds ({})",
                summary.max_clock_skew_seconds, summary.max_age_seconds
            ));
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
        assert_eq!(s.quota_key_aliases, KeyAliases::default());
        assert!(s.presets.is_empty() && !s.replace_builtin_presets);
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
            s.quota_key_aliases.canonical("limits.cpu"),
            "limits.cpu",
            "aliases given replace the defaults"
        );
        let sizes = s.presets["gpu.large"].sizes("gpu.large").unwrap();
        assert_eq!(
            sizes,
            [
                (CPU, Quantity::from_units(16)),
                (MEMORY, Quantity::parse("64Gi").unwrap())
            ]
        );
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
            (
                json!({"reservations": {"Postgress": null}}),
                "reservations.Postgress: null removes a built-in block, and \"Postgress\" has none",
            ),
            (
                json!({"reservations": {"Postgres": {"replicas": "replicas", "bogus": 1}}}),
                "reservations.Postgres: ",
            ),
            (
                json!({"policyServerUser": "system:serviceaccount:kubewarden"}),
                "policyServerUser: \"system:serviceaccount:kubewarden\" is not a ServiceAccount's user",
            ),
            (json!({"policyServerUser": 7}), "invalid type: integer `7`"),
            (
                json!({"poolSummary": {"mode": "always"}}),
                "unknown variant `always`, expected one of `off`, `preferred`, `required`",
            ),
            (
                json!({"poolSummary": {"maxAge": 30}}),
                "unknown field `maxAge`",
            ),
            (
                json!({"poolSummary": {"maxAgeSeconds": 0}}),
                "poolSummary.maxAgeSeconds: 0 is not between 1 and 600",
            ),
            (
                json!({"poolSummary": {"maxAgeSeconds": 601}}),
                "poolSummary.maxAgeSeconds: 601 is not between 1 and 600",
            ),
            (
                json!({"poolSummary": {"maxAgeSeconds": 5, "maxClockSkewSeconds": 6}}),
                "poolSummary.maxClockSkewSeconds: 6 is more than maxAgeSeconds (5)",
            ),
            (
                json!({"poolSummary": {"maxAgeSeconds": -1}}),
                "invalid value: integer `-1`",
            ),
        ];
        for (input, want) in cases {
            let err = settings(input.clone()).unwrap_err();
            assert!(err.contains(want), "{input}: {err:?} lacks {want:?}");
        }
    }

    #[test]
    fn an_empty_policy_server_user_is_no_check() {
        for unset in [
            json!({}),
            json!({"policyServerUser": ""}),
            json!({"policyServerUser": null}),
        ] {
            assert_eq!(settings(unset).unwrap().policy_server_user, None);
        }
        let user = "system:serviceaccount:kubewarden:ps";
        let set = settings(json!({"policyServerUser": user})).unwrap();
        assert_eq!(set.policy_server_user.as_deref(), Some(user));
        assert_eq!(
            without_permission_check(json!({"policyServerUser": user, "siblingFailure": "warn"})),
            json!({"siblingFailure": "warn"})
        );
    }

    #[test]
    fn built_in_defaults_complete_empty_settings() {
        let s = settings(json!({})).unwrap();
        assert_eq!(&s.reservations, builtin::reservations());
        assert!(s.reservations.contains_key("Postgres") && s.reservations.contains_key("Tenant"));
        assert!(s.exempt_kinds.contains("Gateway"));
        let listed = settings(json!({"exemptKinds": ["Info"]})).unwrap();
        assert_eq!(
            listed.exempt_kinds,
            BTreeSet::from(["Gateway".to_string(), "Info".to_string()])
        );
    }

    #[test]
    fn the_reservations_setting_adds_replaces_and_removes_built_in_blocks() {
        let mine = json!({"replicas": "replicas", "fixed": {"cpu": "1", "memory": "1Gi"}});
        let s = settings(json!({"reservations": {
            "Postgres": mine, "MyApp": mine, "Redis": null
        }}))
        .unwrap();
        assert_eq!(
            s.reservations["Postgres"], mine,
            "a block replaces the built-in one"
        );
        assert_eq!(s.reservations["MyApp"], mine, "a block adds a kind");
        assert!(
            !s.reservations.contains_key("Redis"),
            "null removes the built-in block"
        );
        assert_eq!(
            s.reservations["MariaDB"],
            builtin::reservations()["MariaDB"],
            "the other built-in blocks stay"
        );
    }
}
