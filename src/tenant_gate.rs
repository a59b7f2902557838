//! The Tenant declaration gate: a child tenant's declared `resourceQuotas` must fit in its
//! parent's pool, and every key in the GPU budget domain must be a budget key.
//!
//! For each key the parent pool bounds and the child's declaration grows:
//! `other carve-outs + reserved by the pool's applications + child's declaration <= budget`.
//! The applications counted are the pool's, less those in the child's own subtree (which
//! the child's declaration now covers), as Cozystack's `parentPoolUsage` does.

use crate::admission::{Context, Subject, Verdict, declared_quota};
use crate::decision;
use crate::evaluate::is_dns_label;
use std::collections::BTreeSet;

use crate::pool::{Budget, Tenancy, Tenant, overcommitted, owned_namespace, show_overcommit};
use crate::quantity::Quantity;
use crate::resources::{GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, GPU_DOMAIN, show};

/// Whether `key` is in the GPU budget domain (`gpuclass.cozystack.io/*`, `*.gpuclass.cozystack.io/*`).
pub fn in_gpu_domain(key: &str) -> bool {
    key.starts_with(GPU_DOMAIN) || key.contains(&format!(".{GPU_DOMAIN}"))
}

/// Whether `key` is one of the two GPU budget key forms.
pub fn is_gpu_budget_key(key: &str) -> bool {
    key == GPU_ALL_CLASSES || key.strip_suffix(GPU_CLASS_SUFFIX).is_some_and(is_dns_label)
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
    let settings = context.settings;
    let new_budget =
        Budget::from_declared(declared.iter().map(|(k, q)| (k.as_str(), *q)), settings);
    let old_budget = subject.old_values.map(|old| {
        // A previous declaration that no longer parses counts as nothing: all is growth.
        let pairs = declared_quota(old).unwrap_or_default();
        Budget::from_declared(pairs.iter().map(|(k, q)| (k.as_str(), *q)), settings)
    });
    warn_overcommitted(&tenancy, subject.namespace, &mut warnings);

    // The pools above the child, per key it declares now or declared before.
    let mut parent_pools: Vec<(String, String, Quantity)> = Vec::new();
    let keys: BTreeSet<&str> = new_budget
        .keys()
        .chain(old_budget.iter().flat_map(Budget::keys))
        .collect();
    for key in keys {
        let Some(root) = tenancy.root_for(subject.namespace, key) else {
            continue;
        };
        match &root.quota {
            Ok(b) => parent_pools.push((
                key.to_string(),
                root.owns.clone(),
                b.get(key).unwrap_or(Quantity::ZERO),
            )),
            Err(e) => {
                return Verdict::reject(
                    format!(
                        "{label}: the budget of pool {} cannot be read: {e}",
                        root.owns
                    ),
                    warnings,
                );
            }
        }
    }
    if parent_pools.is_empty() {
        return Verdict::accept(warnings);
    }
    let after = tenancy.with(Tenant {
        name: subject.name.to_string(),
        namespace: subject.namespace.to_string(),
        owns: owns.clone(),
        quota: Ok(new_budget.clone()),
        bounded: !new_budget.is_empty(),
    });
    match check(
        subject,
        context,
        &tenancy,
        &after,
        &owns,
        &parent_pools,
        &new_budget,
        old_budget.as_ref(),
        &mut warnings,
    ) {
        Ok(()) => Verdict::accept(warnings),
        Err(e) => Verdict::reject(e, warnings),
    }
}

/// Warns when the pool above `namespace` already has sub-tenants declaring more than its budget.
fn warn_overcommitted(tenancy: &Tenancy, namespace: &str, warnings: &mut Vec<String>) {
    let Some(root) = tenancy.pool_root(namespace).and_then(|r| tenancy.owner(r)) else {
        return;
    };
    let Ok(budget) = &root.quota else {
        return;
    };
    if let Ok(carved) = tenancy.carved(&root.owns, budget, None, &mut Vec::new()) {
        let over = overcommitted(budget, &carved);
        if !over.is_empty() {
            warnings.push(show_overcommit(&root.owns, &over));
        }
    }
}

/// For each key in a parent pool: the pool's load (carve-outs + reservations) may not grow
/// past its budget, and a lowered or new declaration must cover what the child's subtree
/// already holds (else the difference is handed back while still in use).
#[allow(clippy::too_many_arguments)]
fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    before: &Tenancy,
    after: &Tenancy,
    owns: &str,
    parent_pools: &[(String, String, Quantity)],
    new: &Budget,
    old: Option<&Budget>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let label = subject.label();
    let overflow = |what: &str| format!("{label}: the {what} overflow");
    let pools: Vec<(String, String)> = parent_pools
        .iter()
        .map(|(k, r, _)| (k.clone(), r.clone()))
        .collect();
    let (usage_before, mut problems) = context
        .usage(before, &pools, |_| false)
        .map_err(|e| format!("{label}: {e}"))?;
    let (usage_after, more) = context
        .usage(after, &pools, |_| false)
        .map_err(|e| format!("{label}: {e}"))?;
    problems.extend(more);
    let lowered: Vec<(String, String)> = parent_pools
        .iter()
        .filter(|(key, _, _)| {
            new.get(key)
                .is_some_and(|q| old.is_none_or(|o| o.get(key).is_none_or(|before| q < before)))
        })
        .map(|(key, _, _)| (key.clone(), owns.to_string()))
        .collect();
    let (held, more) = context
        .usage(after, &lowered, |_| false)
        .map_err(|e| format!("{label}: {e}"))?;
    problems.extend(more);

    let mut violations = Vec::new();
    let mut unreadable = Vec::new();
    for (key, root, budget) in parent_pools {
        let key = key.as_str();
        let (carved_before, _) = before
            .carved_for(root, key, None, &mut Vec::new())
            .map_err(|_| overflow("carve-outs"))?;
        let (others, others_by) = after
            .carved_for(root, key, Some(owns), &mut unreadable)
            .map_err(|_| overflow("carve-outs"))?;
        let declared = new.get(key);
        let load = |carved: Quantity, reserved: Quantity| carved.checked_add(reserved);
        let before_load = load(carved_before, usage_before.reserved.get(key))
            .ok_or_else(|| overflow("reservations"))?;
        let after_load = load(others, usage_after.reserved.get(key))
            .and_then(|l| l.checked_add(declared.unwrap_or(Quantity::ZERO)))
            .ok_or_else(|| overflow("reservations"))?;
        if after_load > before_load && after_load > *budget {
            let what = match (declared, old.and_then(|o| o.get(key))) {
                (Some(d), Some(o)) if d > o => {
                    format!(
                        "{key} grows by {} to {}, which",
                        show(key, d.checked_sub(o).unwrap_or(d)),
                        show(key, d)
                    )
                }
                (Some(d), _) => format!("{key} {}", show(key, d)),
                (None, _) => format!(
                    "{key} is no longer declared: what its namespaces hold returns to the pool, which"
                ),
            };
            let holders = usage_after.holders.get(key).copied().unwrap_or(0);
            let figures = decision::figures(
                key,
                *budget,
                (others, others_by),
                (usage_after.reserved.get(key), holders),
            );
            violations.push(format!("{what} exceeds pool {root}: {figures}"));
        }
    }
    for (key, _) in &lowered {
        let key = key.as_str();
        let want = new.get(key).unwrap_or(Quantity::ZERO);
        let reserved = held.reserved.get(key);
        let (sub, _) = after
            .carved_for(owns, key, None, &mut unreadable)
            .map_err(|_| overflow("carve-outs"))?;
        let total = reserved
            .checked_add(sub)
            .ok_or_else(|| overflow("reservations"))?;
        if total > want {
            let holders = held.holders.get(key).copied().unwrap_or(0);
            let mut what = format!(
                "{} reserved by {holders} application{}",
                show(key, reserved),
                decision::plural(holders)
            );
            if !sub.is_zero() {
                what.push_str(&format!(
                    " and {} declared by its sub-tenants",
                    show(key, sub)
                ));
            }
            let root = parent_pools
                .iter()
                .find(|(k, _, _)| k == key)
                .map_or("", |(_, r, _)| r.as_str());
            violations.push(format!(
                "{key} {} is less than its namespaces already hold ({what}): declaring it would hand back budget of pool {root} that is still in use",
                show(key, want)
            ));
        }
    }
    problems.extend(unreadable);
    problems.sort();
    problems.dedup();
    let roots: BTreeSet<&str> = parent_pools.iter().map(|(_, r, _)| r.as_str()).collect();
    context.sibling_problems(
        &label,
        &roots.into_iter().collect::<Vec<_>>().join(", "),
        problems,
        warnings,
    )?;
    if violations.is_empty() {
        Ok(())
    } else {
        Err(format!("{label}: {}", violations.join("; ")))
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
