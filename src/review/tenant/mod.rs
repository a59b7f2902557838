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

use super::{Notes, Refusal, Subject, tenants_above};
use crate::context::Context;
use crate::keys::{GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, in_gpu_domain, is_gpu_budget_key};
use crate::pool::{Tenant, declared_quota, is_tenant_name, owned_namespace};
use crate::quantity::Quantity;
use checks::{Findings, Write, pools_checked};
use scope::{Change, Scope, Usages, own_pools, parent_pools, parents_after, read_pools, warn_only};

/// The gate, step by step. The host is asked in this order, always: the tenants above, the
/// Tenant kind's definition, the owned namespace's releases (for the modules), the pools from
/// their roots down, then what the pools' applications reserve.
pub(super) fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    let label = subject.label();
    let declared = declared(subject, &label)?;
    let owns = owned_namespace(subject.name, subject.namespace);
    // The root tenant has no pool above it; only its modules are checked, in its own pools.
    let is_root = owns == subject.namespace;
    let mut before = tenants_above(context, subject)?;
    let change = Change::of(context, subject, &declared, &owns, &label)?;
    let scope = Scope::of(&change, &before, subject, is_root);
    if scope.parent_keys.is_empty() && scope.own_keys.is_empty() {
        warn_only(context, subject, &mut before, &scope, &change, notes)?;
        return Ok(());
    }

    read_pools(context, subject, &mut before, &scope, &owns, notes)?;
    let parents = parent_pools(&before, subject, &scope.parent_keys)?;
    let child = Tenant {
        namespace: subject.namespace.to_string(),
        owns: owns.clone(),
        quota: Ok(change.new.clone()),
        bounded: !change.new.is_empty(),
    };
    let after = before.with(child.clone());
    let own = own_pools(&after, &child, &scope.own_keys);
    let parents_after = parents_after(&after, &parents);
    let usages = Usages::of(context, &label, &parents, &parents_after, &own)?;

    let write = Write {
        label: &label,
        owns: &owns,
        change: &change,
    };
    let mut findings = Findings::default();
    for ((before_pool, budget), after_pool) in parents.iter().zip(&parents_after) {
        write.check_parent_pool(
            before_pool,
            *budget,
            after_pool,
            &usages,
            &mut findings,
            notes,
        )?;
    }
    for (own_pool, hands_back) in &own {
        let key = own_pool.key.as_str();
        let parent = parents.iter().find(|(p, _)| p.key == key).map(|(p, _)| p);
        write.check_own_pool(
            own_pool,
            *hands_back,
            parent,
            &usages.held,
            &mut findings,
            notes,
        )?;
    }
    let pools = pools_checked(&owns, &parents, &own);
    write.conclude(context, pools, usages.unevaluable, findings, notes)
}

/// The child's declared quota: refused when it is malformed, when it holds keys of the GPU
/// budget domain that are not budget keys, or when the Tenant's name would own no namespace.
fn declared(subject: &Subject<'_>, label: &str) -> Result<Vec<(String, Quantity)>, Refusal> {
    let refuse = |problems| Refusal::Declaration {
        subject: label.to_string(),
        problems,
    };
    let declared = declared_quota(subject.values).map_err(refuse)?;
    if let Some(problem) = unenforced_gpu_keys(&declared) {
        return Err(refuse(vec![problem]));
    }
    if let Some(problem) = owns_no_namespace(subject.name) {
        return Err(refuse(vec![problem]));
    }
    Ok(declared)
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
