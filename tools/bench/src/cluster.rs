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

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Value, json};

/// Applications per tenant (the last tenant of the cluster may hold fewer).
pub const APPS_PER_TENANT: usize = 20;
/// The measured pool's root tenant, and the namespace it owns.
pub const POOL_TENANT: &str = "pool";
pub const POOL_NAMESPACE: &str = "tenant-pool";
/// The bounded sub-tenant beside the pool's members: a carve-out.
#[cfg(test)]
pub const CARVE_OUT_NAMESPACE: &str = "tenant-pool-carve";
pub const ROOT_NAMESPACE: &str = "tenant-root";
/// Level-2 tenants of the pool (the rest of its tenants are level 3, spread over these).
const POOL_FAN_OUT: usize = 25;
/// The largest background tree, in tenants.
const MAX_TREE: u64 = 30;

/// The request subject: a VMInstance.
pub const SUBJECT_KIND: &str = "VMInstance";
/// CREATE: a new u1.medium VM in the pool's deepest namespace.
pub const CREATE_NAME: &str = "vm-new";
/// UPDATE: the pool's first application, a u1.medium VM in the pool root's namespace, grows
/// to a u1.large: the pool is summed.
pub const UPDATE_NAME: &str = "vm0";

const VM_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/vm-instance.values.yaml");
const DISK_DEFAULTS: &str = include_str!("../../../test_data/reference/values/vm-disk.values.yaml");
const POSTGRES_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/postgres.values.yaml");
const REDIS_DEFAULTS: &str = include_str!("../../../test_data/reference/values/redis.values.yaml");
const KUBERNETES_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/kubernetes.values.yaml");
const TENANT_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/tenant.values.yaml");

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

fn yaml(text: &str) -> Value {
    let v = serde_yaml::Value::deserialize(serde_yaml::Deserializer::from_str(text))
        .expect("chart values parse");
    serde_json::to_value(v).expect("chart values are JSON")
}

/// `base` with `overrides` merged in, object by object.
fn merged(base: &Value, overrides: Value) -> Value {
    let mut out = base.clone();
    merge(&mut out, overrides);
    out
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Vm,
    Disk,
    Postgres,
    Redis,
    Kubernetes,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Vm => "VMInstance",
            Kind::Disk => "VMDisk",
            Kind::Postgres => "Postgres",
            Kind::Redis => "Redis",
            Kind::Kubernetes => "Kubernetes",
        }
    }

    /// The application's name: short, unique in the cluster.
    fn app_name(self, n: usize) -> String {
        match self {
            Kind::Vm => format!("vm{n}"),
            Kind::Disk => format!("disk{n}"),
            Kind::Postgres => format!("pg{n}"),
            Kind::Redis => format!("redis{n}"),
            Kind::Kubernetes => format!("k8s{n}"),
        }
    }
}

/// The kinds of every 20 applications of a tenant: 8 VMInstance, 4 VMDisk, 4 Postgres,
/// 2 Redis, 2 Kubernetes.
const PATTERN: [Kind; 20] = {
    use Kind::*;
    [
        Vm, Disk, Postgres, Vm, Redis, Disk, Vm, Kubernetes, Postgres, Vm, Disk, Vm, Postgres,
        Redis, Vm, Disk, Vm, Postgres, Kubernetes, Vm,
    ]
};

const SSH_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq0dGVuYW50LXJlc2VydmF0aW9uLXBvbGljeS1iZW5jaA operator@workstation";
const CLOUD_INIT: &str = "#cloud-config\npackages:\n  - qemu-guest-agent\nruncmd:\n  - systemctl enable --now qemu-guest-agent\n";

/// The chart defaults, parsed once.
pub struct Defaults {
    vm: Value,
    disk: Value,
    postgres: Value,
    redis: Value,
    kubernetes: Value,
    tenant: Value,
}

impl Defaults {
    pub fn load() -> Defaults {
        Defaults {
            vm: yaml(VM_DEFAULTS),
            disk: yaml(DISK_DEFAULTS),
            postgres: yaml(POSTGRES_DEFAULTS),
            redis: yaml(REDIS_DEFAULTS),
            kubernetes: yaml(KUBERNETES_DEFAULTS),
            tenant: yaml(TENANT_DEFAULTS),
        }
    }

    /// The values of the `n`th application of `kind`.
    fn values(&self, kind: Kind, n: usize, variant: Variant) -> Value {
        match kind {
            Kind::Vm => self.vm_values(n, variant),
            Kind::Disk => self.disk_values(n, variant),
            Kind::Postgres => self.postgres_values(n, variant),
            Kind::Redis => self.redis_values(n, variant),
            Kind::Kubernetes => self.kubernetes_values(n, variant),
        }
    }

    /// VM `n`; vm0 (the UPDATE subject) is a u1.medium in both variants.
    pub fn vm_values(&self, n: usize, variant: Variant) -> Value {
        const TYPES: [&str; 7] = [
            "u1.medium",
            "u1.large",
            "u1.xlarge",
            "cx1.large",
            "m1.large",
            "u1.small",
            "",
        ];
        let instance_type = match variant {
            Variant::Same => TYPES[(n / 2) % TYPES.len()],
            // Sized by its values, its memory its own; vm0 alone by a type.
            Variant::Distinct if n == 0 => "u1.medium",
            Variant::Distinct => "",
        };
        let mut o = json!({
            "instanceType": instance_type,
            "systemDisk": {"image": "ubuntu", "storage": "20Gi"},
            "subnets": [{"name": "default"}],
            "sshKeys": [SSH_KEY],
            "cloudInit": CLOUD_INIT,
        });
        if instance_type.is_empty() {
            let memory = match variant {
                Variant::Same => format!("{}Gi", 2 + 2 * (n % 4)),
                Variant::Distinct => format!("{}Mi", 2048 + n),
            };
            o["resources"] = json!({"cpu": format!("{}", 1 + n % 4), "memory": memory});
        }
        if variant == Variant::Same && n % 40 == 38 {
            o["instanceType"] = json!("gn1.xlarge");
            o["gpus"] = json!([{"name": "nvidia.com/AD102GL_L40S"}]);
        }
        merged(&self.vm, o)
    }

    fn disk_values(&self, n: usize, variant: Variant) -> Value {
        const SIZES: [&str; 4] = ["10Gi", "20Gi", "50Gi", "100Gi"];
        let storage = match variant {
            Variant::Same => SIZES[n % SIZES.len()].to_string(),
            Variant::Distinct => format!("{}Mi", 10240 + n),
        };
        merged(
            &self.disk,
            json!({"source": {"image": {"name": "ubuntu"}}, "storage": storage,
                   "storageClass": "replicated"}),
        )
    }

    fn postgres_values(&self, n: usize, variant: Variant) -> Value {
        const PRESETS: [&str; 5] = ["t1.micro", "c1.small", "u1.medium", "s1.large", "c1.medium"];
        const SIZES: [&str; 4] = ["10Gi", "20Gi", "50Gi", "100Gi"];
        let size = match variant {
            Variant::Same => SIZES[n % SIZES.len()].to_string(),
            Variant::Distinct => format!("{}Mi", 10240 + n),
        };
        let mut o = json!({
            "replicas": 1 + n % 3,
            "resourcesPreset": PRESETS[n % PRESETS.len()],
            "size": size,
            "users": {"app": {"password": format!("pw-{n:08x}")}, "readonly": {}},
            "databases": {"app": {"roles": {"admin": ["app"], "readonly": ["readonly"]}, "extensions": ["pg_trgm"]}},
            "backup": {"enabled": n.is_multiple_of(2), "schedule": "0 2 * * *", "destinationPath": format!("s3://backups/pg-{n}/")},
        });
        if n % 9 == 4 {
            o["resources"] = json!({"cpu": "2", "memory": "4Gi"});
        }
        merged(&self.postgres, o)
    }

    fn redis_values(&self, n: usize, variant: Variant) -> Value {
        let size = match variant {
            Variant::Same => ["1Gi", "2Gi", "5Gi"][n % 3].to_string(),
            Variant::Distinct => format!("{}Mi", 1024 + n),
        };
        let preset = ["t1.nano", "t1.small"][n % 2];
        merged(
            &self.redis,
            json!({"replicas": 2 + n % 2, "resourcesPreset": preset, "size": size}),
        )
    }

    fn kubernetes_values(&self, n: usize, variant: Variant) -> Value {
        let groups = match (variant, n % 3) {
            // The chart's implicit md0 (whenEmpty).
            (Variant::Same, 0) => json!({}),
            (Variant::Same, 1) => {
                json!({"md0": {"minReplicas": 1, "maxReplicas": 3 + n % 5, "instanceType": "u1.large",
                               "diskSize": "50Gi", "roles": ["ingress-nginx"]}})
            }
            (Variant::Same, _) => json!({
                "md0": {"minReplicas": 1, "maxReplicas": 4, "instanceType": "u1.xlarge", "diskSize": "40Gi", "roles": ["ingress-nginx"]},
                "md1": {"minReplicas": 0, "maxReplicas": 2, "instanceType": "", "diskSize": "100Gi",
                        "resources": {"cpu": "4", "memory": "8Gi"}, "roles": []},
            }),
            (Variant::Distinct, _) => {
                json!({"md0": {"minReplicas": 1, "maxReplicas": 3 + n % 5, "instanceType": "u1.large",
                               "diskSize": format!("{}Mi", 20480 + n), "roles": ["ingress-nginx"]}})
            }
        };
        merged(
            &self.kubernetes,
            json!({
                "nodeGroups": groups,
                "host": format!("k8s-{n}.example.org"),
                "addons": {"certManager": {"enabled": true}, "ingressNginx": {"enabled": n % 2 == 1}},
            }),
        )
    }
}

/// A stored HelmRelease as the API server holds it: with the metadata the API server and
/// Flux set, and the chart spec and status a release carries (what the host's field masks
/// prune, and what the API server still sends).
fn served(mut release: Value, i: usize) -> Value {
    let metadata = release["metadata"].as_object_mut().expect("metadata");
    metadata.insert(
        "uid".into(),
        json!(format!("3f0c{:04x}-8d1e-4c5b-9a7e-2b6d{i:08x}", i & 0xffff)),
    );
    metadata.insert(
        "resourceVersion".into(),
        json!(format!("{}", 1_048_576 + i * 7)),
    );
    metadata.insert("generation".into(), json!(1 + i % 4));
    metadata.insert("creationTimestamp".into(), json!("2026-11-30T09:41:27Z"));
    metadata.insert("finalizers".into(), json!(["finalizers.fluxcd.io"]));
    metadata.insert("annotations".into(), json!({}));
    metadata.insert("managedFields".into(), json!([]));
    release["spec"]["interval"] = json!("5m");
    release["spec"]["chart"]["spec"]["version"] = json!(">= 0.0.0-0");
    release["spec"]["chart"]["spec"]["sourceRef"] =
        json!({"kind": "HelmRepository", "name": "cozystack-apps", "namespace": "cozy-public"});
    release["spec"]["install"] = json!({"remediation": {"retries": -1}});
    release["spec"]["upgrade"] = json!({"remediation": {"retries": -1}});
    release
}

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
struct Layout {
    tenants: Vec<TenantSpec>,
}

impl Layout {
    fn add(&mut self, parent: usize, name: String, bounded: bool, role: Role) -> usize {
        let p = &self.tenants[parent];
        let (namespace, level) = (p.owns.clone(), p.level + 1);
        let owns = if namespace == ROOT_NAMESPACE {
            format!("tenant-{name}")
        } else {
            format!("{namespace}-{name}")
        };
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
fn quota(apps: usize) -> Value {
    let n = apps.max(1);
    json!({"cpu": format!("{}", 64 * n + 64), "memory": format!("{}Gi", 256 * n + 256),
           "storage": format!("{}Gi", 512 * n + 512)})
}

/// Lays out the tenants of `shape`: the root, the measured pool, the carve-out when the
/// cluster has room for it, then the background trees; every tenant's application count.
fn layout(shape: Shape) -> Layout {
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
fn subtree_apps(tenants: &[TenantSpec]) -> Vec<usize> {
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
    let settings = test_kit::deploy_settings();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashSet};
    use tenant_reservation_policy::cluster::{Lookup, Source, parse_applications};
    use tenant_reservation_policy::validate_payload;

    fn shape(cluster: usize, pool: usize, variant: Variant) -> Shape {
        Shape {
            cluster,
            pool,
            variant,
        }
    }

    #[test]
    fn the_cluster_holds_its_applications_in_trees_one_to_three_deep() {
        let d = Defaults::load();
        for (cluster, pool) in [(1000, 20), (1000, 1000), (3000, 400)] {
            let c = generate(shape(cluster, pool, Variant::Same), &d);
            assert_eq!(c.apps(), cluster);
            let hrs = c
                .objects
                .iter()
                .filter(|o| o["kind"] == "HelmRelease")
                .count();
            assert_eq!(hrs, cluster + c.tenants.len());
            assert!(c.tenants.iter().all(|t| t.apps <= APPS_PER_TENANT));
            assert!(c.tenants.iter().all(|t| t.level <= 3));
            // Every namespace is owned by exactly one tenant, named as the chart names it.
            let owned: HashSet<&str> = c.tenants.iter().map(|t| t.owns.as_str()).collect();
            assert_eq!(owned.len(), c.tenants.len());
            assert!(c.tenants[1..].iter().all(|t| !t.name.contains('-')));
            assert!(
                c.tenants[1..]
                    .iter()
                    .all(|t| owned.contains(t.namespace.as_str()))
            );
            let pool_apps: usize = c
                .tenants
                .iter()
                .filter(|t| matches!(t.role, Role::Pool | Role::Member))
                .map(|t| t.apps)
                .sum();
            assert_eq!(pool_apps, pool);
            assert_eq!(c.pool_mix.values().sum::<usize>(), pool);
        }
        let c = generate(shape(10_000, 1000, Variant::Same), &d);
        assert_eq!(c.levels().iter().filter(|&&n| n > 0).count(), 3);
        let background: Vec<&TenantSpec> = c
            .tenants
            .iter()
            .filter(|t| t.role == Role::Background)
            .collect();
        assert!(background.iter().any(|t| t.bounded && t.level == 1));
        assert!(background.iter().any(|t| t.bounded && t.level == 2));
        assert!(background.iter().any(|t| !t.bounded));
        assert_eq!(c.tenant_count(), 500);
    }

    #[test]
    fn the_pool_is_the_same_objects_in_every_cluster() {
        let d = Defaults::load();
        let pool_objects = |cluster| {
            let c = generate(shape(cluster, 100, Variant::Distinct), &d);
            let mut v: Vec<String> = c
                .objects
                .iter()
                .filter(|o| {
                    o["metadata"]["namespace"]
                        .as_str()
                        .is_some_and(|ns| c.pool_namespaces.contains(ns))
                })
                .map(|o| o.to_string())
                .collect();
            v.sort();
            (v, c.create, c.update)
        };
        let small = pool_objects(1000);
        assert_eq!(small.0.len(), 100 + 5); // 4 members and the carve-out live there too
        assert_eq!(small, pool_objects(5000));
    }

    /// The policy's own walk: the namespaces it lists one by one are the pool's (all of them,
    /// holding exactly `pool` applications, when they are few; the first
    /// `NAMESPACE_LISTS`, then one list of every application, when more); the carve-out is
    /// never listed; both requests are admitted.
    #[test]
    fn the_policys_walk_reads_exactly_the_pool() {
        let d = Defaults::load();
        for (cluster, pool) in [(1000, 20), (2000, 1000), (1000, 1000)] {
            for variant in [Variant::Same, Variant::Distinct] {
                let c = generate(shape(cluster, pool, variant), &d);
                let fixture = test_kit::Fixture::new(c.objects.clone());
                for payload in [&c.create, &c.update] {
                    fixture.forget_calls();
                    let verdict = validate_payload(payload, &fixture);
                    assert!(verdict.allowed, "{:?}", verdict.message);
                    let listed: BTreeSet<String> = fixture
                        .calls()
                        .into_iter()
                        .filter_map(|l| match l {
                            Lookup::Applications { namespace } => Some(namespace),
                            _ => None,
                        })
                        .collect();
                    assert!(!listed.contains(CARVE_OUT_NAMESPACE));
                    // A pool of more namespaces: the first ones one by one, the rest from one
                    // list of every application.
                    if c.pool_namespaces.len() > tenant_reservation_policy::NAMESPACE_LISTS {
                        assert_eq!(listed.len(), tenant_reservation_policy::NAMESPACE_LISTS);
                        assert!(listed.is_subset(&c.pool_namespaces));
                        let broad = fixture
                            .calls()
                            .iter()
                            .filter(|l| **l == Lookup::AllApplications)
                            .count();
                        assert_eq!(broad, 1, "{cluster}/{pool}");
                        continue;
                    }
                    assert_eq!(listed, c.pool_namespaces, "{cluster}/{pool}");
                    let mut apps = 0;
                    for namespace in &listed {
                        let lookup = Lookup::Applications {
                            namespace: namespace.clone(),
                        };
                        let bytes = serde_json::to_vec(&fixture.list_value(&lookup, None)).unwrap();
                        apps += parse_applications(&bytes, |_| None)
                            .unwrap()
                            .iter()
                            .filter(|a| &*a.kind != "Tenant")
                            .count();
                    }
                    assert_eq!(apps, pool, "{cluster}/{pool}");
                    // The tenants above: read by name, one per level.
                    let tenants = fixture
                        .sources()
                        .iter()
                        .filter(|s| **s == Source::Tenant)
                        .count();
                    assert!((2..=4).contains(&tenants), "{tenants}");
                }
            }
        }
    }

    /// In the distinct variant no two applications of a kind serve the same values once
    /// pruned to the masks the policy asks for.
    #[test]
    fn distinct_values_differ_in_what_the_policy_reads() {
        let d = Defaults::load();
        let count_distinct = |variant| {
            let c = generate(shape(1000, 1000, variant), &d);
            let fixture = test_kit::Fixture::new(c.objects.clone());
            assert!(validate_payload(&c.create, &fixture).allowed);
            let masks = fixture
                .calls()
                .iter()
                .zip(fixture.masks_asked())
                .find(|(l, _)| l.source() == Source::Applications)
                .map(|(_, m)| m)
                .unwrap();
            let mut distinct = HashSet::new();
            let mut apps = 0;
            for namespace in &c.pool_namespaces {
                let lookup = Lookup::Applications {
                    namespace: namespace.clone(),
                };
                let list = fixture.list_value(&lookup, Some(&masks));
                for item in list["items"].as_array().unwrap() {
                    let kind = item["metadata"]["labels"]["apps.cozystack.io/application.kind"]
                        .as_str()
                        .unwrap();
                    if kind != "Tenant" {
                        apps += 1;
                        distinct.insert((kind.to_string(), item["spec"]["values"].to_string()));
                    }
                }
            }
            (apps, distinct.len())
        };
        assert_eq!(count_distinct(Variant::Distinct), (1000, 1000));
        let (apps, same) = count_distinct(Variant::Same);
        assert_eq!(apps, 1000);
        assert!(same < 250, "{same} distinct of 1000");
    }
}
