//! Every Kubernetes lookup the policy makes, behind one small interface.
//!
//! [`Kubernetes`] answers a [`Lookup`] with the raw JSON list the Kubewarden host returns;
//! [`host::Host`] asks the host, the test kit's `Fixture` answers from memory (tests, the
//! benchmark and the fuzzers). Parsing the answers ([`parse`]) is shared, so a fixture
//! exercises the same code as production; [`masks`] says which fields to ask for.
//!
//! The lookups read what a decision needs and no more, so that a request's cost follows the
//! pool it lands in, not the cluster:
//!
//! - the definitions, without their schemas, and a kind's schema only when one of its
//!   applications is evaluated;
//! - the Tenants above the namespace written to, one by one by name;
//! - the applications (and child Tenants) of each namespace of the pools in question, one
//!   namespace at a time, up to `NAMESPACE_LISTS` namespaces; a request whose pools need more
//!   reads every application of the cluster in one list instead;
//! - an instance type by name, only when an evaluation needs it;
//! - under `policyServerUser`, policy-server's permission to list each resource, before its
//!   first list ([`permissions`]);
//! - under `poolSummary`, the summary of each pool a write checks, by name (one GET).
//!
//! Every lookup is a list (the host serves lists from a watch cache: no API round trip per
//! request; a permission check is a SubjectAccessReview the host keeps 5 s), and their
//! sequence depends only on the request and the cluster, as kwctl's session replay requires.

pub mod host;
mod masks;
mod parse;
pub mod permissions;

use std::collections::BTreeSet;

use crate::keys::{KIND_LABEL, TENANT_KIND};

pub use masks::application_masks;
pub use parse::{
    Application, parse_applications, parse_definitions, parse_instance_types, parse_schemas,
};

/// `helm.toolkit.fluxcd.io/v2` HelmRelease: how Cozystack stores an application.
pub const HELM_RELEASE: (&str, &str) = ("helm.toolkit.fluxcd.io/v2", "HelmRelease");
/// `cozystack.io/v1alpha1` ApplicationDefinition.
pub const APPLICATION_DEFINITION: (&str, &str) = ("cozystack.io/v1alpha1", "ApplicationDefinition");
/// `instancetype.kubevirt.io/v1beta1` VirtualMachineClusterInstancetype.
pub const INSTANCE_TYPE: (&str, &str) = (
    "instancetype.kubevirt.io/v1beta1",
    "VirtualMachineClusterInstancetype",
);

/// What every application listed keeps: the rest of a HelmRelease (its chart spec and
/// status) is most of its size, and only the value paths of [`application_masks`] are read.
pub(crate) const APPLICATION_FIXED_MASKS: &[&str] =
    &["metadata.labels", "metadata.name", "metadata.namespace"];

/// One list the policy reads.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lookup {
    /// Every ApplicationDefinition, without its schema.
    Definitions,
    /// Every ApplicationDefinition's `openAPISchema`: one list for all (a list by name would be
    /// one more reflector, an initial LIST and a WATCH, in policy-server for each kind read).
    Schemas,
    /// One Tenant's HelmRelease, by its namespace and release name: a tenant above the
    /// namespace written to.
    Tenant { namespace: String, release: String },
    /// Every application of one namespace (its child Tenants included).
    Applications { namespace: String },
    /// Every application of the cluster: the ledger's one read, and an admission's once its
    /// pools need more than `NAMESPACE_LISTS` namespaces.
    AllApplications,
    /// Every VirtualMachineClusterInstancetype, pruned to its sizes: one list for all, for the
    /// same reason (the hundred a Cozystack installs are small once pruned: their description
    /// annotations, most of their size, are not kept).
    InstanceTypes,
}

/// What a lookup reads, without its parameters: for fixtures that answer every lookup of one
/// kind alike, and for counting calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Definitions,
    Schema,
    Tenant,
    Applications,
    InstanceTypes,
}

impl Lookup {
    pub fn source(&self) -> Source {
        match self {
            Lookup::Definitions => Source::Definitions,
            Lookup::Schemas => Source::Schema,
            Lookup::Tenant { .. } => Source::Tenant,
            Lookup::Applications { .. } | Lookup::AllApplications => Source::Applications,
            Lookup::InstanceTypes => Source::InstanceTypes,
        }
    }

    /// The listed resource: (apiVersion, kind).
    pub fn resource(&self) -> (&'static str, &'static str) {
        match self {
            Lookup::Definitions | Lookup::Schemas => APPLICATION_DEFINITION,
            Lookup::Tenant { .. } | Lookup::Applications { .. } | Lookup::AllApplications => {
                HELM_RELEASE
            }
            Lookup::InstanceTypes => INSTANCE_TYPE,
        }
    }

    /// The namespace listed (`list_resources_by_namespace`); `None`: the whole cluster
    /// (`list_resources_all`).
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Lookup::Tenant { namespace, .. } | Lookup::Applications { namespace } => {
                Some(namespace)
            }
            _ => None,
        }
    }

    pub fn label_selector(&self) -> Option<String> {
        match self {
            Lookup::Applications { .. } | Lookup::AllApplications => Some(KIND_LABEL.to_string()),
            Lookup::Tenant { .. } => Some(format!("{KIND_LABEL}={TENANT_KIND}")),
            _ => None,
        }
    }

    pub fn field_selector(&self) -> Option<String> {
        match self {
            Lookup::Tenant { release, .. } => Some(format!("metadata.name={release}")),
            _ => None,
        }
    }

    /// The fields the policy reads of every object listed, whatever the cluster holds (the
    /// host always keeps `apiVersion`, `kind` and `metadata`). The applications of a
    /// namespace are also read in the value paths of [`application_masks`].
    pub fn fixed_field_masks(&self) -> &'static [&'static str] {
        match self {
            // A tenant above is an application too: read in the same value paths, for its quota
            // and the modules its values switch on.
            Lookup::Applications { .. } | Lookup::AllApplications | Lookup::Tenant { .. } => {
                APPLICATION_FIXED_MASKS
            }
            // A definition's dashboard (its icon), release and secrets are most of its size;
            // its schema most of the rest, read alone when needed.
            Lookup::Definitions => &[
                "metadata.name",
                "spec.application.kind",
                "spec.release.prefix",
                "spec.reservation",
            ],
            Lookup::Schemas => &["metadata.name", "spec.application.openAPISchema"],
            Lookup::InstanceTypes => &[
                "metadata.name",
                "spec.cpu.guest",
                "spec.gpus",
                "spec.memory.guest",
            ],
        }
    }

    /// What a SubjectAccessReview names the listed resource by: (API group, plural); the
    /// group is [`Lookup::resource`]'s.
    pub fn group_resource(&self) -> (&'static str, &'static str) {
        let (api_version, _) = self.resource();
        let group = api_version.split_once('/').map_or("", |(group, _)| group);
        let plural = match self {
            Lookup::Definitions | Lookup::Schemas => "applicationdefinitions",
            Lookup::Tenant { .. } | Lookup::Applications { .. } | Lookup::AllApplications => {
                "helmreleases"
            }
            Lookup::InstanceTypes => "virtualmachineclusterinstancetypes",
        };
        (group, plural)
    }

    /// `the HelmReleases of namespace tenant-a`, for messages.
    pub fn describe(&self) -> String {
        let (api_version, kind) = self.resource();
        match self {
            Lookup::Definitions | Lookup::InstanceTypes => format!("{api_version} {kind}"),
            Lookup::Schemas => format!("the schemas of every {api_version} {kind}"),
            Lookup::Tenant { namespace, release } => {
                format!("{api_version} {kind} {namespace}/{release}")
            }
            Lookup::Applications { namespace } => {
                format!("{api_version} {kind} in namespace {namespace}")
            }
            Lookup::AllApplications => format!("{api_version} {kind}"),
        }
    }
}

/// Answers a lookup with the JSON list the Kubewarden host returns, its items pruned to
/// `field_masks`.
pub trait Kubernetes {
    fn list(&self, lookup: &Lookup, field_masks: &BTreeSet<String>) -> Result<Vec<u8>, String>;

    /// The `PoolReservation` of the pools rooted at the tenant owning `namespace` (named after
    /// it, stored in it): a GET (the host keeps an answer 5 s), so no reflector to sync cold
    /// and no watch held warm. Only admissions under `poolSummary` ask.
    fn pool_summary(&self, namespace: &str) -> Result<Vec<u8>, String> {
        let _ = namespace;
        Err("this reader of the cluster does not serve pool summaries".to_string())
    }

    /// Whether `user` may do `permission` in every namespace (a SubjectAccessReview); `Err`:
    /// no answer. Only admissions under `policyServerUser` ask (see [`permissions`]).
    fn can_i(&self, user: &permissions::User, permission: &Permission) -> Result<Access, String> {
        let _ = (user, permission);
        Err("this reader of the cluster does not answer permission checks".to_string())
    }
}

/// One permission a list needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Permission {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
}

impl std::fmt::Display for Permission {
    /// `list helmreleases.helm.toolkit.fluxcd.io`, as kubectl auth can-i takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}.{}", self.verb, self.resource, self.group)
    }
}

/// The API server's answer to a permission check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub allowed: bool,
    /// Why, as the authorizer says it (often empty on a denial: no rule allows it).
    pub reason: String,
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

/// `lookup` asked with `field_masks`, its answer's bytes.
pub fn list(
    k8s: &dyn Kubernetes,
    lookup: &Lookup,
    field_masks: &BTreeSet<String>,
) -> Result<Vec<u8>, ClusterError> {
    k8s.list(lookup, field_masks)
        .map_err(ClusterError::Unanswered)
}

/// `lookup` asked with its fixed field masks.
pub fn list_fixed(k8s: &dyn Kubernetes, lookup: &Lookup) -> Result<Vec<u8>, ClusterError> {
    list(k8s, lookup, &fixed_masks(lookup))
}

/// The fixed field masks of `lookup` as a set.
pub fn fixed_masks(lookup: &Lookup) -> BTreeSet<String> {
    lookup
        .fixed_field_masks()
        .iter()
        .map(|m| m.to_string())
        .collect()
}
