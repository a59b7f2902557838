//! Every summary of a cluster, computed with the admission's own code over the whole cluster
//! read at once: what the controller writes, and what the ledger's `summaries` prints.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kubewarden_policy_sdk::settings::Validatable;

use super::{
    Digest, GROUP, KIND, Metadata, PoolReservation, ShareDigest, SummaryStatus, TenantDigest,
    VERSION, fingerprint,
};
use crate::cluster::Kubernetes;
use crate::context::Context;
use crate::keys::show;
use crate::ledger::LedgerError;
use crate::pool::{Tenancy, Tenant};
use crate::settings::Settings;

/// One `PoolReservation` per tenant that bounds some key with a readable quota (a pool whose
/// budget cannot be read refuses every write without a sum), renewed at `renewed_at`, in the
/// order of their names.
pub fn summaries(
    settings: &Settings,
    k8s: &dyn Kubernetes,
    renewed_at: Timestamp,
) -> Result<Vec<PoolReservation>, LedgerError> {
    settings.validate().map_err(LedgerError::Settings)?;
    let context = Context::new(settings, k8s).map_err(LedgerError::Settings)?;
    let tenancy = context.read_whole_cluster()?;
    let fingerprint = fingerprint::of(settings);
    let mut roots: Vec<&Tenant> = tenancy
        .iter()
        .filter(|t| t.quota.as_ref().is_ok_and(|b| !b.is_empty()))
        .collect();
    roots.sort_by(|a, b| a.owns.cmp(&b.owns));
    let mut out = Vec::with_capacity(roots.len());
    for root in roots {
        let mut status = SummaryStatus {
            renewed_at: Time(renewed_at),
            settings: fingerprint.clone(),
            namespaces: Default::default(),
        };
        for member in reached(&tenancy, root) {
            status
                .namespaces
                .insert(member.owns.clone(), digest(&context, member)?);
        }
        out.push(PoolReservation {
            api_version: format!("{GROUP}/{VERSION}"),
            kind: KIND.to_string(),
            metadata: Metadata {
                name: root.owns.clone(),
                namespace: root.owns.clone(),
            },
            status: Some(status),
        });
    }
    Ok(out)
}

/// The tenants whose namespaces some pool rooted at `root` holds, the root first.
fn reached<'t>(tenancy: &'t Tenancy, root: &'t Tenant) -> Vec<&'t Tenant> {
    let mut reached: Vec<&Tenant> = Vec::new();
    for (key, _) in root.quota.iter().flat_map(|b| b.iter()) {
        for member in tenancy.pool_rooted_at(root, key).members {
            if !reached.iter().any(|t| t.owns == member.owns) {
                reached.push(member);
            }
        }
    }
    reached
}

/// The namespace `owner` owns, as a summary keeps it.
fn digest(context: &Context<'_>, owner: &Tenant) -> Result<Digest, LedgerError> {
    let listing = context.listing(&owner.owns)?;
    let (shares, problems) = context.shares(&owner.owns, owner)?;
    Ok(Digest {
        tenants: listing
            .tenants
            .iter()
            .map(|t| TenantDigest {
                owns: t.owns.clone(),
                budget: t.quota.as_ref().ok().map(|b| {
                    b.iter()
                        .map(|(key, q)| (key.to_string(), show(key, q)))
                        .collect()
                }),
                unreadable: t.quota.as_ref().err().cloned(),
            })
            .collect(),
        shares: shares
            .iter()
            .map(|(key, share)| (key.clone(), ShareDigest::of(key, share)))
            .collect(),
        unevaluable: problems.applications,
        unevaluable_modules: problems.modules,
        unplaced: listing.unplaced.clone(),
    })
}
