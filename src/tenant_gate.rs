//! The Tenant declaration gate: a child tenant's declared `resourceQuotas` must fit in its
//! parent's pool, and every key in the GPU budget domain must be a budget key.
//!
//! For each key the parent pool bounds and the child's declaration grows:
//! `other carve-outs + reserved by the pool's applications + child's declaration <= budget`.
//! The applications counted are the pool's, less those in the child's own subtree (which
//! the child's declaration now covers), as Cozystack's `parentPoolUsage` does.

use crate::admission::{Context, Subject, Verdict, declared_quota};
use crate::decision::{self, PoolState};
use crate::evaluate::is_dns_label;
use crate::pool::{Budget, Pool, Tenancy, Tenant, overcommitted, owned_namespace, show_overcommit};
use crate::quantity::Quantity;
use crate::resources::{GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, GPU_DOMAIN, Resources, show};

/// Whether `key` is in the GPU budget domain (`gpuclass.cozystack.io/*`, `*.gpuclass.cozystack.io/*`).
pub fn in_gpu_domain(key: &str) -> bool {
    key.starts_with(GPU_DOMAIN) || key.contains(&format!(".{GPU_DOMAIN}"))
}

/// Whether `key` is one of the two GPU budget key forms.
pub fn is_gpu_budget_key(key: &str) -> bool {
    key == GPU_ALL_CLASSES || key.strip_suffix(GPU_CLASS_SUFFIX).is_some_and(is_dns_label)
}

fn as_resources(budget: &Budget) -> Resources {
    budget.iter().map(|(k, q)| (k.to_string(), q)).collect()
}

pub fn review(subject: &Subject<'_>, context: &Context<'_>) -> Verdict {
    let label = subject.label();
    let mut warnings = Vec::new();
    let declared = match declared_quota(subject.values) {
        Ok(pairs) => pairs,
        Err(errors) => return Verdict::reject(format!("{label}: {}", errors.join("; ")), warnings),
    };
    let unenforced: Vec<String> = declared
        .iter()
        .filter(|(k, _)| in_gpu_domain(k) && !is_gpu_budget_key(k))
        .map(|(k, _)| format!("spec.resourceQuotas.{k}"))
        .collect();
    if !unenforced.is_empty() {
        return Verdict::reject(
            format!(
                "{label}: {} {} in the GPU budget domain but not a budget key ({GPU_ALL_CLASSES} or <class>{GPU_CLASS_SUFFIX}): the tenant chart keeps such keys out of the ResourceQuota, so nothing would enforce {}",
                unenforced.join(", "),
                if unenforced.len() == 1 { "is" } else { "are" },
                if unenforced.len() == 1 { "it" } else { "them" },
            ),
            warnings,
        );
    }
    let owns = owned_namespace(subject.name, subject.namespace);
    if owns == subject.namespace {
        // The root tenant: no parent pool to fit in.
        return Verdict::accept(warnings);
    }
    let tenancy = match context.tenancy() {
        Ok(t) => t,
        Err(e) => return Verdict::reject(format!("{label}: {e}"), warnings),
    };
    let Some(pool) = tenancy.pool(subject.namespace) else {
        return Verdict::accept(warnings);
    };
    let budget = match &pool.root.quota {
        Ok(b) => b,
        Err(e) => {
            return Verdict::reject(
                format!(
                    "{label}: the budget of pool {} cannot be read: {e}",
                    pool.name()
                ),
                warnings,
            );
        }
    };
    let mut unreadable = Vec::new();
    if let Ok(all) = pool.carved(budget, None, &mut unreadable) {
        let over = overcommitted(budget, &all);
        if !over.is_empty() {
            warnings.push(show_overcommit(pool.name(), &over));
        }
    }
    let settings = context.settings;
    let new_budget =
        Budget::from_declared(declared.iter().map(|(k, q)| (k.as_str(), *q)), settings);
    let old_budget = subject.old_values.map(|old| {
        // A previous declaration that no longer parses counts as nothing: all is growth.
        let pairs = declared_quota(old).unwrap_or_default();
        Budget::from_declared(pairs.iter().map(|(k, q)| (k.as_str(), *q)), settings)
    });
    let new = as_resources(&new_budget);
    let old = old_budget.as_ref().map(as_resources);
    let lowered = lowered_keys(budget, &new_budget, old_budget.as_ref());
    let grows = !decision::growth(budget, &new, old.as_ref()).is_empty();
    if grows
        && let Err(e) = fits_in_parent_pool(
            subject,
            context,
            &tenancy,
            &pool,
            &owns,
            &new,
            old.as_ref(),
            &mut warnings,
        )
    {
        return Verdict::reject(e, warnings);
    }
    if !lowered.is_empty() {
        let child = Tenant {
            name: subject.name.to_string(),
            namespace: subject.namespace.to_string(),
            owns: owns.clone(),
            quota: Ok(new_budget.clone()),
            bounded: true,
        };
        let future = tenancy.with(child);
        if let Err(e) = holds_no_more_than_declared(
            subject,
            context,
            &future,
            &owns,
            &new_budget,
            &lowered,
            pool.name(),
            &mut warnings,
        ) {
            return Verdict::reject(e, warnings);
        }
    }
    Verdict::accept(warnings)
}

/// Keys the parent pool bounds that the child now declares lower than before (or declares
/// for the first time): lowering a carve-out hands budget back to the parent pool, which is
/// only sound if the child's subtree does not still hold it.
fn lowered_keys(parent: &Budget, new: &Budget, old: Option<&Budget>) -> Vec<String> {
    new.iter()
        .filter(|(key, q)| {
            parent.get(key).is_some()
                && old.is_none_or(|o| o.get(key).is_none_or(|before| *q < before))
        })
        .map(|(key, _)| key.to_string())
        .collect()
}

/// The parent-pool check: other carve-outs + the pool's reservations (less the child's
/// subtree) + the child's declaration must fit in the budget, for the keys that grow.
#[allow(clippy::too_many_arguments)]
fn fits_in_parent_pool(
    subject: &Subject<'_>,
    context: &Context<'_>,
    tenancy: &Tenancy,
    pool: &Pool<'_>,
    owns: &str,
    new: &Resources,
    old: Option<&Resources>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let label = subject.label();
    let budget = pool.root.quota.as_ref().map_err(String::clone)?;
    let mut problems = Vec::new();
    let carved = pool
        .carved(budget, Some(owns), &mut problems)
        .map_err(|_| format!("{label}: the carve-outs of pool {} overflow", pool.name()))?;
    let (usage, more) = context
        .usage(pool, |app| tenancy.is_within(&app.namespace, owns))
        .map_err(|e| format!("{label}: {e}"))?;
    problems.extend(more);
    context.sibling_problems(&label, pool.name(), problems, warnings)?;
    let state = PoolState {
        name: pool.name(),
        budget,
        carved: &carved,
        usage: &usage,
    };
    decision::decide(&label, &state, new, old)
}

/// The child's subtree (its applications and its own sub-tenants' declarations) must not
/// already hold more than a lowered declaration: the difference would be reserved twice.
#[allow(clippy::too_many_arguments)]
fn holds_no_more_than_declared(
    subject: &Subject<'_>,
    context: &Context<'_>,
    future: &Tenancy,
    owns: &str,
    declared: &Budget,
    keys: &[String],
    parent: &str,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let label = subject.label();
    let Some(own_pool) = future.pool(owns) else {
        return Ok(());
    };
    let mut problems = Vec::new();
    let carved = own_pool
        .carved(declared, None, &mut problems)
        .map_err(|_| format!("{label}: the carve-outs of pool {owns} overflow"))?;
    let (usage, more) = context
        .usage(&own_pool, |_| false)
        .map_err(|e| format!("{label}: {e}"))?;
    problems.extend(more);
    context.sibling_problems(&label, owns, problems, warnings)?;
    let mut short = Vec::new();
    for key in keys {
        let want = declared.get(key).unwrap_or(Quantity::ZERO);
        let reserved = usage.reserved.get(key);
        let sub = carved.total.get(key).copied().unwrap_or(Quantity::ZERO);
        let held = reserved
            .checked_add(sub)
            .ok_or_else(|| format!("{label}: the reservations of pool {owns} overflow"))?;
        if held > want {
            let holders = usage.holders.get(key).copied().unwrap_or(0);
            let mut what = format!(
                "{} reserved by {holders} application{}",
                show(key, reserved),
                if holders == 1 { "" } else { "s" }
            );
            if !sub.is_zero() {
                what.push_str(&format!(
                    " and {} declared by its sub-tenants",
                    show(key, sub)
                ));
            }
            short.push(format!(
                "{key} {} is less than its namespaces already hold ({what})",
                show(key, want)
            ));
        }
    }
    if short.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{label}: {}: declaring it would hand back budget of pool {parent} that is still in use",
            short.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_gpu_budget_key_forms() {
        assert!(is_gpu_budget_key("gpuclass.cozystack.io/devices"));
        assert!(is_gpu_budget_key("a10.gpuclass.cozystack.io/devices"));
        assert!(!is_gpu_budget_key("a10.gpuclass.cozystack.io/memory"));
        assert!(!is_gpu_budget_key("gpuclass.cozystack.io/count"));
        assert!(!is_gpu_budget_key("A10.gpuclass.cozystack.io/devices"));
        assert!(in_gpu_domain("gpuclass.cozystack.io/count"));
        assert!(in_gpu_domain("x.gpuclass.cozystack.io/devices"));
        assert!(!in_gpu_domain("requests.nvidia.com/gpu"));
        assert!(!in_gpu_domain("cpu"));
    }
}
