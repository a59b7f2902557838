//! The tenant trees of a cluster: the root, the measured pool and its carve-out, then
//! background trees of 1 to `MAX_TREE` tenants drawn from a fixed seed.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tenant_reservation_policy::owned_namespace;

use super::{APPS_PER_TENANT, POOL_TENANT, ROOT_NAMESPACE, Role, Shape, TenantSpec};

/// Level-2 tenants of the pool (the rest of its tenants are level 3, spread over these).
const POOL_FAN_OUT: usize = 25;
/// The largest background tree, in tenants.
const MAX_TREE: u64 = 30;

/// splitmix64: the background's shapes from a fixed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Tenants being laid out, before their applications are filled in.
pub(super) struct Layout {
    pub(super) tenants: Vec<TenantSpec>,
}

impl Layout {
    fn add(&mut self, parent: usize, name: String, bounded: bool, role: Role) -> usize {
        let p = &self.tenants[parent];
        let (namespace, level) = (p.owns.clone(), p.level + 1);
        let owns = owned_namespace(&name, &namespace);
        self.tenants.push(TenantSpec {
            name,
            namespace,
            owns,
            level,
            bounded,
            apps: 0,
            role,
        });
        self.tenants.len() - 1
    }

    /// A tree of `count` tenants under `top`: level 2 first (a third of them), the rest at
    /// level 3, spread over the level-2 ones. Returns the level-2 and level-3 indices.
    fn tree(
        &mut self,
        top: usize,
        count: usize,
        fan_out: usize,
        names: (char, char),
        bounded: impl Fn(usize, usize) -> bool,
        role: Role,
    ) -> Vec<usize> {
        let below = count.saturating_sub(1);
        let second = below.min(fan_out).min(below.div_ceil(3).max(1));
        let mut added = Vec::new();
        let children: Vec<usize> = (0..second.min(below))
            .map(|j| {
                let t = self.add(top, format!("{}{j}", names.0), bounded(2, j), role);
                added.push(t);
                t
            })
            .collect();
        for k in 0..below - children.len() {
            let parent = children[k % children.len()];
            let t = self.add(parent, format!("{}{k}", names.1), bounded(3, k), role);
            added.push(t);
        }
        added
    }
}

/// A Tenant's quota, generous enough for `apps` applications of the pattern's sizes.
pub(super) fn quota(apps: usize) -> Value {
    let n = apps.max(1);
    json!({"cpu": format!("{}", 64 * n + 64), "memory": format!("{}Gi", 256 * n + 256),
           "storage": format!("{}Gi", 512 * n + 512)})
}

/// Lays out the tenants of `shape`: the root, the measured pool, the carve-out when the
/// cluster has room for it, then the background trees; every tenant's application count.
pub(super) fn layout(shape: Shape) -> Layout {
    let mut l = Layout {
        tenants: vec![TenantSpec {
            name: "root".into(),
            namespace: ROOT_NAMESPACE.into(),
            owns: ROOT_NAMESPACE.into(),
            level: 0,
            bounded: false,
            apps: 0,
            role: Role::Root,
        }],
    };
    // The measured pool: ceil(pool / 20) tenants.
    let pool_tenants = shape.pool.div_ceil(APPS_PER_TENANT).max(1);
    let pool = l.add(0, POOL_TENANT.into(), true, Role::Pool);
    let members = l.tree(
        pool,
        pool_tenants,
        POOL_FAN_OUT,
        ('m', 'n'),
        |_, _| false,
        Role::Member,
    );
    let mut left = shape.pool;
    for &t in std::iter::once(&pool).chain(&members) {
        let apps = left.min(APPS_PER_TENANT);
        l.tenants[t].apps = apps;
        left -= apps;
    }
    let mut rest = shape.cluster.saturating_sub(shape.pool);
    if rest >= APPS_PER_TENANT {
        let carve = l.add(pool, "carve".into(), true, Role::CarveOut);
        l.tenants[carve].apps = APPS_PER_TENANT;
        rest -= APPS_PER_TENANT;
    }
    // The background: trees of 1 to 30 tenants until the applications are placed.
    let mut rng = Rng(0x5eed_0000_0000_0000 ^ shape.cluster as u64);
    let mut tree = 0;
    while rest > 0 {
        let count = (1 + rng.below(MAX_TREE) as usize).min(rest.div_ceil(APPS_PER_TENANT));
        let kind = rng.below(10);
        // 0-3: a pool at level 1 (some carve-outs below); 4-6: pools at level 2; 7-9: no pool.
        let top_bounded = kind < 4;
        let carve_outs = rng.below(4) == 0;
        let top = l.add(0, format!("b{tree}"), top_bounded, Role::Background);
        let seed = rng.next();
        let below = l.tree(
            top,
            count,
            usize::MAX,
            ('c', 'd'),
            |level, j| match kind {
                0..=3 => carve_outs && level == 2 && (j as u64 ^ seed).is_multiple_of(3),
                4..=6 => level == 2,
                _ => false,
            },
            Role::Background,
        );
        for &t in std::iter::once(&top).chain(&below) {
            let apps = rest.min(APPS_PER_TENANT);
            l.tenants[t].apps = apps;
            rest -= apps;
        }
        tree += 1;
    }
    l
}

/// The applications in the subtree of each tenant (itself included), by index.
pub(super) fn subtree_apps(tenants: &[TenantSpec]) -> Vec<usize> {
    let mut totals: Vec<usize> = tenants.iter().map(|t| t.apps).collect();
    let index: BTreeMap<&str, usize> = tenants
        .iter()
        .enumerate()
        .map(|(i, t)| (t.owns.as_str(), i))
        .collect();
    // Children come after their parents: add each tenant's total to its parent, deepest first.
    for i in (1..tenants.len()).rev() {
        let parent = index[tenants[i].namespace.as_str()];
        totals[parent] += totals[i];
    }
    totals
}
