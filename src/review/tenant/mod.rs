//! The Tenant declaration gate: a child tenant's declared `resourceQuotas` must fit in the
//! pools above it, every key in the GPU budget domain must be a budget key, a lowered
//! declaration must cover what the child's subtree already holds, and the modules the write
//! switches on must fit where they land.
//!
//! For each key a pool above the child bounds, the pool's load after the write (its
//! carve-outs, the child's included, plus its member applications' reservations, plus the
//! modules that land in it) may not grow past its budget. The applications counted are the
//! pool's after the write, so a child that starts bounding a key takes its subtree out of the
//! pool, as Cozystack's `parentPoolUsage` counts pool usage beside the sibling declarations.
//! A module lands in the namespace the child owns: in the child's own pool for the keys the
//! child bounds, else in the pool above.
//!
//! - here: the gate's steps, in order, and the checks of the declaration itself;
//! - [`scope`]: what the write changes, where it is checked, and the reads that takes;
//! - [`checks`]: the check of each pool, and how the gate ends.

mod checks;
mod scope;

use super::refusal::Refusal;
use super::subject::Subject;
use super::verdict::Notes;
use crate::context::Context;
use crate::keys::{GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, in_gpu_domain, is_gpu_budget_key};
use crate::pool::{declared_quota, is_tenant_name, owned_namespace};
use crate::quantity::Quantity;
use checks::{Findings, Usages};
use scope::{Change, Scope, TenantWrite};

/// The gate, step by step. The host is asked in this order, always: the tenants above, the
/// Tenant kind's definition, the owned namespace's releases (for the modules), the pools from
/// their roots down, then what the pools' applications reserve.
pub(super) fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    let declared = declared(subject)?;
    let owns = owned_namespace(subject.name, subject.namespace);
    let mut before = context.tenants_above(subject.namespace)?;
    let change = Change::of(context, subject, &declared, &owns)?;
    let scope = Scope::of(&change, &before, subject.namespace, &owns);
    let write = TenantWrite {
        subject,
        context,
        owns,
        change,
        scope,
    };
    if write.scope.checks_nothing() {
        return write.warn_only(&mut before, notes);
    }

    write.read_pools(&mut before, notes)?;
    let parents = write.parent_pools(&before)?;
    let after = before.with(write.child());
    let pools = write.pools_after(parents, &after);
    let usages = Usages::of(context, &pools, &write.owns)?;
    let mut findings = Findings::default();
    for parent in &pools.parents {
        write.check_parent_pool(parent, &usages, &mut findings)?;
    }
    for own in &pools.own {
        write.check_own_pool(own, &pools, &usages, &mut findings)?;
    }
    write.conclude(pools.names(&write.owns), usages, findings, notes)
}

/// The child's declared quota: refused when it is malformed, when it holds keys of the GPU
/// budget domain that are not budget keys, or when the Tenant's name would own no namespace.
fn declared(subject: &Subject<'_>) -> Result<Vec<(String, Quantity)>, Refusal> {
    let declared = declared_quota(subject.values).map_err(Refusal::Declaration)?;
    let problem = unenforced_gpu_keys(&declared).or_else(|| owns_no_namespace(subject.name));
    match problem {
        Some(problem) => Err(Refusal::Declaration(vec![problem])),
        None => Ok(declared),
    }
}

/// The declared keys in the GPU budget domain that are not budget keys: nothing would
/// enforce them.
fn unenforced_gpu_keys(declared: &[(String, Quantity)]) -> Option<String> {
    let unenforced: Vec<String> = declared
        .iter()
        .filter(|(k, _)| in_gpu_domain(k) && !is_gpu_budget_key(k))
        .map(|(k, _)| format!("spec.resourceQuotas.{k}"))
        .collect();
    if unenforced.is_empty() {
        return None;
    }
    let one = unenforced.len() == 1;
    Some(format!(
        "{} {} in the GPU budget domain but not a budget key ({GPU_ALL_CLASSES} or <class>{GPU_CLASS_SUFFIX}): the tenant chart keeps such keys out of the ResourceQuota, so nothing would enforce {}",
        unenforced.join(", "),
        if one { "is" } else { "are" },
        if one { "it" } else { "them" },
    ))
}

/// A Tenant whose name the tenant chart cannot render as a release owning a namespace.
fn owns_no_namespace(name: &str) -> Option<String> {
    (!is_tenant_name(name)).then(|| format!(
        "the tenant chart renders a Tenant only as the release tenant-<name> with no other dash, so {name:?} would own no namespace"
    ))
}
