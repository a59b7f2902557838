//! What a Tenant write changes and where it is checked: the child's budgets and modules now
//! and before, the keys of the pools above it and of its own pools, and the reads of the
//! cluster those pools need (the pools from their roots down, what their applications
//! reserve), each in the order the gate makes them.

use std::collections::BTreeSet;

use crate::context::{Context, Unevaluable};
use crate::keys::TENANT_KIND;
use crate::pool::{Budget, Pool, Tenancy, Tenant, Usage, declared_quota};
use crate::quantity::Quantity;
use crate::review::modules::{Modules, switched_on};
use crate::review::{Notes, Refusal, Subject, load_pools, pool_of};

/// What the write changes: the child's budget now and before, and the modules its values
/// switch on now and switched on before.
pub(super) struct Change {
    pub(super) new: Budget,
    pub(super) old: Option<Budget>,
    pub(super) modules: Modules,
    pub(super) modules_before: Modules,
}

impl Change {
    /// The budgets (no host call), then the modules: the Tenant kind's definition and the
    /// releases of the owned namespace.
    pub(super) fn of(
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
    pub(super) fn keys(&self) -> BTreeSet<&str> {
        self.new
            .keys()
            .chain(self.old.iter().flat_map(Budget::keys))
            .chain(self.modules.total.iter().map(|(k, _)| k))
            .chain(self.modules_before.total.iter().map(|(k, _)| k))
            .collect()
    }

    /// Whether the declaration of `key` is lowered, or new.
    pub(super) fn lowered(&self, key: &str) -> bool {
        self.new.get(key).is_some_and(|q| {
            self.old
                .as_ref()
                .is_none_or(|o| o.get(key).is_none_or(|before| q < before))
        })
    }
}

/// Where the write is checked, read from the tenants above (no host call).
pub(super) struct Scope<'c> {
    /// Every key the write touches.
    pub(super) keys: BTreeSet<&'c str>,
    /// The keys a pool above the child bounds (none for the root tenant).
    pub(super) parent_keys: Vec<&'c str>,
    /// The keys of the child's own pools that must cover what they will hold: a declaration
    /// lowered (or new) under a pool above (`true`: it hands budget back), or one that the
    /// modules it switches on grow into.
    pub(super) own_keys: Vec<(&'c str, bool)>,
    /// The pool the overcommit warning is about: the nearest bounded tenant above the child.
    pub(super) overcommit_root: Option<String>,
}

impl<'c> Scope<'c> {
    pub(super) fn of(
        change: &'c Change,
        before: &Tenancy,
        subject: &Subject<'_>,
        is_root: bool,
    ) -> Self {
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
pub(super) fn warn_only(
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
pub(super) fn read_pools(
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
pub(super) fn parent_pools<'t>(
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
pub(super) fn parents_after<'t>(
    after: &'t Tenancy,
    parents: &[(Pool<'t>, Quantity)],
) -> Vec<Pool<'t>> {
    parents
        .iter()
        .map(|(p, _)| after.pool_rooted_at(after.owner(p.name()).unwrap_or(p.root), &p.key))
        .collect()
}

/// The child's own pools after the write, each with whether it hands budget back.
pub(super) fn own_pools<'t>(
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
pub(super) struct Usages {
    pub(super) before: Usage,
    pub(super) after: Usage,
    pub(super) held: Usage,
    pub(super) unevaluable: Unevaluable,
}

impl Usages {
    pub(super) fn of(
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
