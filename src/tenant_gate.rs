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
use crate::pool::{Budget, overcommitted, owned_namespace, show_overcommit};
use crate::resources::{GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, GPU_DOMAIN, Resources};

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
    let new = as_resources(&Budget::from_declared(
        declared.iter().map(|(k, q)| (k.as_str(), *q)),
        settings,
    ));
    let old = subject.old_values.map(|old| {
        // A previous declaration that no longer parses counts as nothing: all is growth.
        let pairs = declared_quota(old).unwrap_or_default();
        as_resources(&Budget::from_declared(
            pairs.iter().map(|(k, q)| (k.as_str(), *q)),
            settings,
        ))
    });
    if decision::growth(budget, &new, old.as_ref()).is_empty() {
        return Verdict::accept(warnings);
    }
    let mut problems = Vec::new();
    let carved = match pool.carved(budget, Some(&owns), &mut problems) {
        Ok(c) => c,
        Err(_) => {
            return Verdict::reject(
                format!("{label}: the carve-outs of pool {} overflow", pool.name()),
                warnings,
            );
        }
    };
    let (usage, more) = match context.usage(&pool, |app| tenancy.is_within(&app.namespace, &owns)) {
        Ok(u) => u,
        Err(e) => return Verdict::reject(format!("{label}: {e}"), warnings),
    };
    problems.extend(more);
    if let Err(e) = context.sibling_problems(&label, pool.name(), problems, &mut warnings) {
        return Verdict::reject(e, warnings);
    }
    let state = PoolState {
        name: pool.name(),
        budget,
        carved: &carved,
        usage: &usage,
    };
    match decision::decide(&label, &state, &new, old.as_ref()) {
        Ok(()) => Verdict::accept(warnings),
        Err(e) => Verdict::reject(e, warnings),
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
