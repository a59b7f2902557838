//! The Tenant declaration gate: a child tenant's declared `resourceQuotas` must fit in its
//! parent's pools, every key in the GPU budget domain must be a budget key, and a lowered
//! declaration must cover what the child's subtree already holds.
//!
//! For each key a pool above the child bounds, the pool's load after the write (its
//! carve-outs, the child's included, plus its member applications' reservations) may not
//! grow past its budget. The applications counted are the pool's after the write, so a
//! child that starts bounding a key takes its subtree out of the pool, as Cozystack's
//! `parentPoolUsage` counts pool usage beside the sibling declarations.

use std::collections::BTreeSet;

use super::{Outcome, Refusal, Subject};
use crate::context::Context;
use crate::decision::{self, Declaration, Holding, Standing};
use crate::keys::{GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, in_gpu_domain, is_gpu_budget_key};
use crate::pool::{Budget, Pool, Tenant, declared_quota, owned_namespace};
use crate::quantity::Quantity;

pub(super) fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    warnings: &mut Vec<String>,
) -> Result<(), Refusal> {
    let label = subject.label();
    let declared = declared_quota(subject.values).map_err(|problems| Refusal::Declaration {
        subject: label.clone(),
        problems,
    })?;
    let unenforced: Vec<String> = declared
        .iter()
        .filter(|(k, _)| in_gpu_domain(k) && !is_gpu_budget_key(k))
        .map(|(k, _)| format!("spec.resourceQuotas.{k}"))
        .collect();
    if !unenforced.is_empty() {
        let one = unenforced.len() == 1;
        return Err(Refusal::Declaration {
            subject: label,
            problems: vec![format!(
                "{} {} in the GPU budget domain but not a budget key ({GPU_ALL_CLASSES} or <class>{GPU_CLASS_SUFFIX}): the tenant chart keeps such keys out of the ResourceQuota, so nothing would enforce {}",
                unenforced.join(", "),
                if one { "is" } else { "are" },
                if one { "it" } else { "them" },
            )],
        });
    }
    let owns = owned_namespace(subject.name, subject.namespace);
    if owns == subject.namespace {
        // The root tenant: no parent pool to fit in.
        return Ok(());
    }
    let before = context.tenancy().map_err(|error| Refusal::Cluster {
        subject: label.clone(),
        error,
    })?;
    let aliases = &context.settings.quota_key_aliases;
    let new = Budget::from_declared(&declared, aliases);
    let old = subject.old_values.map(|old| {
        // A previous declaration that no longer parses counts as nothing: all is growth.
        Budget::from_declared(&declared_quota(old).unwrap_or_default(), aliases)
    });
    if let Some(root) = before
        .pool_root(subject.namespace)
        .and_then(|r| before.owner(r))
        && let Some(warning) = before.overcommit(root)
    {
        warnings.push(warning);
    }

    // The pools above the child, per key it declares now or declared before.
    let keys: BTreeSet<&str> = new
        .keys()
        .chain(old.iter().flat_map(Budget::keys))
        .collect();
    let mut parents = Vec::new();
    for key in keys {
        let Some(pool) = before.pool(subject.namespace, key) else {
            continue;
        };
        let budget = pool.budget().map_err(|reason| Refusal::BudgetUnreadable {
            subject: label.clone(),
            pool: pool.name().to_string(),
            reason: reason.to_string(),
        })?;
        parents.push((pool, budget));
    }
    if parents.is_empty() {
        return Ok(());
    }
    let child = Tenant {
        namespace: subject.namespace.to_string(),
        owns: owns.clone(),
        quota: Ok(new.clone()),
        bounded: !new.is_empty(),
    };
    let after = before.with(child.clone());

    let cluster = |error| Refusal::Cluster {
        subject: label.clone(),
        error,
    };
    let overflow = |what| Refusal::Overflow {
        subject: label.clone(),
        what,
    };
    let parents_before: Vec<Pool<'_>> = parents.iter().map(|(p, _)| p.clone()).collect();
    let parents_after: Vec<Pool<'_>> = parents
        .iter()
        .map(|(p, _)| after.pool_rooted_at(after.owner(p.name()).unwrap_or(p.root), &p.key))
        .collect();
    // The keys the child declares lower than before (or for the first time): its own pools.
    let lowered: Vec<Pool<'_>> = parents
        .iter()
        .filter(|(p, _)| {
            new.get(&p.key).is_some_and(|q| {
                old.as_ref()
                    .is_none_or(|o| o.get(&p.key).is_none_or(|before| q < before))
            })
        })
        .map(|(p, _)| after.pool_rooted_at(&child, &p.key))
        .collect();
    let (usage_before, mut problems) =
        context.usage(&parents_before, |_| false).map_err(cluster)?;
    let (usage_after, more) = context.usage(&parents_after, |_| false).map_err(cluster)?;
    problems.extend(more);
    let (held, more) = context.usage(&lowered, |_| false).map_err(cluster)?;
    problems.extend(more);

    let mut violations = Vec::new();
    let mut unreadable = Vec::new();
    for ((before_pool, budget), after_pool) in parents.iter().zip(&parents_after) {
        let key = before_pool.key.as_str();
        let carved_before = before_pool
            .carved(None, &mut Vec::new())
            .map_err(|_| overflow("carve-outs"))?;
        let others = after_pool
            .carved(Some(&owns), &mut unreadable)
            .map_err(|_| overflow("carve-outs"))?;
        let load_before = carved_before
            .total
            .checked_add(usage_before.reserved.get(key))
            .ok_or_else(|| overflow("reservations"))?;
        let declaration = Declaration {
            after: Standing {
                pool: before_pool.name(),
                key,
                budget: *budget,
                carved: others,
                reserved: usage_after.of(key),
            },
            load_before,
            declared: new.get(key),
            previous: old.as_ref().and_then(|o| o.get(key)),
        };
        violations.extend(
            decision::declaration_violation(&declaration).map_err(|_| overflow("reservations"))?,
        );
    }
    for own in &lowered {
        let key = own.key.as_str();
        let sub_tenants = own
            .carved(None, &mut unreadable)
            .map_err(|_| overflow("carve-outs"))?;
        let parent = parents
            .iter()
            .find(|(p, _)| p.key == key)
            .map_or("", |(p, _)| p.name());
        let holding = Holding {
            pool: parent,
            key,
            declared: new.get(key).unwrap_or(Quantity::ZERO),
            reserved: held.of(key),
            sub_tenants: sub_tenants.total,
        };
        violations
            .extend(decision::handback_violation(&holding).map_err(|_| overflow("reservations"))?);
    }
    problems.extend(unreadable);
    problems.sort();
    problems.dedup();
    Outcome {
        subject: label,
        pools: parents.iter().map(|(p, _)| p.name()).collect(),
        problems,
        violations,
    }
    .conclude(context.settings, warnings)
}
