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

use std::collections::BTreeSet;

use super::modules::{Modules, switched_on};
use super::{Notes, Outcome, Refusal, Subject, load_pools, pool_of, tenants_above};
use crate::context::Context;
use crate::decision::{self, Declaration, Holding, Record};
use crate::keys::{
    GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, TENANT_KIND, in_gpu_domain, is_gpu_budget_key,
};
use crate::pool::{Budget, Pool, Tenant, declared_quota, is_tenant_name, owned_namespace};
use crate::quantity::Quantity;

pub(super) fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    let label = subject.label();
    let declaration = |problems| Refusal::Declaration {
        subject: label.clone(),
        problems,
    };
    let declared = declared_quota(subject.values).map_err(declaration)?;
    let unenforced: Vec<String> = declared
        .iter()
        .filter(|(k, _)| in_gpu_domain(k) && !is_gpu_budget_key(k))
        .map(|(k, _)| format!("spec.resourceQuotas.{k}"))
        .collect();
    if !unenforced.is_empty() {
        let one = unenforced.len() == 1;
        return Err(declaration(vec![format!(
            "{} {} in the GPU budget domain but not a budget key ({GPU_ALL_CLASSES} or <class>{GPU_CLASS_SUFFIX}): the tenant chart keeps such keys out of the ResourceQuota, so nothing would enforce {}",
            unenforced.join(", "),
            if one { "is" } else { "are" },
            if one { "it" } else { "them" },
        )]));
    }
    if !is_tenant_name(subject.name) {
        return Err(declaration(vec![format!(
            "the tenant chart renders a Tenant only as the release tenant-<name> with no other dash, so {:?} would own no namespace",
            subject.name
        )]));
    }
    let owns = owned_namespace(subject.name, subject.namespace);
    // The root tenant has no pool above it; only its modules are checked, in its own pools.
    let is_root = owns == subject.namespace;
    let mut before = tenants_above(context, subject)?;
    let aliases = &context.settings.quota_key_aliases;
    let new = Budget::from_declared(&declared, aliases);
    let old = subject.old_values.map(|old| {
        // A previous declaration that no longer parses counts as nothing: all is growth.
        Budget::from_declared(&declared_quota(old).unwrap_or_default(), aliases)
    });
    let tenant_kind = context
        .governing(TENANT_KIND)
        .map_err(|error| Refusal::Unevaluable {
            subject: label.clone(),
            error,
        })?;
    let modules = switched_on(context, &tenant_kind, subject.values, &owns, &label)?;
    let modules_before = match subject.old_values {
        Some(old) => switched_on(context, &tenant_kind, old, &owns, &label)?,
        None => Modules::default(),
    };

    // The pools above the child, per key it declares now or declared before, or its modules
    // reserve.
    let keys: BTreeSet<&str> = new
        .keys()
        .chain(old.iter().flat_map(Budget::keys))
        .chain(modules.total.iter().map(|(k, _)| k))
        .chain(modules_before.total.iter().map(|(k, _)| k))
        .collect();
    let parent_keys: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|key| !is_root && before.root_for(subject.namespace, key).is_some())
        .collect();
    // The child's own pools that must cover what they will hold: a declaration lowered (or
    // new) under a pool above, or one that the modules it switches on grow into.
    let lowered = |key: &str| {
        new.get(key).is_some_and(|q| {
            old.as_ref()
                .is_none_or(|o| o.get(key).is_none_or(|before| q < before))
        })
    };
    let own_keys: Vec<(&str, bool)> = keys
        .iter()
        .copied()
        .filter(|key| new.get(key).is_some())
        .filter_map(|key| {
            let hands_back = parent_keys.contains(&key) && lowered(key);
            let modules_grow = modules.of(key) > modules_before.of(key);
            (hands_back || modules_grow).then_some((key, hands_back))
        })
        .collect();
    // The pool the overcommit warning is about: the nearest bounded tenant above the child.
    let overcommit_root = before
        .pool_root(subject.namespace)
        .filter(|_| !is_root)
        .map(str::to_string);
    if parent_keys.is_empty() && own_keys.is_empty() {
        if let Some(root) = overcommit_root
            .as_deref()
            .and_then(|r| before.owner(r))
            .cloned()
        {
            let mut keys: BTreeSet<&str> = BTreeSet::new();
            if let Ok(budget) = &root.quota {
                keys.extend(budget.keys());
            }
            load_pools(context, subject, &mut before, &[root.owns.as_str()], &keys)?;
            notes.warnings.extend(before.overcommit(&root));
        }
        notes.warnings.extend(
            modules
                .unevaluable
                .into_iter()
                .map(|m| format!("tenant module not charged: {m}")),
        );
        return Ok(());
    }

    // Read the pools from their roots down: those above the child, the one the overcommit
    // warning is about, and the child's own subtree (whatever it bounds, before or after).
    let overcommit_keys: Vec<String> = overcommit_root
        .as_deref()
        .and_then(|r| before.owner(r))
        .and_then(|root| root.quota.as_ref().ok())
        .map(|budget| budget.keys().map(str::to_string).collect())
        .unwrap_or_default();
    let mut roots: Vec<String> = parent_keys
        .iter()
        .filter_map(|key| before.root_for(subject.namespace, key))
        .map(|root| root.owns.clone())
        .chain(overcommit_root.iter().cloned())
        .collect();
    roots.sort();
    roots.dedup();
    roots.push(owns.clone());
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    let read_keys: BTreeSet<&str> = keys
        .iter()
        .copied()
        .chain(overcommit_keys.iter().map(String::as_str))
        .collect();
    load_pools(context, subject, &mut before, &roots, &read_keys)?;
    if let Some(root) = overcommit_root.as_deref().and_then(|r| before.owner(r))
        && let Some(warning) = before.overcommit(root)
    {
        notes.warnings.push(warning);
    }

    let mut parents = Vec::new();
    for &key in &parent_keys {
        parents.extend(pool_of(&before, subject, key)?);
    }
    let child = Tenant {
        namespace: subject.namespace.to_string(),
        owns: owns.clone(),
        quota: Ok(new.clone()),
        bounded: !new.is_empty(),
    };
    let after = before.with(child.clone());
    let parent_of = |key: &str| parents.iter().find(|(p, _)| p.key == key);
    let own: Vec<(Pool<'_>, bool)> = own_keys
        .iter()
        .map(|&(key, hands_back)| (after.pool_rooted_at(&child, key), hands_back))
        .collect();

    let cluster = |error| Refusal::cluster(&label, error);
    let overflow = |what| Refusal::Overflow {
        subject: label.clone(),
        what,
    };
    let parents_before: Vec<Pool<'_>> = parents.iter().map(|(p, _)| p.clone()).collect();
    let parents_after: Vec<Pool<'_>> = parents
        .iter()
        .map(|(p, _)| after.pool_rooted_at(after.owner(p.name()).unwrap_or(p.root), &p.key))
        .collect();
    let own_pools: Vec<Pool<'_>> = own.iter().map(|(p, _)| p.clone()).collect();
    let (usage_before, mut unevaluable) =
        context.usage(&parents_before, |_| false).map_err(cluster)?;
    let (usage_after, more) = context.usage(&parents_after, |_| false).map_err(cluster)?;
    unevaluable.absorb(more);
    let (held, more) = context.usage(&own_pools, |_| false).map_err(cluster)?;
    unevaluable.absorb(more);

    let mut violations = Vec::new();
    let mut unreadable = Vec::new();
    for ((before_pool, budget), after_pool) in parents.iter().zip(&parents_after) {
        let key = before_pool.key.as_str();
        let carved_before = before_pool
            .carved(None, &mut Vec::new())
            .map_err(|_| overflow("carve-outs"))?;
        let after = after_pool
            .standing(*budget, Some(&owns), &usage_after, &mut unreadable)
            .map_err(|_| overflow("carve-outs"))?;
        // Modules land in this pool for the keys the child does not bound.
        let landed_before = match &old {
            Some(old) if old.get(key).is_none() => modules_before.of(key),
            _ => Quantity::ZERO,
        };
        let landed = if new.get(key).is_none() {
            modules.of(key)
        } else {
            Quantity::ZERO
        };
        let load_before = carved_before
            .total
            .checked_add(usage_before.reserved.get(key))
            .and_then(|l| l.checked_add(landed_before))
            .ok_or_else(|| overflow("reservations"))?;
        let module_names = modules.names(key);
        let declaration = Declaration {
            after,
            load_before,
            declared: new.get(key),
            previous: old.as_ref().and_then(|o| o.get(key)),
            modules: landed
                .is_positive()
                .then_some((module_names.as_str(), landed)),
        };
        let violation =
            decision::declaration_violation(&declaration).map_err(|_| overflow("reservations"))?;
        let load_after = declaration
            .load_after()
            .ok_or_else(|| overflow("reservations"))?;
        let growth = load_after
            .checked_sub(load_before)
            .unwrap_or(Quantity::ZERO);
        notes
            .records
            .push(Record::of(&declaration.after, growth, violation.is_none()));
        violations.extend(violation);
    }
    for (own_pool, hands_back) in &own {
        let key = own_pool.key.as_str();
        let sub_tenants = own_pool
            .carved(None, &mut unreadable)
            .map_err(|_| overflow("carve-outs"))?;
        let module_names = modules.names(key);
        let holding = Holding {
            pool: parent_of(key).map_or(own_pool.name(), |(parent, _)| parent.name()),
            own_pool: own_pool.name(),
            key,
            declared: new.get(key).unwrap_or(Quantity::ZERO),
            reserved: held.of(key),
            sub_tenants: sub_tenants.total,
            modules: (modules.of(key), module_names.as_str()),
            hands_back: *hands_back,
        };
        let violation =
            decision::handback_violation(&holding).map_err(|_| overflow("reservations"))?;
        notes.records.push(Record {
            pool: own_pool.name().to_string(),
            key: key.to_string(),
            budget: holding.declared,
            carved: holding.sub_tenants,
            reserved: holding.reserved.0,
            growth: holding.modules.0,
            fits: violation.is_none(),
        });
        violations.extend(violation);
    }
    let mut problems = unevaluable.applications;
    problems.extend(unreadable);
    problems.sort();
    problems.dedup();
    let mut module_problems = modules.unevaluable;
    module_problems.extend(unevaluable.modules);
    let mut pools: BTreeSet<&str> = parents.iter().map(|(p, _)| p.name()).collect();
    if own.iter().any(|(_, hands_back)| !hands_back) {
        pools.insert(&owns);
    }
    Outcome {
        subject: label,
        pools,
        problems,
        modules: module_problems,
        violations,
    }
    .conclude(context.settings, notes)
}
