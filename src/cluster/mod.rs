//! Every Kubernetes lookup the policy makes, behind one small interface.
//!
//! [`Kubernetes`] answers three cluster-wide list queries with the raw JSON the Kubewarden
//! host returns; [`host::Host`] asks the host, `testing::Cluster` answers from memory
//! (tests, the benchmark and the fuzzers). Parsing the answers ([`parse`]) is shared, so a
//! fixture exercises the same code as production; [`masks`] says which fields to ask for.
//!
//! The number of calls per request is constant, whatever the number of applications: one
//! list of definitions, one list of HelmReleases (every application and every Tenant), and
//! one list of instance types only when an evaluation needs one. They come in that order,
//! as kwctl's session replay requires a deterministic sequence: the definitions come first
//! because they say which fields of the applications' values the policy reads, and so which
//! field masks the host can prune the HelmReleases to.

pub mod host;
mod masks;
mod parse;

use std::collections::BTreeSet;

use crate::keys::KIND_LABEL;

pub use masks::application_masks;
pub use parse::{Application, parse_applications, parse_definitions, parse_instance_types};

/// The three lists the policy reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// `cozystack.io/v1alpha1` ApplicationDefinitions.
    Definitions,
    /// `helm.toolkit.fluxcd.io/v2` HelmReleases labelled as Cozystack applications.
    Applications,
    /// `instancetype.kubevirt.io/v1beta1` VirtualMachineClusterInstancetypes.
    InstanceTypes,
}

impl Query {
    pub fn api_version(self) -> &'static str {
        match self {
            Query::Applications => "helm.toolkit.fluxcd.io/v2",
            Query::Definitions => "cozystack.io/v1alpha1",
            Query::InstanceTypes => "instancetype.kubevirt.io/v1beta1",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Query::Applications => "HelmRelease",
            Query::Definitions => "ApplicationDefinition",
            Query::InstanceTypes => "VirtualMachineClusterInstancetype",
        }
    }

    pub fn label_selector(self) -> Option<&'static str> {
        match self {
            Query::Applications => Some(KIND_LABEL),
            _ => None,
        }
    }

    /// The fields the policy reads of every object of the list, whatever the cluster holds
    /// (the host always keeps `apiVersion`, `kind` and `metadata`). A HelmRelease is also
    /// read in the value paths of [`application_masks`].
    pub fn fixed_field_masks(self) -> &'static [&'static str] {
        match self {
            // A HelmRelease's chart spec and status are most of its size.
            Query::Applications => &["metadata.labels", "metadata.name", "metadata.namespace"],
            // A definition's dashboard (its icon), release and secrets are most of its size.
            Query::Definitions => &[
                "metadata.name",
                "spec.application.kind",
                "spec.application.openAPISchema",
                "spec.release.prefix",
                "spec.reservation",
            ],
            // An instance type's description annotations are most of its size.
            Query::InstanceTypes => &[
                "metadata.name",
                "spec.cpu.guest",
                "spec.gpus",
                "spec.memory.guest",
            ],
        }
    }
}

/// Answers a list query with the JSON list the Kubewarden host returns, its items pruned to
/// `field_masks` (`None`: whole objects).
pub trait Kubernetes {
    fn list(&self, query: Query, field_masks: Option<&BTreeSet<String>>)
    -> Result<Vec<u8>, String>;
}

/// Why a list could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// The host call failed (its message says which list).
    #[error("{0}")]
    Unanswered(String),
    #[error("the {kind} list from the cluster is not a valid list: {reason}")]
    NotAList { kind: &'static str, reason: String },
}

/// `query` asked with `field_masks`, its answer's bytes.
pub fn list(
    k8s: &dyn Kubernetes,
    query: Query,
    field_masks: &BTreeSet<String>,
) -> Result<Vec<u8>, ClusterError> {
    k8s.list(query, Some(field_masks))
        .map_err(ClusterError::Unanswered)
}

/// The fixed field masks of `query` as a set.
pub fn fixed_masks(query: Query) -> BTreeSet<String> {
    query
        .fixed_field_masks()
        .iter()
        .map(|m| m.to_string())
        .collect()
}
