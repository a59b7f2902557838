//! The generated cluster: `cluster` applications spread over tenant trees under `tenant-root`
//! (one to three levels deep, bounded and unbounded tenants, [`APPS_PER_TENANT`] applications
//! a tenant), one of them the measured pool of exactly `pool` applications; the real
//! definitions and instance types; the two admission requests, with the shipped settings.
//!
//! The measured pool is the bounded level-1 tenant `pool` (namespace `tenant-pool`): its own
//! applications and those of its unbounded sub-tenants (levels 2 and 3) make `pool`
//! applications; a bounded sub-tenant beside them (`carve`, a carve-out: its namespace is not
//! the pool's) holds applications the policy must not read. The pool is generated first, so it
//! is the same objects in every cluster it is put in: only the rest of the cluster changes
//! with the cluster axis.
//!
//! The rest: trees of 1 to 30 tenants, drawn from a fixed seed. Some are pools like the
//! measured one (a bounded level-1 tenant, sometimes with bounded carve-outs), some hold pools
//! one level down (an unbounded level-1 tenant with bounded children), some hold no pool at all
//! (nothing bounds them: their writes are not checked).
//!
//! Applications are VMInstance, VMDisk, Postgres, Redis and Kubernetes, 8 / 4 / 4 / 2 / 2 in
//! every 20, with the chart defaults the Cozystack API stores (test_data/reference/values) and
//! per-application variation: in [`Variant::Same`] values repeat with short periods, as
//! applications of the same sizes do (a pool of 1,000 holds about 150 distinct sizes); in
//! [`Variant::Distinct`] every application's values differ in what its reservation reads.
//!
//! [`values`]: the applications' values; [`layout`]: the tenant trees.

mod layout;
#[cfg(test)]
mod tests;
mod values;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use layout::{layout, quota, subtree_apps};
use values::{PATTERN, merged, served};

pub use values::Defaults;

/// Applications per tenant (the last tenant of the cluster may hold fewer).
pub const APPS_PER_TENANT: usize = 20;
/// The measured pool's root tenant, and the namespace it owns.
pub const POOL_TENANT: &str = "pool";
pub const POOL_NAMESPACE: &str = "tenant-pool";
/// The bounded sub-tenant beside the pool's members: a carve-out.
#[cfg(test)]
pub const CARVE_OUT_NAMESPACE: &str = "tenant-pool-carve";
pub use tenant_reservation_policy::ROOT_NAMESPACE;

/// The request subject: a VMInstance.
pub const SUBJECT_KIND: &str = "VMInstance";
/// CREATE: a new u1.medium VM in the pool's deepest namespace.
pub const CREATE_NAME: &str = "vm-new";
/// UPDATE: the pool's first application, a u1.medium VM in the pool root's namespace, grows
/// to a u1.large: the pool is summed.
pub const UPDATE_NAME: &str = "vm0";

/// Whether applications' values repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// Sizes repeat, as in a real tenant: the policy charges each distinct one once.
    Same,
    /// Every application's values differ in what its reservation reads.
    Distinct,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Same => "same",
            Variant::Distinct => "distinct",
        }
    }
}

/// One cluster to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shape {
    /// Applications in the cluster (Tenants not counted).
    pub cluster: usize,
    /// Applications in the measured pool.
    pub pool: usize,
    pub variant: Variant,
}

/// What part of the cluster a tenant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Root,
    /// The measured pool's root.
    Pool,
    /// An unbounded sub-tenant of the measured pool.
    Member,
    /// The bounded sub-tenant of the measured pool.
    CarveOut,
    Background,
}

/// One generated tenant.
#[derive(Clone, Debug)]
pub struct TenantSpec {
    pub name: String,
    /// Where its Tenant object lives.
    pub namespace: String,
    /// The namespace it owns.
    pub owns: String,
    /// 0 for the root, 1 to 3 below it.
    pub level: usize,
    pub bounded: bool,
    /// Applications in the namespace it owns.
    pub apps: usize,
    pub role: Role,
}

/// A generated cluster.
pub struct Cluster {
    pub shape: Shape,
    /// Every object the cluster holds: HelmReleases, definitions, instance types.
    pub objects: Vec<Value>,
    pub tenants: Vec<TenantSpec>,
    /// The namespaces of the measured pool: its root's and its members'.
    pub pool_namespaces: BTreeSet<String>,
    /// Where the CREATE is written: the pool's deepest namespace.
    pub create_namespace: String,
    /// The pool's applications by kind.
    pub pool_mix: BTreeMap<&'static str, usize>,
    pub create: Vec<u8>,
    pub update: Vec<u8>,
}

/// Generates the cluster of `shape`.
///
/// # Panics
/// When `shape.pool` is 0 or larger than `shape.cluster`.
pub fn generate(shape: Shape, defaults: &Defaults) -> Cluster {
    assert!(
        shape.pool > 0 && shape.pool <= shape.cluster,
        "a pool of 1 to `cluster` applications"
    );
    let layout = layout(shape);
    let tenants = layout.tenants;
    let totals = subtree_apps(&tenants);
    let mut objects: Vec<Value> = Vec::with_capacity(shape.cluster + tenants.len() + 200);
    // Tenants' serials after every application's, so that the pool (laid out first) is the
    // same objects in every cluster.
    for (t, tenant) in tenants.iter().enumerate() {
        let quotas = if tenant.bounded {
            quota(totals[t])
        } else {
            json!({})
        };
        let spec = merged(&defaults.tenant, json!({"resourceQuotas": quotas}));
        objects.push(served(
            test_kit::tenant_with(&tenant.namespace, &tenant.name, spec),
            (1 << 24) + t,
        ));
    }
    let mut serial = 0;
    let mut counters = [0usize; 5];
    let mut pool_mix: BTreeMap<&'static str, usize> = BTreeMap::new();
    for tenant in &tenants {
        for a in 0..tenant.apps {
            let kind = PATTERN[a % PATTERN.len()];
            let counter = &mut counters[kind as usize];
            let n = *counter;
            *counter += 1;
            if matches!(tenant.role, Role::Pool | Role::Member) {
                *pool_mix.entry(kind.name()).or_default() += 1;
            }
            let values = defaults.values(kind, n, shape.variant);
            objects.push(served(
                test_kit::application(kind.name(), &tenant.owns, &kind.app_name(n), values),
                serial,
            ));
            serial += 1;
        }
    }
    objects.extend(test_kit::definitions());
    objects.extend(test_kit::instance_types());

    let pool_namespaces: BTreeSet<String> = tenants
        .iter()
        .filter(|t| matches!(t.role, Role::Pool | Role::Member))
        .map(|t| t.owns.clone())
        .collect();
    let create_namespace = tenants
        .iter()
        .filter(|t| matches!(t.role, Role::Pool | Role::Member))
        .max_by_key(|t| t.level)
        .map(|t| t.owns.clone())
        .expect("the pool has a root");
    let settings = test_kit::deploy_settings_unchecked();
    let create = test_kit::payload(
        "CREATE",
        SUBJECT_KIND,
        &create_namespace,
        CREATE_NAME,
        defaults.vm_values(0, Variant::Same),
        None,
        settings.clone(),
    );
    // vm0 is the pool's first application, in the pool root's namespace, a u1.medium.
    let old = defaults.vm_values(0, shape.variant);
    let mut grown = old.clone();
    grown["instanceType"] = json!("u1.large");
    let update = test_kit::payload(
        "UPDATE",
        SUBJECT_KIND,
        POOL_NAMESPACE,
        UPDATE_NAME,
        grown,
        Some(old),
        settings,
    );
    Cluster {
        shape,
        objects,
        tenants,
        pool_namespaces,
        create_namespace,
        pool_mix,
        create,
        update,
    }
}

impl Cluster {
    /// Tenants below the root.
    pub fn tenant_count(&self) -> usize {
        self.tenants.len() - 1
    }

    /// Tenants by depth below the root: (level 1, level 2, level 3).
    pub fn levels(&self) -> [usize; 3] {
        let mut levels = [0; 3];
        for t in &self.tenants[1..] {
            levels[t.level - 1] += 1;
        }
        levels
    }

    pub fn bounded_count(&self) -> usize {
        self.tenants.iter().filter(|t| t.bounded).count()
    }

    #[cfg(test)]
    pub fn apps(&self) -> usize {
        self.tenants.iter().map(|t| t.apps).sum()
    }
}
