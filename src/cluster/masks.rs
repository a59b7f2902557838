//! The field masks of the applications' lists, so that only the values the reservations read
//! travel.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::APPLICATION_FIXED_MASKS;
use crate::charge::definition::{ApplicationDefinition, Reservation};
use crate::keys::RESOURCE_QUOTAS;

/// The field masks that keep a HelmRelease's whole `spec.values`: used when the definitions
/// cannot be read, so that nothing a reservation might read is pruned.
const WHOLE_VALUES: &[&str] = &["spec.values"];

/// More masks than this (a cluster with very many definitions) and the whole values are
/// asked for instead: a long mask list costs the host more than it saves.
const MAX_FIELD_MASKS: usize = 256;

/// The field masks for the HelmRelease list: the fixed ones, every `spec.values` path the
/// reservation block in force of a definition reads (its own, else `fallback`'s for its
/// kind: the settings' blocks), and a Tenant's `resourceQuotas`. Without definitions
/// (`None`: they cannot be read) the whole values are kept.
///
/// A mask under another is dropped: the host keeps only the deeper path when both are given
/// (`spec` with `spec.a` keeps only `spec.a`), and the shorter one must keep its subtree.
pub fn application_masks(
    definitions: Option<&[ApplicationDefinition]>,
    fallback: &BTreeMap<String, Value>,
) -> BTreeSet<String> {
    let fixed = APPLICATION_FIXED_MASKS.iter();
    let whole = || {
        fixed
            .clone()
            .chain(WHOLE_VALUES)
            .map(|m| m.to_string())
            .collect()
    };
    let Some(definitions) = definitions else {
        return whole();
    };
    let blocks: Vec<Reservation> = definitions
        .iter()
        .filter_map(|d| {
            d.spec
                .reservation
                .as_ref()
                .filter(|b| !b.is_null())
                .or_else(|| fallback.get(&d.spec.application.kind))
        })
        // A block that does not parse makes its kind unevaluable whatever the values hold.
        .filter_map(|block| Reservation::from_value(block).ok())
        .collect();
    let mut paths = BTreeSet::from([RESOURCE_QUOTAS]);
    for block in &blocks {
        block.read_paths(&mut paths);
    }
    let under_another = |path: &str| {
        path.match_indices('.')
            .any(|(dot, _)| paths.contains(&path[..dot]))
    };
    let masks: BTreeSet<String> = paths
        .iter()
        .filter(|p| !under_another(p))
        .map(|p| format!("spec.values.{p}"))
        .chain(fixed.clone().map(|m| m.to_string()))
        .collect();
    if masks.len() > MAX_FIELD_MASKS {
        return whole();
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition(kind: &str, reservation: serde_json::Value) -> ApplicationDefinition {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": kind.to_lowercase()},
            "spec": {"application": {"kind": kind}, "reservation": reservation},
        }))
        .unwrap()
    }

    #[test]
    fn masks_keep_what_the_reservations_read_and_no_path_under_another() {
        let masks = |defs: &[ApplicationDefinition]| -> Vec<String> {
            application_masks(Some(defs), &BTreeMap::new())
                .into_iter()
                .collect()
        };
        let defs = [
            definition(
                "A",
                serde_json::json!({"replicas": "x.replicas", "resources": "x",
                "components": [{"enabledBy": "y.enabled", "storage": ["y.size", "z"]}]}),
            ),
            definition(
                "B",
                serde_json::json!({"each": {"path": "groups",
                "reservation": {"replicas": "maxReplicas"}}, "preset": "x-preset"}),
            ),
            // Unparseable: its kind cannot be evaluated whatever its values hold.
            definition("C", serde_json::json!({"replica": "ignored"})),
        ];
        assert_eq!(
            masks(&defs),
            [
                "metadata.labels",
                "metadata.name",
                "metadata.namespace",
                "spec.values.groups",
                "spec.values.resourceQuotas",
                "spec.values.x",
                "spec.values.x-preset",
                "spec.values.y.enabled",
                "spec.values.y.size",
                "spec.values.z",
            ]
        );
        let whole: BTreeSet<String> = [
            "metadata.labels",
            "metadata.name",
            "metadata.namespace",
            "spec.values",
        ]
        .map(String::from)
        .into();
        assert_eq!(application_masks(None, &BTreeMap::new()), whole);
        let many: Vec<ApplicationDefinition> = (0..300)
            .map(|i| {
                definition(
                    &format!("K{i}"),
                    serde_json::json!({"storage": format!("s{i}")}),
                )
            })
            .collect();
        assert_eq!(application_masks(Some(&many), &BTreeMap::new()), whole);
    }
}
