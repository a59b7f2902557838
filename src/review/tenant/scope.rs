//! What a Tenant write changes and where it is checked: the child's budgets and modules now
//! and before, the keys of the pools above it and of its own pools, and the reads of the
//! cluster those pools need (the pools from their roots down), each in the order the gate
//! makes them.

use std::collections::BTreeSet;

use std::rc::Rc;

use crate::context::{Context, Modules, ModulesError};
use crate::pool::{Budget, Pool, Tenancy, Tenant, declared_quota};
use crate::quantity::Quantity;
use crate::review::refusal::Refusal;
use crate::review::subject::Subject;
use crate::review::verdict::Notes;

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
    ) -> Result<Change, Refusal> {
        let aliases = &context.settings.quota_key_aliases;
        let new = Budget::from_declared(declared, aliases);
        let old = subject.old_values.map(|old| {
            // A previous declaration that no longer parses counts as nothing: all is growth.
            Budget::from_declared(&declared_quota(old).unwrap_or_default(), aliases)
        });
        let modules = pending(context, subject.values, owns)?;
        let modules_before = match subject.old_values {
            Some(old) => pending(context, old, owns)?,
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
    fn keys(&self) -> BTreeSet<String> {
        self.new
            .keys()
            .chain(self.old.iter().flat_map(Budget::keys))
            .chain(self.modules.total.iter().map(|(k, _)| k))
            .chain(self.modules_before.total.iter().map(|(k, _)| k))
            .map(str::to_string)
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

/// The modules a Tenant's `values` switch on in `owns` that have no release yet: the write is
/// refused when they cannot be read.
fn pending(
    context: &Context<'_>,
    values: &serde_json::Value,
    owns: &str,
) -> Result<Modules, Refusal> {
    context.pending_modules(values, owns).map_err(|e| match e {
        ModulesError::Unevaluable(e) => Refusal::Unevaluable(e),
        ModulesError::Cluster(e) => Refusal::Cluster(e),
    })
}

/// Where the write is checked, read from the tenants above (no host call).
pub(super) struct Scope {
    /// Every key the write touches.
    keys: BTreeSet<String>,
    /// The keys a pool above the child bounds (none for the root tenant).
    parent_keys: Vec<String>,
    /// The keys of the child's own pools that must cover what they will hold: a declaration
    /// lowered (or new) under a pool above (`true`: it hands budget back), or one that the
    /// modules it switches on grow into.
    own_keys: Vec<(String, bool)>,
    /// The pool the overcommit warning is about: the nearest bounded tenant above the child.
    overcommit_root: Option<String>,
}

impl Scope {
    pub(super) fn of(change: &Change, before: &Tenancy, namespace: &str, owns: &str) -> Self {
        // The root tenant has no pool above it; only its modules are checked, in its own pools.
        let is_root = owns == namespace;
        let keys = change.keys();
        let parent_keys: Vec<String> = keys
            .iter()
            .filter(|key| !is_root && before.root_for(namespace, key).is_some())
            .cloned()
            .collect();
        let own_keys = keys
            .iter()
            .filter(|key| change.new.get(key).is_some())
            .filter_map(|key| {
                let hands_back = parent_keys.contains(key) && change.lowered(key);
                let modules_grow = change.modules.of(key) > change.modules_before.of(key);
                (hands_back || modules_grow).then(|| (key.clone(), hands_back))
            })
            .collect();
        let overcommit_root = before
            .pool_root(namespace)
            .filter(|_| !is_root)
            .map(str::to_string);
        Scope {
            keys,
            parent_keys,
            own_keys,
            overcommit_root,
        }
    }

    /// No pool to check: only the warnings.
    pub(super) fn checks_nothing(&self) -> bool {
        self.parent_keys.is_empty() && self.own_keys.is_empty()
    }
}

/// One Tenant write: what it is, the namespace the child owns, what it changes and where it
/// is checked. The gate's steps are its methods.
pub(super) struct TenantWrite<'a> {
    pub(super) subject: &'a Subject<'a>,
    pub(super) context: &'a Context<'a>,
    pub(super) owns: String,
    pub(super) change: Change,
    pub(super) scope: Scope,
}

/// A pool above the child, on one key, before and after the write.
pub(super) struct ParentPool<'t> {
    pub(super) before: Pool<'t>,
    pub(super) after: Pool<'t>,
    pub(super) budget: Quantity,
}

/// One of the child's own pools after the write, and whether it hands budget back.
pub(super) struct OwnPool<'t> {
    pub(super) pool: Pool<'t>,
    pub(super) hands_back: bool,
}

/// The pools a Tenant write checks.
pub(super) struct CheckedPools<'t> {
    pub(super) parents: Vec<ParentPool<'t>>,
    pub(super) own: Vec<OwnPool<'t>>,
}

impl<'t> CheckedPools<'t> {
    /// The pools checked, by name: those above the child, and the child's own when the
    /// modules grow into it.
    pub(super) fn names<'a>(&'a self, owns: &'a str) -> BTreeSet<&'a str> {
        let mut pools: BTreeSet<&str> = self.parents.iter().map(|p| p.before.name()).collect();
        if self.own.iter().any(|own| !own.hands_back) {
            pools.insert(owns);
        }
        pools
    }

    /// The pool above the child on `key`, if any.
    pub(super) fn parent(&self, key: &str) -> Option<&Pool<'t>> {
        self.parents
            .iter()
            .find(|p| p.before.key == key)
            .map(|p| &p.before)
    }
}

impl TenantWrite<'_> {
    /// The child as the tree holds it after the write.
    pub(super) fn child(&self) -> Tenant {
        Tenant {
            namespace: self.subject.namespace.to_string(),
            owns: self.owns.clone(),
            quota: Ok(self.change.new.clone()),
            bounded: !self.change.new.is_empty(),
            values: Rc::new(self.subject.values.clone()),
        }
    }

    /// A write with no pool to check: only the warnings, that the pool above is overcommitted
    /// (its pools read for it) and that modules could not be charged.
    pub(super) fn warn_only(&self, before: &mut Tenancy, notes: &mut Notes) -> Result<(), Refusal> {
        let root = self.scope.overcommit_root.as_deref();
        if let Some(root) = root.and_then(|r| before.owner(r)).cloned() {
            let keys: BTreeSet<&str> = root.quota.iter().flat_map(Budget::keys).collect();
            self.context
                .load_pools(before, &[root.owns.as_str()], &keys)?;
            notes.warnings.extend(before.overcommit(&root));
        }
        notes.warnings.extend(
            self.change
                .modules
                .unevaluable
                .iter()
                .map(|m| format!("tenant module not charged: {m}")),
        );
        Ok(())
    }

    /// Reads the pools from their roots down: those above the child, the one the overcommit
    /// warning is about, and the child's own subtree (whatever it bounds, before or after);
    /// then warns if the pool above is overcommitted.
    pub(super) fn read_pools(
        &self,
        before: &mut Tenancy,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let overcommit_root = self.scope.overcommit_root.as_deref();
        let overcommit_keys: Vec<String> = overcommit_root
            .and_then(|r| before.owner(r))
            .and_then(|root| root.quota.as_ref().ok())
            .map(|budget| budget.keys().map(str::to_string).collect())
            .unwrap_or_default();
        let mut roots: Vec<String> = self
            .scope
            .parent_keys
            .iter()
            .filter_map(|key| before.root_for(self.subject.namespace, key))
            .map(|root| root.owns.clone())
            .chain(overcommit_root.map(str::to_string))
            .collect();
        roots.sort();
        roots.dedup();
        roots.push(self.owns.clone());
        let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
        let read_keys: BTreeSet<&str> = self
            .scope
            .keys
            .iter()
            .chain(&overcommit_keys)
            .map(String::as_str)
            .collect();
        self.context.load_pools(before, &roots, &read_keys)?;
        if let Some(root) = overcommit_root.and_then(|r| before.owner(r))
            && let Some(warning) = before.overcommit(root)
        {
            notes.warnings.push(warning);
        }
        Ok(())
    }

    /// The pools above the child, one per key they bound, with their budgets.
    pub(super) fn parent_pools<'t>(
        &self,
        before: &'t Tenancy,
    ) -> Result<Vec<(Pool<'t>, Quantity)>, Refusal> {
        let mut parents = Vec::new();
        for key in &self.scope.parent_keys {
            parents.extend(before.budgeted_pool(self.subject.namespace, key)?);
        }
        Ok(parents)
    }

    /// The pools the write checks: those above the child, before and as they are after the
    /// write, and the child's own pools after it.
    pub(super) fn pools_after<'t>(
        &self,
        parents: Vec<(Pool<'t>, Quantity)>,
        after: &'t Tenancy,
    ) -> CheckedPools<'t> {
        let parents = parents
            .into_iter()
            .map(|(before, budget)| {
                let root = after.owner(before.name()).unwrap_or(before.root);
                ParentPool {
                    after: after.pool_rooted_at(root, &before.key),
                    before,
                    budget,
                }
            })
            .collect();
        let child = after.owner(&self.owns);
        let own = self
            .scope
            .own_keys
            .iter()
            .filter_map(|(key, hands_back)| {
                Some(OwnPool {
                    pool: after.pool_rooted_at(child?, key),
                    hands_back: *hands_back,
                })
            })
            .collect();
        CheckedPools { parents, own }
    }
}
