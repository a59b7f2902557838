//! The cluster from a file: a cluster-state YAML as the tests use (`test_data/**/cluster.yaml`)
//! or a dump from `kubectl get applicationdefinitions,helmreleases,virtualmachineclusterinstancetypes
//! -A -o json` (a `List`; JSON is YAML). Both are loaded as the replay-runner loads
//! `--cluster-state` (multi-document YAML, Lists expanded) into a host-sim store, so the
//! policy's lookups are answered, field masks included, as the Kubewarden host answers them.

use std::path::Path;

use anyhow::Result;
use host_sim::ObjectStore;
use tenant_reservation_policy::cluster::{APPLICATION_DEFINITION, HELM_RELEASE};
use tenant_reservation_policy::testing::Fixture;

/// The objects of a cluster-state file or a kubectl dump.
pub fn load(path: &Path) -> Result<ObjectStore> {
    replay_runner::cluster::from_file(path)
}

/// The cluster `store` holds, answering the policy's lookups.
pub fn cluster(store: ObjectStore) -> Fixture {
    Fixture::from_store(store)
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
