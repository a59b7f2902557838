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
use crate::context::{Context, Unevaluable};
use crate::decision::{self, Declaration, Holding, Record};
use crate::keys::{
    GPU_ALL_CLASSES, GPU_CLASS_SUFFIX, TENANT_KIND, in_gpu_domain, is_gpu_budget_key,
};
use crate::pool::{
    Budget, Pool, Tenancy, Tenant, Usage, declared_quota, is_tenant_name, owned_namespace,
};
use crate::quantity::Quantity;

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

/// What the write changes: the child's budget now and before, and the modules its values
/// switch on now and switched on before.
struct Change {
    new: Budget,
    old: Option<Budget>,
    modules: Modules,
    modules_before: Modules,
}

impl Change {
    /// The budgets (no host call), then the modules: the Tenant kind's definition and the
    /// releases of the owned namespace.
    fn of(
        context: &Context<'_>,
        subject: &Subject<'_>,
        declared: &[(String, Quantity)],
        owns: &str,
        label: &str,
    ) -> Result<Change, Refusal> {
        let aliases = &context.settings.quota_key_aliases;
        let new = Budget::from_declared(declared, aliases);
        let old = subject.old_values.map(|old| {
            // A previous declaration that no longer parses counts as nothing: all is growth.
            Budget::from_declared(&declared_quota(old).unwrap_or_default(), aliases)
        });
        let tenant_kind = context
            .governing(TENANT_KIND)
            .map_err(|error| Refusal::Unevaluable {
                subject: label.to_string(),
                error,
            })?;
        let modules = switched_on(context, &tenant_kind, subject.values, owns, label)?;
        let modules_before = match subject.old_values {
            Some(old) => switched_on(context, &tenant_kind, old, owns, label)?,
            None => Modules::default(),
        };
        Ok(Change {
            new,
            old,
            modules,
            modules_before,
        })
    }

    /// The keys it touches: declared now or before, or reserved by its modules.
    fn keys(&self) -> BTreeSet<&str> {
        self.new
            .keys()
            .chain(self.old.iter().flat_map(Budget::keys))
            .chain(self.modules.total.iter().map(|(k, _)| k))
            .chain(self.modules_before.total.iter().map(|(k, _)| k))
            .collect()
    }

    /// Whether the declaration of `key` is lowered, or new.
    fn lowered(&self, key: &str) -> bool {
        self.new.get(key).is_some_and(|q| {
            self.old
                .as_ref()
                .is_none_or(|o| o.get(key).is_none_or(|before| q < before))
        })
    }
}

/// Where the write is checked, read from the tenants above (no host call).
struct Scope<'c> {
    /// Every key the write touches.
    keys: BTreeSet<&'c str>,
    /// The keys a pool above the child bounds (none for the root tenant).
    parent_keys: Vec<&'c str>,
    /// The keys of the child's own pools that must cover what they will hold: a declaration
    /// lowered (or new) under a pool above (`true`: it hands budget back), or one that the
    /// modules it switches on grow into.
    own_keys: Vec<(&'c str, bool)>,
    /// The pool the overcommit warning is about: the nearest bounded tenant above the child.
    overcommit_root: Option<String>,
}

impl<'c> Scope<'c> {
    fn of(change: &'c Change, before: &Tenancy, subject: &Subject<'_>, is_root: bool) -> Self {
        let keys = change.keys();
        let parent_keys: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|key| !is_root && before.root_for(subject.namespace, key).is_some())
            .collect();
        let own_keys: Vec<(&str, bool)> = keys
            .iter()
            .copied()
            .filter(|key| change.new.get(key).is_some())
            .filter_map(|key| {
                let hands_back = parent_keys.contains(&key) && change.lowered(key);
                let modules_grow = change.modules.of(key) > change.modules_before.of(key);
                (hands_back || modules_grow).then_some((key, hands_back))
            })
            .collect();
        let overcommit_root = before
            .pool_root(subject.namespace)
            .filter(|_| !is_root)
            .map(str::to_string);
        Scope {
            keys,
            parent_keys,
            own_keys,
            overcommit_root,
        }
    }
}

/// A write with no pool to check: only the warnings, that the pool above is overcommitted
/// (its pools read for it) and that modules could not be charged.
fn warn_only(
    context: &Context<'_>,
    subject: &Subject<'_>,
    before: &mut Tenancy,
    scope: &Scope<'_>,
    change: &Change,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    if let Some(root) = scope
        .overcommit_root
        .as_deref()
        .and_then(|r| before.owner(r))
        .cloned()
    {
        let mut keys: BTreeSet<&str> = BTreeSet::new();
        if let Ok(budget) = &root.quota {
            keys.extend(budget.keys());
        }
        load_pools(context, subject, before, &[root.owns.as_str()], &keys)?;
        notes.warnings.extend(before.overcommit(&root));
    }
    notes.warnings.extend(
        change
            .modules
            .unevaluable
            .iter()
            .map(|m| format!("tenant module not charged: {m}")),
    );
    Ok(())
}

/// Reads the pools from their roots down: those above the child, the one the overcommit
/// warning is about, and the child's own subtree (whatever it bounds, before or after); then
/// warns if the pool above is overcommitted.
fn read_pools(
    context: &Context<'_>,
    subject: &Subject<'_>,
    before: &mut Tenancy,
    scope: &Scope<'_>,
    owns: &str,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    let overcommit_root = scope.overcommit_root.as_deref();
    let overcommit_keys: Vec<String> = overcommit_root
        .and_then(|r| before.owner(r))
        .and_then(|root| root.quota.as_ref().ok())
        .map(|budget| budget.keys().map(str::to_string).collect())
        .unwrap_or_default();
    let mut roots: Vec<String> = scope
        .parent_keys
        .iter()
        .filter_map(|key| before.root_for(subject.namespace, key))
        .map(|root| root.owns.clone())
        .chain(overcommit_root.map(str::to_string))
        .collect();
    roots.sort();
    roots.dedup();
    roots.push(owns.to_string());
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    let read_keys: BTreeSet<&str> = scope
        .keys
        .iter()
        .copied()
        .chain(overcommit_keys.iter().map(String::as_str))
        .collect();
    load_pools(context, subject, before, &roots, &read_keys)?;
    if let Some(root) = overcommit_root.and_then(|r| before.owner(r))
        && let Some(warning) = before.overcommit(root)
    {
        notes.warnings.push(warning);
    }
    Ok(())
}

/// The pools above the child, one per key they bound, with their budgets.
fn parent_pools<'t>(
    before: &'t Tenancy,
    subject: &Subject<'_>,
    parent_keys: &[&str],
) -> Result<Vec<(Pool<'t>, Quantity)>, Refusal> {
    let mut parents = Vec::new();
    for &key in parent_keys {
        parents.extend(pool_of(before, subject, key)?);
    }
    Ok(parents)
}

/// The pools above the child as they are after the write.
fn parents_after<'t>(after: &'t Tenancy, parents: &[(Pool<'t>, Quantity)]) -> Vec<Pool<'t>> {
    parents
        .iter()
        .map(|(p, _)| after.pool_rooted_at(after.owner(p.name()).unwrap_or(p.root), &p.key))
        .collect()
}

/// The child's own pools after the write, each with whether it hands budget back.
fn own_pools<'t>(
    after: &'t Tenancy,
    child: &'t Tenant,
    own_keys: &[(&str, bool)],
) -> Vec<(Pool<'t>, bool)> {
    own_keys
        .iter()
        .map(|&(key, hands_back)| (after.pool_rooted_at(child, key), hands_back))
        .collect()
}

/// What the pools' applications reserve, read in this order: the pools above before the
/// write, the same after it, and the child's own pools; with what cannot be evaluated.
struct Usages {
    before: Usage,
    after: Usage,
    held: Usage,
    unevaluable: Unevaluable,
}

impl Usages {
    fn of(
        context: &Context<'_>,
        label: &str,
        parents: &[(Pool<'_>, Quantity)],
        parents_after: &[Pool<'_>],
        own: &[(Pool<'_>, bool)],
    ) -> Result<Usages, Refusal> {
        let cluster = |error| Refusal::cluster(label, error);
        let parents_before: Vec<Pool<'_>> = parents.iter().map(|(p, _)| p.clone()).collect();
        let own_pools: Vec<Pool<'_>> = own.iter().map(|(p, _)| p.clone()).collect();
        let (before, mut unevaluable) =
            context.usage(&parents_before, |_| false).map_err(cluster)?;
        let (after, more) = context.usage(parents_after, |_| false).map_err(cluster)?;
        unevaluable.absorb(more);
        let (held, more) = context.usage(&own_pools, |_| false).map_err(cluster)?;
        unevaluable.absorb(more);
        Ok(Usages {
            before,
            after,
            held,
            unevaluable,
        })
    }
}

fn overflow(label: &str, what: &'static str) -> Refusal {
    Refusal::Overflow {
        subject: label.to_string(),
        what,
    }
}

/// The write under check: the subject of its messages, the namespace the child owns, and what
/// it changes.
struct Write<'a> {
    label: &'a str,
    owns: &'a str,
    change: &'a Change,
}

/// What the checks of the pools found besides the records: violations, and carve-outs whose
/// quota cannot be read.
#[derive(Default)]
struct Findings {
    violations: Vec<String>,
    unreadable: Vec<String>,
}

impl Write<'_> {
    /// A pool above the child, on its key: the write may not grow its load past its budget.
    /// The check is recorded.
    fn check_parent_pool(
        &self,
        before_pool: &Pool<'_>,
        budget: Quantity,
        after_pool: &Pool<'_>,
        usages: &Usages,
        findings: &mut Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let Write {
            label,
            owns,
            change,
        } = *self;
        let key = before_pool.key.as_str();
        let carved_before = before_pool
            .carved(None, &mut Vec::new())
            .map_err(|_| overflow(label, "carve-outs"))?;
        let after = after_pool
            .standing(budget, Some(owns), &usages.after, &mut findings.unreadable)
            .map_err(|_| overflow(label, "carve-outs"))?;
        // Modules land in this pool for the keys the child does not bound.
        let landed_before = match &change.old {
            Some(old) if old.get(key).is_none() => change.modules_before.of(key),
            _ => Quantity::ZERO,
        };
        let landed = if change.new.get(key).is_none() {
            change.modules.of(key)
        } else {
            Quantity::ZERO
        };
        let load_before = carved_before
            .total
            .checked_add(usages.before.reserved.get(key))
            .and_then(|l| l.checked_add(landed_before))
            .ok_or_else(|| overflow(label, "reservations"))?;
        let module_names = change.modules.names(key);
        let declaration = Declaration {
            after,
            load_before,
            declared: change.new.get(key),
            previous: change.old.as_ref().and_then(|o| o.get(key)),
            modules: landed
                .is_positive()
                .then_some((module_names.as_str(), landed)),
        };
        let violation = decision::declaration_violation(&declaration)
            .map_err(|_| overflow(label, "reservations"))?;
        let load_after = declaration
            .load_after()
            .ok_or_else(|| overflow(label, "reservations"))?;
        let growth = load_after
            .checked_sub(load_before)
            .unwrap_or(Quantity::ZERO);
        notes
            .records
            .push(Record::of(&declaration.after, growth, violation.is_none()));
        findings.violations.extend(violation);
        Ok(())
    }

    /// One of the child's own pools: its declaration must cover what its namespaces hold, or
    /// will hold once the modules it switches on exist. The check is recorded.
    fn check_own_pool(
        &self,
        own_pool: &Pool<'_>,
        hands_back: bool,
        parent: Option<&Pool<'_>>,
        held: &Usage,
        findings: &mut Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let Write { label, change, .. } = *self;
        let key = own_pool.key.as_str();
        let sub_tenants = own_pool
            .carved(None, &mut findings.unreadable)
            .map_err(|_| overflow(label, "carve-outs"))?;
        let module_names = change.modules.names(key);
        let holding = Holding {
            pool: parent.map_or(own_pool.name(), |parent| parent.name()),
            own_pool: own_pool.name(),
            key,
            declared: change.new.get(key).unwrap_or(Quantity::ZERO),
            reserved: held.of(key),
            sub_tenants: sub_tenants.total,
            modules: (change.modules.of(key), module_names.as_str()),
            hands_back,
        };
        let violation =
            decision::handback_violation(&holding).map_err(|_| overflow(label, "reservations"))?;
        notes.records.push(Record {
            pool: own_pool.name().to_string(),
            key: key.to_string(),
            budget: holding.declared,
            carved: holding.sub_tenants,
            reserved: holding.reserved.0,
            growth: holding.modules.0,
            fits: violation.is_none(),
        });
        findings.violations.extend(violation);
        Ok(())
    }

    /// How the gate ends: the problems with other objects (applications that cannot be
    /// evaluated, carve-outs whose quota cannot be read) and with modules, then the violations.
    fn conclude(
        &self,
        context: &Context<'_>,
        pools: BTreeSet<&str>,
        unevaluable: Unevaluable,
        findings: Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let mut problems = unevaluable.applications;
        problems.extend(findings.unreadable);
        problems.sort();
        problems.dedup();
        let mut module_problems = self.change.modules.unevaluable.clone();
        module_problems.extend(unevaluable.modules);
        Outcome {
            subject: self.label.to_string(),
            pools,
            problems,
            modules: module_problems,
            violations: findings.violations,
        }
        .conclude(context.settings, notes)
    }
}

/// The pools checked, by name: those above the child, and the child's own when the modules
/// grow into it.
fn pools_checked<'a>(
    owns: &'a str,
    parents: &[(Pool<'a>, Quantity)],
    own: &[(Pool<'_>, bool)],
) -> BTreeSet<&'a str> {
    let mut pools: BTreeSet<&str> = parents.iter().map(|(p, _)| p.name()).collect();
    if own.iter().any(|(_, hands_back)| !hands_back) {
        pools.insert(owns);
    }
    pools
}
