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

impl FromIterator<(String, Quantity)> for Budget {
    fn from_iter<I: IntoIterator<Item = (String, Quantity)>>(iter: I) -> Self {
        Budget(iter.into_iter().collect())
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
    /// Whether this tenant bounds `key`. An unreadable quota bounds every key: whoever
    /// depends on it must fail closed.
    pub fn bounds(&self, key: &str) -> bool {
        match &self.quota {
            Ok(budget) => budget.get(key).is_some(),
            Err(_) => self.bounded,
        }
    }

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

    /// The pool root for `key` of `namespace`: the nearest tenant at or above it that bounds
    /// `key`. Pools are per key, so a sub-tenant that bounds only `cpu` stays a member of its
    /// parent's pool for `memory`: no key escapes the budget above it.
    pub fn root_for<'a>(&'a self, namespace: &'a str, key: &str) -> Option<&'a Tenant> {
        let mut current = namespace;
        for _ in 0..=self.tenants.len() {
            let owner = self.owner(current)?;
            if owner.bounds(key) {
                return Some(owner);
            }
            current = self.parent(current)?;
        }
        None
    }

    /// What the sub-tenants carved out of `root`'s pool for `key` declare, and how many they
    /// are, skipping `except`; a carve-out whose quota is unreadable is reported, not counted.
    pub fn carved_for(
        &self,
        root: &str,
        key: &str,
        except: Option<&str>,
        unreadable: &mut Vec<String>,
    ) -> Result<(Quantity, usize), Overflow> {
        let mut total = Quantity::ZERO;
        let mut count = 0;
        for t in &self.tenants {
            if t.owns == root || Some(t.owns.as_str()) == except || !t.bounds(key) {
                continue;
            }
            let Some(parent) = self.parent(&t.owns) else {
                continue;
            };
            if self.root_for(parent, key).map(|r| r.owns.as_str()) != Some(root) {
                continue;
            }
            match &t.quota {
                Ok(q) => {
                    total = total
                        .checked_add(q.get(key).unwrap_or(Quantity::ZERO))
                        .ok_or(Overflow)?;
                    count += 1;
                }
                Err(e) => unreadable.push(e.clone()),
            }
        }
        Ok((total, count))
    }

    /// The carve-outs of `root`'s pool over every key its budget bounds.
    pub fn carved(
        &self,
        root: &str,
        budget: &Budget,
        except: Option<&str>,
        unreadable: &mut Vec<String>,
    ) -> Result<Carved, Overflow> {
        let mut carved = Carved::default();
        for key in budget.keys() {
            let (total, count) = self.carved_for(root, key, except, unreadable)?;
            if count > 0 {
                carved.total.insert(key.to_string(), total);
                carved.by.insert(key.to_string(), count);
            }
        }
        Ok(carved)
    }
}

/// What the carve-outs of a pool take, per key.
#[derive(Debug, Default, Clone)]
pub struct Carved {
    pub total: BTreeMap<String, Quantity>,
    pub by: BTreeMap<String, usize>,
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
    fn pools_are_per_key_and_carve_outs_leave_them() {
        let t = tree();
        let root = |ns: &'static str, key: &str| t.root_for(ns, key).map(|r| r.owns.clone());
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
        let mut problems = Vec::new();
        let budget = t.owner("tenant-a").unwrap().quota.clone().unwrap();
        let c = t.carved("tenant-a", &budget, None, &mut problems).unwrap();
        assert_eq!(c.total["memory"], q("8Gi"), "4Gi + min(4Gi, 6Gi)");
        assert_eq!(c.by["memory"], 2);
        assert!(!c.total.contains_key("cpu"), "no sub-tenant declares cpu");
        let c = t
            .carved("tenant-a", &budget, Some("tenant-a-d"), &mut problems)
            .unwrap();
        assert_eq!(c.total["memory"], q("4Gi"));
        assert!(problems.is_empty());
    }

    #[test]
    fn reports_an_overcommitted_pool() {
        let t = Tenancy::new(vec![
            tenant("a", "tenant-root", &[("memory", "4Gi")]),
            tenant("x", "tenant-a", &[("memory", "3Gi")]),
            tenant("y", "tenant-a", &[("memory", "2Gi")]),
        ]);
        let budget = t.owner("tenant-a").unwrap().quota.clone().unwrap();
        let carved = t
            .carved("tenant-a", &budget, None, &mut Vec::new())
            .unwrap();
        let over = overcommitted(&budget, &carved);
        assert_eq!(
            show_overcommit("tenant-a", &over),
            "pool tenant-a is overcommitted (memory: sub-tenants declare 5Gi of a budget of 4Gi)"
        );
    }

    #[test]
    fn an_unreadable_quota_bounds_every_key() {
        let mut broken = tenant("b", "tenant-a", &[("memory", "1Gi")]);
        broken.quota =
            Err("Tenant tenant-a/b: spec.resourceQuotas.cpu: \"x\" is not a valid quantity".into());
        let t = Tenancy::new(vec![tenant("a", "tenant-root", &[("cpu", "4")]), broken]);
        assert_eq!(t.root_for("tenant-a-b", "cpu").unwrap().owns, "tenant-a-b");
        let mut problems = Vec::new();
        let budget = t.owner("tenant-a").unwrap().quota.clone().unwrap();
        t.carved("tenant-a", &budget, None, &mut problems).unwrap();
        assert_eq!(problems.len(), 1, "reported, not counted");
    }

    #[test]
    fn a_zero_quota_still_bounds() {
        let t = Tenancy::new(vec![tenant("z", "tenant-root", &[("cpu", "0")])]);
        let root = t.root_for("tenant-z", "cpu").unwrap();
        assert_eq!(
            root.quota.as_ref().unwrap().get("cpu"),
            Some(Quantity::ZERO)
        );
        assert!(
            t.root_for("tenant-z", "memory").is_none(),
            "but only the keys it declares"
        );
    }
}
