//! The cluster the flags name (a file, the live cluster, or one tenant's view of it) and the
//! settings to judge it under.

use std::io::Write;

use anyhow::{Result, bail};
use serde_json::Value;
use tenant_reservation_policy::cluster::{APPLICATION_DEFINITION, Kubernetes};

use super::args::{LedgerArgs, View};
use crate::live::{Connection, Live};
use crate::settings::{self, Source};
use crate::tenant::{self, TenantView};
use crate::{coverage, state};

/// The cluster the flags name.
pub enum Cluster {
    File(state::Stored),
    Live(Live),
    /// One tenant's pools, read live with what its roles grant.
    Tenant(Live, TenantView),
}

impl Cluster {
    pub fn kubernetes(&self) -> &dyn Kubernetes {
        match self {
            Cluster::File(stored) => stored,
            Cluster::Live(live) => live,
            Cluster::Tenant(_, view) => &view.cluster,
        }
    }

    pub(super) fn live(&self) -> Option<&Live> {
        match self {
            Cluster::File(_) => None,
            Cluster::Live(live) | Cluster::Tenant(live, _) => Some(live),
        }
    }

    /// The namespace whose pools are shown: `-n`, or the tenant's in a tenant's view.
    pub(super) fn namespace(&self, args: &LedgerArgs) -> Option<String> {
        match self {
            Cluster::Tenant(_, view) => Some(view.namespace.clone()),
            _ => args.namespace.clone(),
        }
    }
}

/// The cluster `--state`, `--dump` or the kubeconfig names, in the view `--view` asks for.
pub(super) fn open(args: &LedgerArgs, err: &mut dyn Write) -> Result<Cluster> {
    match args.state.as_ref().or(args.dump.as_ref()) {
        Some(path) => {
            let store = state::load(path)?;
            for warning in state::missing(&store) {
                writeln!(err, "warning: {}: {warning}", path.display())?;
            }
            Ok(Cluster::File(state::Stored(store)))
        }
        None => {
            let live = Live::connect(&Connection {
                kubeconfig: args.kubeconfig.clone(),
                context: args.context.clone(),
                as_user: args.as_user.clone(),
                as_groups: args.as_group.clone(),
                request_timeout: (!args.request_timeout.is_zero()).then_some(args.request_timeout),
                chunk_size: args.chunk_size,
            })?;
            view(args, live, err)
        }
    }
}

/// The tenant namespace a tenant's view would read: `-n`, else the context's namespace when a
/// tenant owns it.
fn tenant_namespace(args: &LedgerArgs, live: &Live) -> Option<String> {
    match &args.namespace {
        Some(namespace) => Some(namespace.clone()),
        None => live
            .default_namespace()
            .filter(|ns| tenant_reservation_policy::owner_of(ns).is_some())
            .map(str::to_string),
    }
}

/// The view `--view` asks for: under `auto`, the cluster's when the user may list
/// HelmReleases in every namespace (as `kubectl auth can-i` asks), else the tenant's.
fn view(args: &LedgerArgs, live: Live, err: &mut dyn Write) -> Result<Cluster> {
    let namespace = tenant_namespace(args, &live);
    let tenant = match args.view {
        View::Cluster => false,
        View::Tenant => true,
        // A tenant's view needs a tenant: without one, the cluster's view fails with what it
        // lacks, and says how a tenant's user reads theirs.
        View::Auto if namespace.is_none() => false,
        View::Auto => {
            let may = live
                .may_cluster_wide("list", "helm.toolkit.fluxcd.io", "helmreleases")
                .map_err(|e| {
                    anyhow::anyhow!("{}: cannot ask what the user may list: {e}", live.server())
                })?;
            !may
        }
    };
    if !tenant {
        return Ok(Cluster::Live(live));
    }
    if args.what_if.is_some() || args.compare.is_some() {
        bail!(
            "--what-if and --compare judge the whole cluster, which a tenant's view cannot read (--view cluster, with the RBAC of examples/plugin/rbac.yaml)"
        );
    }
    let Some(namespace) = namespace else {
        bail!("the tenant view reads one tenant: give its namespace with -n");
    };
    if args.view == View::Auto {
        writeln!(
            err,
            "view: the user may not list helmreleases cluster-wide (--view cluster to read every pool anyway)"
        )?;
    }
    let view = tenant::read(&live, &namespace)?;
    Ok(Cluster::Tenant(live, view))
}

/// The application kinds of the live cluster that `policy`'s rules never send to it.
pub(super) fn uncovered_kinds(live: &Live, policy: &Value) -> Vec<String> {
    let (api_version, kind) = APPLICATION_DEFINITION;
    match live.list_objects((api_version, kind, "applicationdefinitions"), None) {
        Ok(definitions) => coverage::uncovered(policy, &definitions),
        Err(e) => vec![format!(
            "cannot list applicationdefinitions.cozystack.io to check the policy's rules: {e}"
        )],
    }
}

/// The settings the flags name, and where they come from: `--settings`, else the deployed
/// ClusterAdmissionPolicy, else the shipped ones.
pub(super) fn choose_settings(args: &LedgerArgs, cluster: &Cluster) -> Result<(Value, Source)> {
    if let Some(path) = &args.settings {
        return Ok((
            settings::load(Some(path))?,
            Source::File(path.display().to_string()),
        ));
    }
    let Some(live) = cluster.live() else {
        if let Some(name) = &args.policy {
            bail!("--policy {name} reads a live cluster; with --state or --dump give --settings");
        }
        return Ok((
            settings::shipped()?,
            Source::Shipped("the cluster is read from a file".into()),
        ));
    };
    let policies = match live.cluster_admission_policies() {
        Ok(policies) => policies,
        // Without Kubewarden's CRD, or without the right to read policies, the shipped
        // settings are the best guess; unless the user named a policy.
        Err(e) if matches!(e.code(), Some(403 | 404)) && args.policy.is_none() => {
            let why = format!(
                "cannot list clusteradmissionpolicies.policies.kubewarden.io: {e}; give --settings to judge with the deployed ones"
            );
            return Ok((settings::shipped()?, Source::Shipped(why)));
        }
        Err(e) => bail!(
            "{}: cannot list clusteradmissionpolicies.policies.kubewarden.io: {e}",
            live.server()
        ),
    };
    match settings::deployed(&policies, args.policy.as_deref())? {
        Some(deployed) => Ok((
            deployed.settings,
            Source::Deployed {
                name: deployed.name,
                policy: deployed.policy,
            },
        )),
        None => Ok((
            settings::shipped()?,
            Source::Shipped("no ClusterAdmissionPolicy in the cluster runs this policy".into()),
        )),
    }
}
