//! The tenant tree, as Cozystack's tenantquota controller walks it.
//!
//! - A Tenant `x` in namespace `P` owns `tenant-x` when `P` is `tenant-root`, else `P-x`;
//!   `tenant-root` (owned by the Tenant `root` in `tenant-root`) is its own parent.
//! - A tenant is *bounded* when its `resourceQuotas` is non-empty, and bounds a key when it
//!   declares it (an unreadable quota bounds every key: whoever depends on it fails closed).

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::quota::{Budget, declared_quota};
use crate::keys::KeyAliases;

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

/// Whether the tenant chart can render a Tenant of this name: its release must be
/// `tenant-<name>` with no other dash (`tenant.name` in the chart's `_helpers.tpl`).
pub fn is_tenant_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('-')
}

/// One Tenant application, as the tree needs it.
#[derive(Clone, Debug)]
pub struct Tenant {
    /// Where the Tenant object lives (its parent's namespace).
    pub namespace: String,
    /// The namespace it owns.
    pub owns: String,
    /// Its declared `resourceQuotas` as a budget, or why they could not be read.
    pub quota: Result<Budget, String>,
    /// Whether `resourceQuotas` is non-empty (even if some entry is malformed).
    pub bounded: bool,
    /// Its values, as listed (null when they cannot be read): what it brings besides its
    /// declaration, its modules, is read from them.
    pub values: Rc<Value>,
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
}

/// A stored Tenant's place in the tree and its declared quota, read leniently: an unreadable
/// quota is kept as an error for whoever needs it, and still bounds (fail closed).
pub fn stored_tenant(
    name: &str,
    namespace: &str,
    values: Result<&Value, &String>,
    aliases: &KeyAliases,
) -> Tenant {
    let kept = Rc::new(values.ok().cloned().unwrap_or(Value::Null));
    let declared = values
        .map_err(String::clone)
        .and_then(|v| declared_quota(v).map_err(|errors| errors.join("; ")));
    let bounded = match &declared {
        Ok(pairs) => !pairs.is_empty(),
        Err(_) => true,
    };
    Tenant {
        namespace: namespace.to_string(),
        owns: owned_namespace(name, namespace),
        quota: declared
            .map(|pairs| Budget::from_declared(&pairs, aliases))
            .map_err(|e| format!("Tenant {namespace}/{name}: {e}")),
        bounded,
        values: kept,
    }
}

/// Where the Tenant that owns `namespace` lives and its name, read from the namespace's name
/// alone: the inverse of [`owned_namespace`] for the names the tenant chart renders (no dash
/// in a tenant's name). `None`: no Tenant can own it.
pub fn owner_of(namespace: &str) -> Option<(String, String)> {
    if namespace == ROOT_NAMESPACE {
        return Some((ROOT_NAMESPACE.to_string(), "root".to_string()));
    }
    let path = namespace.strip_prefix("tenant-")?;
    if path.split('-').any(str::is_empty) {
        return None;
    }
    let (parent, name) = match path.rsplit_once('-') {
        Some((above, name)) => (format!("tenant-{above}"), name),
        None => (ROOT_NAMESPACE.to_string(), path),
    };
    (is_tenant_name(name) && owned_namespace(name, &parent) == namespace)
        .then(|| (parent, name.to_string()))
}

/// The tenants known to a request, indexed by the namespace each owns and by the namespace
/// each lives in. A request knows the tenants above the namespace written to and those of the
/// pools it checks, not necessarily every tenant of the cluster.
#[derive(Debug, Default, Clone)]
pub struct Tenancy {
    tenants: Vec<Tenant>,
    by_owned: HashMap<String, usize>,
    /// Namespace -> the tenants living in it (its child tenants), in the order added.
    by_parent: HashMap<String, Vec<usize>>,
}

impl Tenancy {
    pub fn new(tenants: Vec<Tenant>) -> Self {
        let mut tenancy = Tenancy::default();
        for t in tenants {
            tenancy.insert(t);
        }
        tenancy
    }

    /// Adds `tenant`, unless a tenant already owns its namespace: two Tenants cannot own one
    /// namespace in a real cluster, so the first one known is kept.
    pub fn insert(&mut self, tenant: Tenant) {
        if self.by_owned.contains_key(&tenant.owns) {
            return;
        }
        let index = self.tenants.len();
        self.by_owned.insert(tenant.owns.clone(), index);
        if tenant.namespace != tenant.owns {
            self.by_parent
                .entry(tenant.namespace.clone())
                .or_default()
                .push(index);
        }
        self.tenants.push(tenant);
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

    /// Every tenant known, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &Tenant> {
        self.tenants.iter()
    }

    pub fn owner(&self, namespace: &str) -> Option<&Tenant> {
        self.by_owned.get(namespace).map(|&i| &self.tenants[i])
    }

    /// The tenants living in `namespace` (not the one owning it).
    pub fn children<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a Tenant> + 'a {
        self.by_parent
            .get(namespace)
            .into_iter()
            .flatten()
            .map(|&i| &self.tenants[i])
    }

    /// The namespace above `namespace`, `None` at the top or outside the tree.
    pub fn parent(&self, namespace: &str) -> Option<&str> {
        self.owner(namespace)
            .map(|t| t.namespace.as_str())
            .filter(|p| *p != namespace)
    }

    /// The nearest bounded tenant at or above `namespace`, as the namespace it owns.
    pub fn pool_root<'a>(&'a self, namespace: &str) -> Option<&'a str> {
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

    /// The pool root for `key` of `namespace`: the nearest tenant at or above it that bounds
    /// `key`. Pools are per key, so a sub-tenant that bounds only `cpu` stays a member of its
    /// parent's pool for `memory`: no key escapes the budget above it.
    pub fn root_for<'a>(&'a self, namespace: &str, key: &str) -> Option<&'a Tenant> {
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
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::quantity::Quantity;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    pub(crate) fn tenant(name: &str, namespace: &str, quota: &[(&str, &str)]) -> Tenant {
        let declared: Vec<(String, Quantity)> =
            quota.iter().map(|(k, v)| (k.to_string(), q(v))).collect();
        Tenant {
            namespace: namespace.into(),
            owns: owned_namespace(name, namespace),
            quota: Ok(Budget::from_declared(&declared, &KeyAliases::default())),
            bounded: !quota.is_empty(),
            values: Rc::new(Value::Null),
        }
    }

    /// root (unbounded) -> a (16Gi) -> { a-b (unbounded) -> a-b-c (4Gi), a-d (4Gi) }; e (unbounded).
    pub(crate) fn tree() -> Tenancy {
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
    fn reads_the_owner_from_the_namespace_name() {
        let owner = |ns: &str| owner_of(ns).map(|(p, n)| format!("{p}/{n}"));
        assert_eq!(owner("tenant-root").as_deref(), Some("tenant-root/root"));
        assert_eq!(owner("tenant-a").as_deref(), Some("tenant-root/a"));
        assert_eq!(owner("tenant-a-b").as_deref(), Some("tenant-a/b"));
        assert_eq!(owner("tenant-a-b-c").as_deref(), Some("tenant-a-b/c"));
        // tenant-root's children own tenant-<name>, never tenant-root-<name>.
        assert_eq!(owner("tenant-root-x"), None);
        for not_owned in [
            "default",
            "tenant-",
            "tenant-a-",
            "tenant--a",
            "kube-system",
        ] {
            assert_eq!(owner(not_owned), None, "{not_owned}");
        }
        for (name, ns) in [
            ("root", "tenant-root"),
            ("x", "tenant-root"),
            ("y", "tenant-a-b"),
        ] {
            let owned = owned_namespace(name, ns);
            assert_eq!(owner_of(&owned), Some((ns.to_string(), name.to_string())));
        }
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

    #[test]
    fn an_unreadable_stored_quota_still_bounds() {
        let values = json!({"resourceQuotas": {"cpu": "lots"}});
        let t = stored_tenant("a", "tenant-root", Ok(&values), &KeyAliases::default());
        assert!(t.bounded && t.bounds("memory"));
        assert_eq!(
            t.quota.unwrap_err(),
            "Tenant tenant-root/a: spec.resourceQuotas.cpu: \"lots\" is not a valid quantity"
        );
        let none = json!({});
        let t = stored_tenant("b", "tenant-a", Ok(&none), &KeyAliases::default());
        assert_eq!(t.owns, "tenant-a-b");
        assert!(!t.bounded && !t.bounds("cpu"));
    }
}
