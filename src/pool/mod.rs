//! Quota pools, as Cozystack's tenantquota controller computes them, but per quota key.
//!
//! - The pool of a namespace for `key` is rooted at the nearest tenant at or above it that
//!   bounds `key`, and is named by the namespace that tenant owns.
//! - Its members are the root's namespace and every descendant reached through tenants that
//!   do not bound `key`.
//! - A sub-tenant that bounds `key` is not a member: its declaration is *carved out* of the
//!   pool.
//!
//! Per key rather than per tenant: a sub-tenant that bounds only `cpu` stays in its parent's
//! pool for `memory`, so no key escapes the budget above it.
//!
//! - [`tree`]: the tenants and how namespaces nest; [`quota`]: a Tenant's declared budget;
//! - [`usage`]: what a pool's applications reserve, summed;
//! - [`standing`]: one key of one pool, computed once: budget, carved out, reserved, left.

pub mod quota;
pub mod standing;
pub mod tree;
pub mod usage;

pub use quota::{Budget, declared_quota};
pub use standing::Standing;
pub use tree::{Tenancy, Tenant, is_tenant_name, owned_namespace, owner_of, stored_tenant};
pub use usage::{Share, Usage};

use crate::keys::show;
use crate::quantity::Quantity;
use crate::resources::Overflow;

/// One pool of one key: the tenant that bounds it and the sub-tenants carved out of it,
/// computed once by [`Tenancy::pool`] and read by every check.
#[derive(Debug, Clone)]
pub struct Pool<'t> {
    pub key: String,
    pub root: &'t Tenant,
    /// The tenants whose namespaces' applications (and pending modules) it holds: the root
    /// and every one below it reached through tenants that do not bound the key, from the top
    /// down.
    pub members: Vec<&'t Tenant>,
    /// The bounded sub-tenants whose declarations are carved out, from the top down.
    pub carve_outs: Vec<&'t Tenant>,
}

/// What the carve-outs of a pool declare for its key, and how many they are.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Carved {
    pub total: Quantity,
    pub by: usize,
}

impl<'t> Pool<'t> {
    /// The pool's name: the namespace its root owns.
    pub fn name(&self) -> &'t str {
        &self.root.owns
    }

    /// The budget the root declares for the key, or why its quota cannot be read.
    pub fn budget(&self) -> Result<Quantity, &'t str> {
        match &self.root.quota {
            Ok(budget) => Ok(budget.get(&self.key).unwrap_or(Quantity::ZERO)),
            Err(e) => Err(e),
        }
    }

    /// The pool reduced to its member `namespace`, without carve-outs: what a write lists
    /// fresh when the rest of the pool comes from its summary.
    pub fn only(&self, namespace: &str) -> Pool<'t> {
        Pool {
            key: self.key.clone(),
            root: self.root,
            members: self
                .members
                .iter()
                .filter(|m| m.owns == namespace)
                .copied()
                .collect(),
            carve_outs: Vec::new(),
        }
    }

    /// Whether the applications of `namespace` are charged to this pool.
    #[cfg(test)]
    pub fn has_member(&self, namespace: &str) -> bool {
        self.members.iter().any(|m| m.owns == namespace)
    }

    /// What the carve-outs declare, skipping the one that owns `except`; a carve-out whose
    /// quota is unreadable is reported in `unreadable`, not counted.
    pub fn carved(
        &self,
        except: Option<&str>,
        unreadable: &mut Vec<String>,
    ) -> Result<Carved, Overflow> {
        let mut carved = Carved::default();
        for t in &self.carve_outs {
            if Some(t.owns.as_str()) == except {
                continue;
            }
            match &t.quota {
                Ok(q) => {
                    carved.total = carved
                        .total
                        .checked_add(q.get(&self.key).unwrap_or(Quantity::ZERO))
                        .ok_or(Overflow)?;
                    carved.by += 1;
                }
                Err(e) => unreadable.push(e.clone()),
            }
        }
        Ok(carved)
    }
}

/// A pool whose root's quota cannot be read: nothing can be checked against it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the budget of pool {pool} cannot be read: {reason}")]
pub struct UnreadableBudget {
    pub pool: String,
    pub reason: String,
}

impl Tenancy {
    /// The pool of `key` that `namespace` belongs to, with its budget; `None` when no tenant
    /// at or above it bounds `key`.
    pub fn budgeted_pool<'t>(
        &'t self,
        namespace: &str,
        key: &str,
    ) -> Result<Option<(Pool<'t>, Quantity)>, UnreadableBudget> {
        let Some(pool) = self.pool(namespace, key) else {
            return Ok(None);
        };
        let budget = pool.budget().map_err(|reason| UnreadableBudget {
            pool: pool.name().to_string(),
            reason: reason.to_string(),
        })?;
        Ok(Some((pool, budget)))
    }

    /// The pool of `key` that `namespace` belongs to; `None` when no tenant at or above it
    /// bounds `key`.
    pub fn pool<'t>(&'t self, namespace: &str, key: &str) -> Option<Pool<'t>> {
        let root = self.root_for(namespace, key)?;
        Some(self.pool_rooted_at(root, key))
    }

    /// The pool of `key` rooted at `root` (a tenant that bounds `key`): walked down from the
    /// root, through the tenants that do not bound `key`, to those that do.
    pub fn pool_rooted_at<'t>(&'t self, root: &'t Tenant, key: &str) -> Pool<'t> {
        let mut members = vec![root];
        let mut carve_outs = Vec::new();
        let mut next = 0;
        while let Some(&member) = members.get(next) {
            next += 1;
            for child in self.children(&member.owns) {
                if child.bounds(key) {
                    carve_outs.push(child);
                } else {
                    members.push(child);
                }
            }
        }
        Pool {
            key: key.to_string(),
            root,
            members,
            carve_outs,
        }
    }

    /// `pool pool-a is overcommitted (...)` when the sub-tenants carved out of the pools
    /// rooted at `root` declare more than its budget on some key.
    pub fn overcommit(&self, root: &Tenant) -> Option<String> {
        let budget = root.quota.as_ref().ok()?;
        let mut parts = Vec::new();
        for (key, declared) in budget.iter() {
            let standing = self
                .pool_rooted_at(root, key)
                .standing(declared, None, &Usage::default(), &mut Vec::new())
                .ok()?;
            if standing.overcommitted() {
                parts.push(format!(
                    "{key}: sub-tenants declare {} of a budget of {}",
                    show(key, standing.carved.total),
                    show(key, declared)
                ));
            }
        }
        (!parts.is_empty())
            .then(|| format!("pool {} is overcommitted ({})", root.owns, parts.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::tree::tests::{tenant, tree};
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn carved(t: &Tenancy, root: &str, key: &str, except: Option<&str>) -> Carved {
        let root = t.owner(root).unwrap();
        let mut problems = Vec::new();
        let c = t
            .pool_rooted_at(root, key)
            .carved(except, &mut problems)
            .unwrap();
        assert!(problems.is_empty());
        c
    }

    #[test]
    fn pools_are_per_key_and_carve_outs_leave_them() {
        let t = tree();
        let root = |ns: &str, key: &str| t.pool(ns, key).map(|p| p.name().to_string());
        assert_eq!(root("tenant-a-b", "memory").as_deref(), Some("tenant-a"));
        assert_eq!(
            root("tenant-a-b-c", "memory").as_deref(),
            Some("tenant-a-b-c")
        );
        assert_eq!(
            root("tenant-a-b-c", "cpu").as_deref(),
            Some("tenant-a"),
            "c bounds no cpu: a's pool for cpu"
        );
        assert_eq!(root("tenant-e", "cpu"), None);
        let memory = carved(&t, "tenant-a", "memory", None);
        assert_eq!(memory.total, q("8Gi"), "4Gi + min(4Gi, 6Gi)");
        assert_eq!(memory.by, 2);
        assert_eq!(
            carved(&t, "tenant-a", "cpu", None),
            Carved::default(),
            "no sub-tenant declares cpu"
        );
        assert_eq!(
            carved(&t, "tenant-a", "memory", Some("tenant-a-d")).total,
            q("4Gi")
        );
        let pool = t.pool("tenant-a-b", "memory").unwrap();
        assert!(pool.has_member("tenant-a") && pool.has_member("tenant-a-b"));
        assert!(!pool.has_member("tenant-a-b-c") && !pool.has_member("tenant-e"));
        assert_eq!(pool.budget(), Ok(q("16Gi")));
    }

    #[test]
    fn reports_an_overcommitted_pool() {
        let t = Tenancy::new(vec![
            tenant("a", "tenant-root", &[("memory", "4Gi")]),
            tenant("x", "tenant-a", &[("memory", "3Gi")]),
            tenant("y", "tenant-a", &[("memory", "2Gi")]),
        ]);
        assert_eq!(
            t.overcommit(t.owner("tenant-a").unwrap()).as_deref(),
            Some(
                "pool tenant-a is overcommitted (memory: sub-tenants declare 5Gi of a budget of 4Gi)"
            )
        );
        assert_eq!(t.overcommit(t.owner("tenant-a-x").unwrap()), None);
    }

    #[test]
    fn an_unreadable_quota_bounds_every_key() {
        let mut broken = tenant("b", "tenant-a", &[("memory", "1Gi")]);
        broken.quota =
            Err("Tenant tenant-a/b: spec.resourceQuotas.cpu: \"x\" is not a valid quantity".into());
        let t = Tenancy::new(vec![tenant("a", "tenant-root", &[("cpu", "4")]), broken]);
        let own = t.pool("tenant-a-b", "cpu").unwrap();
        assert_eq!(own.name(), "tenant-a-b");
        assert!(
            own.budget()
                .unwrap_err()
                .contains("is not a valid quantity")
        );
        let mut problems = Vec::new();
        let parent = t.pool("tenant-a", "cpu").unwrap();
        assert_eq!(
            parent.carved(None, &mut problems).unwrap(),
            Carved::default()
        );
        assert_eq!(problems.len(), 1, "reported, not counted");
    }
}
