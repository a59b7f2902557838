//! The cluster from a file: a cluster-state YAML as the tests use (`test_data/**/cluster.yaml`)
//! or a dump from `kubectl get applicationdefinitions,helmreleases,virtualmachineclusterinstancetypes
//! -A -o json` (a `List`; JSON is YAML). Both are loaded as the replay-runner loads
//! `--cluster-state` (multi-document YAML, Lists expanded) into a host-sim store, so the
//! policy's lookups are answered, field masks included, as the Kubewarden host answers them.

use std::path::Path;

use std::collections::BTreeSet;

use anyhow::Result;
use host_sim::{ListQuery, ObjectStore};
use tenant_reservation_policy::cluster::{
    APPLICATION_DEFINITION, HELM_RELEASE, Kubernetes, Lookup,
};

/// The objects of a cluster-state file or a kubectl dump.
pub fn load(path: &Path) -> Result<ObjectStore> {
    replay_runner::cluster::from_file(path)
}

/// A cluster held in memory: the policy's lookups answered from a store as the host answers
/// them (selectors, field masks, the list envelope).
pub struct Stored(pub ObjectStore);

impl Kubernetes for Stored {
    fn list(&self, lookup: &Lookup, field_masks: &BTreeSet<String>) -> Result<Vec<u8>, String> {
        // The host's list request for `lookup`: its resource, namespace and selectors.
        let query = ListQuery::new(
            lookup.resource(),
            lookup.namespace(),
            lookup.label_selector(),
            lookup.field_selector(),
        );
        let answer = self
            .0
            .list(&query, Some(field_masks))
            .map_err(|e| format!("{}: {e}", lookup.describe()))?;
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

/// What a dump that cannot give a ledger lacks: a dump of the wrong resources is the common
/// mistake, and would otherwise show an empty ledger.
pub fn missing(store: &ObjectStore) -> Vec<String> {
    [APPLICATION_DEFINITION, HELM_RELEASE]
        .into_iter()
        .filter(|(api_version, kind)| {
            !store
                .objects()
                .any(|o| o["apiVersion"] == *api_version && o["kind"] == *kind)
        })
        .map(|(api_version, kind)| {
            format!(
                "the input holds no {api_version} {kind}: dump the cluster with `kubectl get \
                 applicationdefinitions,helmreleases,virtualmachineclusterinstancetypes -A -o json`"
            )
        })
        .collect()
}
