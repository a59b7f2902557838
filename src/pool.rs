//! The tenant tree and its quota pools, as Cozystack's tenantquota controller computes them.
//!
//! - A Tenant `x` in namespace `P` owns `tenant-x` when `P` is `tenant-root`, else `P-x`;
//!   `tenant-root` (owned by the Tenant `root` in `tenant-root`) is its own parent.
//! - A tenant is *bounded* when its `resourceQuotas` is non-empty.
//! - The pool of a namespace is its nearest bounded ancestor (itself included). Members are
//!   the pool root's namespace and every descendant reached through unbounded tenants only.
//! - A bounded sub-tenant is not a member: its declared quota is carved out of the pool.

use std::collections::{BTreeMap, HashMap};

use crate::quantity::Quantity;
use crate::resources::{self, Overflow};
use crate::settings::Settings;

pub const ROOT_NAMESPACE: &str = "tenant-root";

/// The namespace a Tenant named `name` created in `namespace` owns.
pub fn owned_namespace(name: &str, namespace: &str) -> String {
    if namespace == ROOT_NAMESPACE {
        if name == "root" {
            ROOT_NAMESPACE.to_string()
        } else {
            format!("tenant-{name}")
        }
    } else {
        format!("{namespace}-{name}")
    }
}

/// A quota as declared, keyed by reservation key (aliases applied). Unlike [`resources::Resources`]
/// a zero is kept: `cpu: 0` bounds cpu at zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget(BTreeMap<String, Quantity>);

impl Budget {
    pub fn get(&self, key: &str) -> Option<Quantity> {
        self.0.get(key).copied()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Quantity)> {
        self.0.iter().map(|(k, q)| (k.as_str(), *q))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Declared `(key, quantity)` pairs to a budget. Two declared keys that alias to the same
    /// reservation key (`requests.cpu` and `limits.cpu`) bound it at the tighter of the two,
    /// as Kubernetes applies the most restrictive quota.
    pub fn from_declared<'a>(
        declared: impl IntoIterator<Item = (&'a str, Quantity)>,
        settings: &Settings,
    ) -> Budget {
        let mut budget = BTreeMap::new();
        for (key, q) in declared {
            budget
                .entry(settings.canonical_key(key).to_string())
                .and_modify(|existing: &mut Quantity| *existing = (*existing).min(q))
                .or_insert(q);
        }
        Budget(budget)
    }
}

/// One Tenant application, as the tree needs it.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub name: String,
    /// Where the Tenant object lives (its parent's namespace).
    pub namespace: String,
    /// The namespace it owns.
    pub owns: String,
    /// Its declared `resourceQuotas` as a budget, or why they could not be read.
    pub quota: Result<Budget, String>,
    /// Whether `resourceQuotas` is non-empty (even if some entry is malformed).
    pub bounded: bool,
}

impl Tenant {
    pub fn label(&self) -> String {
        format!("Tenant {}/{}", self.namespace, self.name)
    }
}

/// Every tenant, indexed by the namespace it owns.
#[derive(Debug, Default)]
pub struct Tenancy {
    tenants: Vec<Tenant>,
    by_owned: HashMap<String, usize>,
}

impl Tenancy {
    pub fn new(tenants: Vec<Tenant>) -> Self {
        let mut by_owned = HashMap::with_capacity(tenants.len());
        for (i, t) in tenants.iter().enumerate() {
            // Two Tenants cannot own one namespace in a real cluster; keep the first seen.
            by_owned.entry(t.owns.clone()).or_insert(i);
        }
        Tenancy { tenants, by_owned }
    }

    /// The same tree with `tenant` written (replacing the one that owns its namespace).
    pub fn with(&self, tenant: Tenant) -> Tenancy {
        let mut tenants: Vec<Tenant> = self
            .tenants
            .iter()
            .filter(|t| t.owns != tenant.owns)
            .cloned()
            .collect();
        tenants.push(tenant);
        Tenancy::new(tenants)
    }

    pub fn tenants(&self) -> &[Tenant] {
        &self.tenants
    }

    pub fn owner(&self, namespace: &str) -> Option<&Tenant> {
        self.by_owned.get(namespace).map(|&i| &self.tenants[i])
    }

    /// The namespace above `namespace`, `None` at the top or outside the tree.
    pub fn parent(&self, namespace: &str) -> Option<&str> {
        self.owner(namespace)
            .map(|t| t.namespace.as_str())
            .filter(|p| *p != namespace)
    }

    /// The nearest bounded tenant at or above `namespace`, as the namespace it owns.
    pub fn pool_root<'a>(&'a self, namespace: &'a str) -> Option<&'a str> {
        let mut current = namespace;
        // A cycle cannot occur with real namespace names; the bound makes sure of it.
        for _ in 0..=self.tenants.len() {
            let owner = self.owner(current)?;
            if owner.bounded {
                return Some(owner.owns.as_str());
            }
            current = self.parent(current)?;
        }
        None
    }

    /// Whether `namespace` is `ancestor` or lies below it.
    pub fn is_within(&self, namespace: &str, ancestor: &str) -> bool {
        let mut current = namespace;
        for _ in 0..=self.tenants.len() {
            if current == ancestor {
                return true;
            }
            match self.parent(current) {
                Some(p) => current = p,
                None => return false,
            }
        }
        false
    }

    pub fn pool(&self, namespace: &str) -> Option<Pool<'_>> {
        let root = self.pool_root(namespace)?;
        let tenant = self.owner(root)?;
        let mut members = Vec::new();
        let mut carve_outs = Vec::new();
        for t in &self.tenants {
            if t.bounded && t.owns != root {
                if self.parent(&t.owns).and_then(|p| self.pool_root(p)) == Some(root) {
                    carve_outs.push(t);
                }
            } else if self.pool_root(&t.owns) == Some(root) {
                members.push(t.owns.clone());
            }
        }
        members.sort();
        members.dedup();
        Some(Pool {
            root: tenant,
            members,
            carve_outs,
        })
    }
}

/// A quota pool: its bounded root, member namespaces, and the sub-tenants carved from it.
#[derive(Debug)]
pub struct Pool<'a> {
    pub root: &'a Tenant,
    pub members: Vec<String>,
    pub carve_outs: Vec<&'a Tenant>,
}

/// What the carve-outs of a pool take, per key the pool bounds.
#[derive(Debug, Default, Clone)]
pub struct Carved {
    pub total: BTreeMap<String, Quantity>,
    pub by: BTreeMap<String, usize>,
}

impl Pool<'_> {
    /// A pool is named by its root's namespace.
    #[allow(clippy::misnamed_getters)]
    pub fn name(&self) -> &str {
        &self.root.owns
    }

    pub fn is_member(&self, namespace: &str) -> bool {
        self.members
            .binary_search_by(|m| m.as_str().cmp(namespace))
            .is_ok()
    }

    /// Sums the carve-outs over the keys `budget` bounds, skipping `except` (a tenant being
    /// rewritten) and reporting, rather than counting, a carve-out whose quota is unreadable.
    pub fn carved(
        &self,
        budget: &Budget,
        except: Option<&str>,
        unreadable: &mut Vec<String>,
    ) -> Result<Carved, Overflow> {
        let mut carved = Carved::default();
        for t in &self.carve_outs {
            if Some(t.owns.as_str()) == except {
                continue;
            }
            let quota = match &t.quota {
                Ok(q) => q,
                Err(e) => {
                    unreadable.push(e.clone());
                    continue;
                }
            };
            for (key, q) in quota.iter() {
                if budget.get(key).is_none() {
                    continue;
                }
                let total = carved
                    .total
                    .entry(key.to_string())
                    .or_insert(Quantity::ZERO);
                *total = total.checked_add(q).ok_or(Overflow)?;
                *carved.by.entry(key.to_string()).or_insert(0) += 1;
            }
        }
        Ok(carved)
    }
}

/// Keys where a pool's carve-outs exceed its budget: `(key, budget, carved)`.
pub fn overcommitted(budget: &Budget, carved: &Carved) -> Vec<(String, Quantity, Quantity)> {
    budget
        .iter()
        .filter_map(|(key, b)| {
            let c = carved.total.get(key).copied().unwrap_or(Quantity::ZERO);
            (c > b).then(|| (key.to_string(), b, c))
        })
        .collect()
}

pub fn show_overcommit(pool: &str, over: &[(String, Quantity, Quantity)]) -> String {
    let parts: Vec<String> = over
        .iter()
        .map(|(k, b, c)| {
            format!(
                "{k}: sub-tenants declare {} of a budget of {}",
                resources::show(k, *c),
                resources::show(k, *b)
            )
        })
        .collect();
    format!("pool {pool} is overcommitted ({})", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    pub(crate) fn tenant(name: &str, namespace: &str, quota: &[(&str, &str)]) -> Tenant {
        let settings = Settings::default();
        Tenant {
            name: name.into(),
            namespace: namespace.into(),
            owns: owned_namespace(name, namespace),
            quota: Ok(Budget::from_declared(
                quota.iter().map(|(k, v)| (*k, q(v))),
                &settings,
            )),
            bounded: !quota.is_empty(),
        }
    }

    /// root (unbounded) -> a (16Gi) -> { a-b (unbounded) -> a-b-c (4Gi), a-d (4Gi) }; e (unbounded).
    fn tree() -> Tenancy {
        Tenancy::new(vec![
            tenant("root", "tenant-root", &[]),
            tenant("a", "tenant-root", &[("memory", "16Gi"), ("cpu", "8")]),
            tenant("b", "tenant-a", &[]),
            tenant("c", "tenant-a-b", &[("memory", "4Gi")]),
            tenant(
                "d",
                "tenant-a",
                &[("requests.memory", "4Gi"), ("limits.memory", "6Gi")],
            ),
            tenant("e", "tenant-root", &[]),
        ])
    }

    #[test]
    fn derives_owned_namespaces_as_cozystack_does() {
        assert_eq!(owned_namespace("root", "tenant-root"), "tenant-root");
        assert_eq!(owned_namespace("foo", "tenant-root"), "tenant-foo");
        assert_eq!(owned_namespace("x", "tenant-a"), "tenant-a-x");
        assert_eq!(owned_namespace("y", "tenant-a-b"), "tenant-a-b-y");
    }

    #[test]
    fn finds_the_nearest_bounded_ancestor() {
        let t = tree();
        assert_eq!(t.pool_root("tenant-a"), Some("tenant-a"));
        assert_eq!(
            t.pool_root("tenant-a-b"),
            Some("tenant-a"),
            "unbounded child draws from its parent"
        );
        assert_eq!(
            t.pool_root("tenant-a-b-c"),
            Some("tenant-a-b-c"),
            "bounded grandchild is its own pool"
        );
        assert_eq!(
            t.pool_root("tenant-e"),
            None,
            "no bounded ancestor: no pool"
        );
        assert_eq!(t.pool_root("tenant-root"), None);
        assert_eq!(t.pool_root("default"), None, "not a tenant namespace");
        assert_eq!(
            t.parent("tenant-root"),
            None,
            "tenant-root is its own parent"
        );
        assert!(t.is_within("tenant-a-b-c", "tenant-a"));
        assert!(t.is_within("tenant-a", "tenant-a"));
        assert!(!t.is_within("tenant-e", "tenant-a"));
    }

    #[test]
    fn members_exclude_bounded_sub_tenants_which_are_carved_out() {
        let t = tree();
        let pool = t.pool("tenant-a-b").unwrap();
        assert_eq!(pool.name(), "tenant-a");
        assert_eq!(pool.members, ["tenant-a", "tenant-a-b"]);
        let carved: Vec<_> = pool.carve_outs.iter().map(|t| t.owns.as_str()).collect();
        assert_eq!(carved, ["tenant-a-b-c", "tenant-a-d"]);
        let budget = pool.root.quota.clone().unwrap();
        let c = pool.carved(&budget, None, &mut Vec::new()).unwrap();
        assert_eq!(c.total["memory"], q("8Gi"), "4Gi + min(4Gi, 6Gi)");
        assert_eq!(c.by["memory"], 2);
        assert!(!c.total.contains_key("cpu"), "no sub-tenant declares cpu");
        let c = pool
            .carved(&budget, Some("tenant-a-d"), &mut Vec::new())
            .unwrap();
        assert_eq!(c.total["memory"], q("4Gi"));
    }

    #[test]
    fn reports_an_overcommitted_pool() {
        let t = Tenancy::new(vec![
            tenant("a", "tenant-root", &[("memory", "4Gi")]),
            tenant("x", "tenant-a", &[("memory", "3Gi")]),
            tenant("y", "tenant-a", &[("memory", "2Gi")]),
        ]);
        let pool = t.pool("tenant-a").unwrap();
        let budget = pool.root.quota.clone().unwrap();
        let carved = pool.carved(&budget, None, &mut Vec::new()).unwrap();
        let over = overcommitted(&budget, &carved);
        assert_eq!(
            show_overcommit(pool.name(), &over),
            "pool tenant-a is overcommitted (memory: sub-tenants declare 5Gi of a budget of 4Gi)"
        );
    }

    #[test]
    fn a_zero_quota_still_bounds() {
        let t = Tenancy::new(vec![tenant("z", "tenant-root", &[("cpu", "0")])]);
        let pool = t.pool("tenant-z").unwrap();
        assert_eq!(
            pool.root.quota.as_ref().unwrap().get("cpu"),
            Some(Quantity::ZERO)
        );
    }
}
