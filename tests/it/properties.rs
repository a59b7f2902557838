//! Properties of the policy over generated inputs, against the real Cozystack definitions:
//!
//! - charges are additive: the charge of a sum is the sum of the charges;
//! - an update that shrinks every key is accepted, whatever the pool holds;
//! - admitting writes one after another matches a model of the pool arithmetic, never leaves
//!   a pool that started within budget over it, and admitting A then B is admitting A + B;
//! - quantities survive parse -> canonical -> parse in both notations;
//! - the verdict does not depend on the order in which the cluster lists its objects.
//!
//! Case counts are kept moderate (64-256) so that `cargo test` stays fast on two cores.

use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};
use tenant_reservation_policy::Resources;
use tenant_reservation_policy::quantity::{Notation, Quantity};
use tenant_reservation_policy::settings::Settings;
use tenant_reservation_policy::validate_payload;
use tenant_reservation_policy::{Context, Verdict};
use test_kit::{self, Fixture, application, payload, tenant};

const NANO: i128 = 1_000_000_000;
const MI: i128 = 1 << 20;

// ---- helpers ---------------------------------------------------------------------------

/// The kinds these properties write; the cluster holds only their definitions, and only the
/// instance types the generators name (an unoptimised test build spends most of its time
/// reading the full lists otherwise).
const KINDS: &[&str] = &[
    "VMDisk",
    "VMInstance",
    "Postgres",
    "MariaDB",
    "Redis",
    "RabbitMQ",
    "Qdrant",
    "KubernetesNodes",
    "Kubernetes",
    "Tenant",
];
const INSTANCE_TYPES: &[&str] = &[
    "u1.nano",
    "u1.small",
    "u1.medium",
    "u1.large",
    "u1.2xlarge",
    "cx1.large",
    "m1.xlarge",
    "gn1.2xlarge",
];

/// The definitions and instance types, and their lists built and serialised once.
fn lists() -> &'static test_kit::Trimmed {
    static LISTS: OnceLock<test_kit::Trimmed> = OnceLock::new();
    LISTS.get_or_init(|| test_kit::Trimmed::new(KINDS, INSTANCE_TYPES))
}

/// A cluster like `test_kit::cluster` whose definition and instance type lists are served
/// from [`lists`]: only the schemas and the applications' lists are made per request.
fn cluster(objects: Vec<Value>) -> Fixture {
    lists().cluster(objects)
}

fn gpu_settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| {
        serde_json::from_value(json!({"gpuDeviceClasses": {"nvidia.com/GA102GL_A10": "a10"}}))
            .expect("valid settings")
    })
}

thread_local! {
    /// One context for every charge: definitions read and prepared once per test thread.
    static CHARGING: Context<'static> = {
        let empty: &'static Fixture = Box::leak(Box::new(cluster(Vec::new())));
        Context::new(gpu_settings(), empty).expect("valid settings")
    };
}

/// What one application of `kind` with `spec` reserves, by the real definition.
fn charge(kind: &str, spec: &Value) -> Result<Resources, String> {
    CHARGING.with(|context| {
        context
            .charge_kind(kind, spec)
            .map(Option::unwrap_or_default)
    })
}

fn sum(parts: &[&Resources]) -> Resources {
    let mut total = Resources::new();
    for part in parts {
        total.add_all(part).expect("test sums fit");
    }
    total
}

fn q(nanos: i128) -> Quantity {
    Quantity::from_nanos(nanos)
}

/// A quantity as a tenant might write it: either canonical form, raw nano-units, or a JSON
/// number when it is a small whole number.
fn written(nanos: i128, style: u8) -> Value {
    let quantity = q(nanos);
    match style % 4 {
        0 => json!(quantity.to_canonical(Notation::Decimal)),
        1 => json!(quantity.to_canonical(Notation::Binary)),
        2 => json!(format!("{nanos}n")),
        _ if nanos % NANO == 0 && nanos / NANO < (1 << 53) => json!((nanos / NANO) as u64),
        _ => json!(quantity.to_canonical(Notation::Decimal)),
    }
}

/// Storage-like sizes in nano-units: whole Mi, whole units, or any nano count.
fn size() -> impl Strategy<Value = i128> {
    prop_oneof![
        (0i128..(1 << 24)).prop_map(|mi| mi * MI * NANO),
        (0i128..(1 << 40)).prop_map(|units| units * NANO),
        (0i128..10i128.pow(24)),
    ]
}

/// Sizes of the order of a pool's budget: whole Gi, whole Mi, or any nano count, to 256Gi.
fn small_size() -> impl Strategy<Value = i128> {
    prop_oneof![
        (0i128..256).prop_map(|gi| gi * 1024 * MI * NANO),
        (0i128..(256 * 1024)).prop_map(|mi| mi * MI * NANO),
        (0i128..(256 << 30) * NANO),
    ]
}

/// CPU-like sizes: millicores mostly, sometimes nano-cores; never an explicit 0, which a
/// cozy-lib resources map refuses (it would render a container without a limit).
fn cpu() -> impl Strategy<Value = i128> {
    prop_oneof![
        (1i128..100_000).prop_map(|m| m * 1_000_000),
        (1i128..10i128.pow(15)),
    ]
}

fn preset() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "t1.nano",
        "t1.micro",
        "c1.large",
        "s1.xlarge",
        "u1.medium",
        "m1.4xlarge",
        "small",
        "2xlarge",
    ])
}

fn instance_type() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "u1.nano",
        "u1.small",
        "u1.medium",
        "u1.2xlarge",
        "cx1.large",
        "m1.xlarge",
        "gn1.2xlarge",
    ])
}

/// A GPU entry as the VM charts read it: a device name (mapped to a10 in the settings, or
/// unknown), sometimes with a `count` or `class` the chart ignores.
fn gpu() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["nvidia.com/GA102GL_A10", "nvidia.com/unknown"]),
        prop::option::of(0u64..4),
        prop::option::of(prop::sample::select(vec!["a10", "l40s"])),
    )
        .prop_map(|(name, count, class)| {
            let mut entry = json!({"name": name});
            if let Some(count) = count {
                entry["count"] = json!(count);
            }
            if let Some(class) = class {
                entry["class"] = json!(class);
            }
            entry
        })
}

/// Explicit VM resources (whole cores, sockets, memory), an instance type, or both.
fn vm_spec() -> impl Strategy<Value = Value> {
    (
        prop::option::of((1u64..64, 1u64..4, size(), any::<u8>())),
        prop::option::of(instance_type()),
        prop::collection::vec(gpu(), 0..3),
    )
        .prop_map(|(resources, it, gpus)| {
            let mut spec = json!({"gpus": gpus});
            if let Some((cores, sockets, m, style)) = resources {
                spec["resources"] =
                    json!({"cpu": cores, "sockets": sockets, "memory": written(m, style)});
                spec["instanceType"] = json!("");
            }
            if let Some(it) = it {
                spec["instanceType"] = json!(it);
            }
            spec
        })
}

// ---- 1. the charge of a sum is the sum of the charges ----------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn two_disks_charge_what_one_disk_of_their_sum_does(
        a in size(), b in size(), sa in any::<u8>(), sb in any::<u8>(), ss in any::<u8>(),
    ) {
        let one = charge("VMDisk", &json!({"storage": written(a, sa)})).unwrap();
        let two = charge("VMDisk", &json!({"storage": written(b, sb)})).unwrap();
        let both = charge("VMDisk", &json!({"storage": written(a + b, ss)})).unwrap();
        prop_assert_eq!(sum(&[&one, &two]), both);
    }

    #[test]
    fn n_replicas_charge_n_times_one(
        n in 0u64..64,
        preset in preset(),
        resources in prop::option::of((cpu(), size(), any::<u8>(), any::<u8>())),
        storage in prop::option::of((size(), any::<u8>())),
        // The kinds whose chart renders `replicas` copies of one pod and nothing else (MariaDB
        // adds an exporter, Redis sentinels: their charges are not linear in replicas).
        kind in prop::sample::select(vec!["Postgres", "RabbitMQ", "Qdrant"]),
    ) {
        let mut spec = json!({"resourcesPreset": preset});
        if let Some((c, m, s1, s2)) = resources {
            spec["resources"] = json!({"cpu": written(c, s1), "memory": written(m, s2)});
        }
        if let Some((s, style)) = storage {
            spec["size"] = written(s, style);
        }
        spec["replicas"] = json!(1);
        let one = charge(kind, &spec).unwrap();
        spec["replicas"] = json!(n);
        let many = charge(kind, &spec).unwrap();
        prop_assert_eq!(many, one.scaled(n).unwrap());
    }

    #[test]
    fn a_worker_pool_charges_max_replicas_times_one_node(
        n in 0u64..200,
        vm in vm_spec(),
        disk in prop::option::of((size(), any::<u8>())),
    ) {
        let mut spec = vm;
        if let Some((s, style)) = disk {
            spec["diskSize"] = written(s, style);
        }
        spec["maxReplicas"] = json!(1);
        let one = charge("KubernetesNodes", &spec).unwrap();
        spec["maxReplicas"] = json!(n);
        prop_assert_eq!(charge("KubernetesNodes", &spec).unwrap(), one.scaled(n).unwrap());
    }

    #[test]
    fn gpu_lists_add_up(
        base in vm_spec(),
        first in prop::collection::vec(gpu(), 0..4),
        second in prop::collection::vec(gpu(), 0..4),
    ) {
        let with = |gpus: Vec<Value>| {
            let mut spec = base.clone();
            spec["gpus"] = json!(gpus);
            charge("VMInstance", &spec).unwrap()
        };
        let none = with(Vec::new());
        let joined = with(first.iter().chain(&second).cloned().collect());
        prop_assert_eq!(
            sum(&[&joined, &none]),
            sum(&[&with(first), &with(second)])
        );
    }

    #[test]
    fn node_groups_add_up(
        groups in prop::collection::btree_map(
            "[a-z][a-z0-9]{0,5}",
            (0u64..20, vm_spec(), prop::option::of((size(), any::<u8>()))),
            2..6,
        ),
        split in any::<prop::sample::Index>(),
    ) {
        let groups: Vec<(String, Value)> = groups
            .into_iter()
            .map(|(name, (replicas, vm, disk))| {
                let mut group = vm;
                group["maxReplicas"] = json!(replicas);
                if let Some((s, style)) = disk {
                    group["diskSize"] = written(s, style);
                }
                (name, group)
            })
            .collect();
        let at = 1 + split.index(groups.len() - 1);
        let cluster_of = |groups: &[(String, Value)]| {
            let map: serde_json::Map<String, Value> = groups.iter().cloned().collect();
            charge("Kubernetes", &json!({"nodeGroups": map})).unwrap()
        };
        // A group with no replicas charges nothing, so it leaves only the control plane.
        let control_plane = cluster_of(&[("idle".into(), json!({"maxReplicas": 0}))]);
        let all = cluster_of(&groups);
        let (left, right) = groups.split_at(at);
        prop_assert_eq!(
            sum(&[&all, &control_plane]),
            sum(&[&cluster_of(left), &cluster_of(right)])
        );
    }
}

// ---- pools ---------------------------------------------------------------------------------

/// A budget: each key bounded (maybe at zero) or not.
fn budget() -> impl Strategy<Value = Value> {
    (
        prop::option::of((0i128..64).prop_map(|u| u * NANO)),
        prop::option::of((0i128..128).prop_map(|g| g * 1024 * MI * NANO)),
        prop::option::of((0i128..1024).prop_map(|g| g * 1024 * MI * NANO)),
        prop::option::of((0i128..8).prop_map(|u| u * NANO)),
        prop::option::of((0i128..4).prop_map(|u| u * NANO)),
    )
        .prop_map(|(c, m, s, g, a10)| {
            let mut quota = serde_json::Map::new();
            let mut put = |key: &str, v: Option<i128>, notation| {
                if let Some(v) = v {
                    quota.insert(key.into(), json!(q(v).to_canonical(notation)));
                }
            };
            put("cpu", c, Notation::Decimal);
            put("memory", m, Notation::Binary);
            put("storage", s, Notation::Binary);
            put("gpuclass.cozystack.io/devices", g, Notation::Decimal);
            put("a10.gpuclass.cozystack.io/devices", a10, Notation::Decimal);
            Value::Object(quota)
        })
}

/// An application a tenant could have: a kind and its values.
fn app() -> impl Strategy<Value = (&'static str, Value)> {
    prop_oneof![
        (size(), any::<u8>())
            .prop_map(|(s, style)| ("VMDisk", json!({"storage": written(s, style)}))),
        vm_spec().prop_map(|spec| ("VMInstance", spec)),
        (
            0u64..4,
            preset(),
            (0i128..64).prop_map(|g| g * 1024 * MI * NANO)
        )
            .prop_map(|(r, p, s)| (
                "Postgres",
                json!({"replicas": r, "resourcesPreset": p, "size": written(s, 1)})
            )),
    ]
}

/// Pool `tenant-p` (budget `quota`), its unbounded child `tenant-p-c`, bounded children
/// (carve-outs) `tenant-p-k<i>`, and applications spread over the two member namespaces.
fn pool_objects(
    quota: &Value,
    carve_outs: &[Value],
    apps: &[(bool, &str, Value)],
    unevaluable: bool,
) -> Vec<Value> {
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "p", quota.clone()),
        tenant("tenant-p", "c", json!({})),
    ];
    for (i, q) in carve_outs.iter().enumerate() {
        objects.push(tenant("tenant-p", &format!("k{i}"), q.clone()));
    }
    for (i, (in_child, kind, spec)) in apps.iter().enumerate() {
        let ns = if *in_child { "tenant-p-c" } else { "tenant-p" };
        objects.push(application(kind, ns, &format!("app{i}"), spec.clone()));
    }
    if unevaluable {
        objects.push(application(
            "VMInstance",
            "tenant-p",
            "legacy",
            json!({"instanceType": "gone.large"}),
        ));
    }
    objects
}

fn gpu_settings_json(sibling_failure: bool) -> Value {
    json!({
        "siblingFailure": if sibling_failure { "warn" } else { "deny" },
        "gpuDeviceClasses": {"nvidia.com/GA102GL_A10": "a10"},
    })
}

// ---- 2. an update that shrinks every key is accepted ------------------------------------

/// An old spec and a new one that reserves no more on any key.
fn shrinking_update() -> impl Strategy<Value = (&'static str, Value, Value)> {
    prop_oneof![
        (
            (1u64..64, 1u64..64),
            1u64..4,
            (size(), size()),
            (0usize..4, 0usize..4),
            any::<u8>(),
        )
            .prop_map(|((c1, c2), sockets, (m1, m2), (g1, g2), style)| {
                let spec = |cores: u64, m: i128, gpus: usize| {
                    let gpus = vec![json!({"name": "nvidia.com/GA102GL_A10"}); gpus];
                    json!({"instanceType": "", "resources": {"cpu": cores, "sockets": sockets, "memory": written(m, style)}, "gpus": gpus})
                };
                (
                    "VMInstance",
                    spec(c1.max(c2), m1.max(m2), g1.max(g2)),
                    spec(c1.min(c2), m1.min(m2), g1.min(g2)),
                )
            }),
        (0u64..5, 0u64..5, size(), size(), preset(), any::<bool>()).prop_map(
            |(r1, r2, s1, s2, preset, relabel)| {
                let mut new = json!({"replicas": r1.min(r2), "resourcesPreset": preset, "size": written(s1.min(s2), 1)});
                if relabel {
                    new["external"] = json!(true);
                }
                (
                    "Postgres",
                    json!({"replicas": r1.max(r2), "resourcesPreset": preset, "size": written(s1.max(s2), 0)}),
                    new,
                )
            }
        ),
        (0u64..30, 0u64..30, instance_type(), prop::collection::vec(gpu(), 0..2)).prop_map(
            |(r1, r2, it, gpus)| {
                let spec = |r: u64| json!({"maxReplicas": r, "instanceType": it, "gpus": gpus.clone()});
                ("KubernetesNodes", spec(r1.max(r2)), spec(r1.min(r2)))
            }
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn an_update_that_shrinks_every_key_is_accepted(
        quota in budget(),
        carve_outs in prop::collection::vec(budget(), 0..3),
        apps in prop::collection::vec((any::<bool>(), app()), 0..5),
        unevaluable in any::<bool>(),
        warn in any::<bool>(),
        in_child in any::<bool>(),
        (kind, old, new) in shrinking_update(),
    ) {
        let apps: Vec<(bool, &str, Value)> =
            apps.into_iter().map(|(c, (k, v))| (c, k, v)).collect();
        let ns = if in_child { "tenant-p-c" } else { "tenant-p" };
        let mut objects = pool_objects(&quota, &carve_outs, &apps, unevaluable);
        objects.push(application(kind, ns, "subject", old.clone()));
        let k8s = cluster(objects);
        let v = validate_payload(
            &payload("UPDATE", kind, ns, "subject", new.clone(), Some(old.clone()), gpu_settings_json(warn)),
            &k8s,
        );
        prop_assert!(v.allowed, "{kind} {old} -> {new} in {quota}: {v:?}");
    }
}

// ---- 3. sequential admission matches the pool arithmetic ---------------------------------

/// Does `charge` fit in the pool, by the README's rule: for every bounded key it grows,
/// `reserved + charge <= budget - carved out`.
fn model_fits(
    budget: &Value,
    carve_outs: &[Value],
    reserved: &Resources,
    charge: &Resources,
) -> bool {
    budget
        .as_object()
        .expect("a budget is a map")
        .iter()
        .all(|(key, limit)| {
            let wanted = charge.get(key);
            if !wanted.is_positive() {
                return true;
            }
            let limit = Quantity::parse(limit.as_str().unwrap()).unwrap().nanos();
            let carved: i128 = carve_outs
                .iter()
                .filter_map(|c| c.get(key))
                .map(|v| Quantity::parse(v.as_str().unwrap()).unwrap().nanos())
                .sum();
            reserved.get(key).nanos() + wanted.nanos() <= limit - carved
        })
}

fn within(budget: &Value, carve_outs: &[Value], reserved: &Resources) -> bool {
    model_fits(budget, carve_outs, &Resources::new(), reserved)
}

fn create_in(
    objects: &[Value],
    ns: &str,
    name: &str,
    kind: &str,
    spec: &Value,
    warn: bool,
) -> Verdict {
    validate_payload(
        &payload(
            "CREATE",
            kind,
            ns,
            name,
            spec.clone(),
            None,
            gpu_settings_json(warn),
        ),
        &cluster(objects.to_vec()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn sequential_admission_matches_the_model_and_never_overshoots(
        quota in budget(),
        carve_outs in prop::collection::vec(budget(), 0..3),
        existing in prop::collection::vec((any::<bool>(), app()), 0..4),
        writes in prop::collection::vec((any::<bool>(), app()), 1..6),
    ) {
        let existing: Vec<(bool, &str, Value)> =
            existing.into_iter().map(|(c, (k, v))| (c, k, v)).collect();
        let mut objects = pool_objects(&quota, &carve_outs, &existing, false);
        let mut reserved = Resources::new();
        for (_, kind, spec) in &existing {
            reserved.add_all(&charge(kind, spec).unwrap()).unwrap();
        }
        let started_within = within(&quota, &carve_outs, &reserved);
        for (i, (in_child, (kind, spec))) in writes.into_iter().enumerate() {
            let ns = if in_child { "tenant-p-c" } else { "tenant-p" };
            let name = format!("new{i}");
            let wanted = charge(kind, &spec).unwrap();
            let v = create_in(&objects, ns, &name, kind, &spec, false);
            let fits = model_fits(&quota, &carve_outs, &reserved, &wanted);
            prop_assert_eq!(v.allowed, fits, "{} {} with {:?} reserved in {}: {:?}", kind, spec, reserved, quota, v);
            if v.allowed {
                objects.push(application(kind, ns, &name, spec));
                reserved.add_all(&wanted).unwrap();
            }
        }
        if started_within {
            prop_assert!(within(&quota, &carve_outs, &reserved), "{:?} over {}", reserved, quota);
        }
    }

    #[test]
    fn admitting_a_then_b_is_admitting_a_plus_b(
        limit in (0i128..512).prop_map(|g| g * 1024 * MI * NANO),
        existing in prop::collection::vec(small_size(), 0..4),
        a in small_size(),
        b in small_size(),
        style in any::<u8>(),
    ) {
        let quota = json!({"storage": q(limit).to_canonical(Notation::Binary)});
        let disks: Vec<(bool, &str, Value)> = existing
            .iter()
            .map(|s| (false, "VMDisk", json!({"storage": written(*s, style)})))
            .collect();
        let mut objects = pool_objects(&quota, &[], &disks, false);
        let disk = |s: i128| json!({"storage": written(s, style / 3)});
        let both_at_once = create_in(&objects, "tenant-p", "ab", "VMDisk", &disk(a + b), false);
        let first = create_in(&objects, "tenant-p", "a", "VMDisk", &disk(a), false);
        let then = if first.allowed {
            objects.push(application("VMDisk", "tenant-p", "a", disk(a)));
            create_in(&objects, "tenant-p", "b", "VMDisk", &disk(b), false).allowed
        } else {
            false
        };
        // a <= a + b: when A + B fits, A alone fits too, and B after it.
        prop_assert_eq!(first.allowed && then, both_at_once.allowed);
    }
}

// ---- 4. quantities: parse -> canonical -> parse ------------------------------------------

fn suffix() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ])
        .prop_map(String::from),
        ("[eE]", "[+-]?", 0u32..40).prop_map(|(e, sign, n)| format!("{e}{sign}{n}")),
    ]
}

/// `<sign><digits>[.<digits>]<suffix>`, the grammar of Kubernetes quantities.
fn quantity_text() -> impl Strategy<Value = String> {
    (
        "[+-]?",
        "[0-9]{0,20}",
        prop::option::of("[0-9]{0,12}"),
        suffix(),
    )
        .prop_map(|(sign, int, frac, suffix)| match frac {
            Some(frac) => format!("{sign}{int}.{frac}{suffix}"),
            None => format!("{sign}{int}{suffix}"),
        })
}

fn round_trips(quantity: Quantity) -> Result<(), TestCaseError> {
    for notation in [Notation::Decimal, Notation::Binary] {
        let text = quantity.to_canonical(notation);
        prop_assert_eq!(
            Quantity::parse(&text),
            Ok(quantity),
            "{:?} {:?}",
            text,
            notation
        );
        prop_assert_eq!(
            Quantity::parse(&text).unwrap().to_canonical(notation),
            text.clone()
        );
        if quantity.nanos() >= 0 {
            prop_assert_eq!(Quantity::parse_non_negative(&text), Ok(quantity));
        }
    }
    Ok(())
}

/// `<mantissa><suffix>` by plain i128 arithmetic, for integer mantissas: the reference the
/// digit-by-digit parser must agree with. `None`: out of range.
fn reference(mantissa: i128, suffix: &str) -> Option<i128> {
    let (ten, two) = match suffix {
        "n" => (0, 0),
        "u" => (3, 0),
        "m" => (6, 0),
        "" => (9, 0),
        "k" => (12, 0),
        "M" => (15, 0),
        "G" => (18, 0),
        "T" => (21, 0),
        "P" => (24, 0),
        "E" => (27, 0),
        binary => (
            9,
            ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == binary)? as u32
                + 1,
        ),
    };
    mantissa
        .checked_mul(10i128.checked_pow(ten)?)?
        .checked_mul(1024i128.checked_pow(two)?)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_accepted_quantity_round_trips(text in quantity_text()) {
        if let Ok(quantity) = Quantity::parse(&text) {
            round_trips(quantity)?;
        }
    }

    #[test]
    fn every_representable_quantity_round_trips(nanos in (i128::MIN + 1)..=i128::MAX) {
        round_trips(q(nanos))?;
    }

    #[test]
    fn small_quantities_round_trip(nanos in -(10i128.pow(20))..10i128.pow(20)) {
        round_trips(q(nanos))?;
    }

    #[test]
    fn integer_quantities_match_plain_arithmetic(
        mantissa in prop_oneof![0i128..1_000_000, 0i128..i128::from(u64::MAX)],
        suffix in prop::sample::select(vec![
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ]),
    ) {
        let text = format!("{mantissa}{suffix}");
        match reference(mantissa, suffix) {
            Some(nanos) => prop_assert_eq!(Quantity::parse(&text), Ok(q(nanos)), "{}", text),
            None => prop_assert!(Quantity::parse(&text).is_err(), "{} parsed", text),
        }
    }

    #[test]
    fn a_decimal_point_moves_the_value(
        int in 0u64..1_000_000_000, frac in "[0-9]{1,9}", suffix in prop::sample::select(vec!["", "k", "M", "Gi"]),
    ) {
        // `<int>.<frac><suffix>` is `<int><frac>` of the suffix, over 10^len(frac).
        let whole = Quantity::parse(&format!("{int}{frac}{suffix}")).unwrap().nanos();
        let point = Quantity::parse(&format!("{int}.{frac}{suffix}")).unwrap().nanos();
        let scale = 10i128.pow(frac.len() as u32);
        // Rounded up below 1n, as Kubernetes does.
        prop_assert_eq!(point, (whole + scale - 1) / scale);
    }

    #[test]
    fn any_string_parses_or_is_refused_without_panicking(text in "\\PC{0,40}") {
        if let Ok(quantity) = Quantity::parse(&text) {
            round_trips(quantity)?;
        }
    }
}

// ---- 5. the verdict does not depend on the order of the cluster's lists --------------------

/// A tenant tree: each tenant's parent is an earlier one (or tenant-root).
#[derive(Debug, Clone)]
struct Tree {
    tenants: Vec<(usize, Value)>,
}

impl Tree {
    /// The namespace tenant `i` owns: 0 is tenant-root.
    fn owned(&self, i: usize) -> String {
        if i == 0 {
            return "tenant-root".into();
        }
        let parent = self.owned(self.tenants[i - 1].0);
        if parent == "tenant-root" {
            format!("tenant-t{i}")
        } else {
            format!("{parent}-t{i}")
        }
    }

    fn parent_of(&self, i: usize) -> String {
        self.owned(self.tenants[i - 1].0)
    }
}

fn tree() -> impl Strategy<Value = Tree> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            prop_oneof![Just(json!({})), budget()],
        ),
        1..6,
    )
    .prop_map(|raw| Tree {
        tenants: raw
            .into_iter()
            .enumerate()
            .map(|(i, (parent, quota))| (parent.index(i + 1), quota))
            .collect(),
    })
}

/// What the order-independence property writes.
#[derive(Debug, Clone)]
enum Write {
    App(&'static str, Value),
    Tenant(Value, Option<Value>),
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        3 => app().prop_map(|(kind, spec)| Write::App(kind, spec)),
        1 => (budget(), prop::option::of(budget()))
            .prop_map(|(new, old)| Write::Tenant(json!({"resourceQuotas": new}), old.map(|o| json!({"resourceQuotas": o})))),
    ]
}

fn scenario() -> impl Strategy<Value = (Tree, Vec<Value>, String, Write, bool)> {
    tree().prop_flat_map(|tree| {
        let n = tree.tenants.len() + 1;
        let stored = prop::collection::vec(
            (0..n, prop_oneof![4 => app(), 1 => Just(("VMInstance", json!({"instanceType": "gone.large"})))]),
            0..10,
        );
        (Just(tree), stored, 0..n, write(), any::<bool>()).prop_map(|(tree, stored, at, write, warn)| {
            let mut objects = vec![tenant("tenant-root", "root", json!({}))];
            for i in 1..=tree.tenants.len() {
                objects.push(tenant(&tree.parent_of(i), &format!("t{i}"), tree.tenants[i - 1].1.clone()));
            }
            for (j, (ns, (kind, spec))) in stored.into_iter().enumerate() {
                objects.push(application(kind, &tree.owned(ns), &format!("app{j}"), spec));
            }
            let ns = tree.owned(at);
            (tree, objects, ns, write, warn)
        })
    })
}

/// A verdict's message split at "; " and its warnings, each sorted.
fn parts(v: &Verdict) -> (Vec<String>, Vec<String>) {
    let mut message: Vec<String> = v
        .message
        .as_deref()
        .unwrap_or("")
        .replace("(siblingFailure: deny): ", "(siblingFailure: deny); ")
        .split("; ")
        .map(String::from)
        .collect();
    message.sort();
    let mut warnings = v.warnings.clone();
    warnings.sort();
    (message, warnings)
}

fn decide(objects: Vec<Value>, ns: &str, write: &Write, warn: bool) -> Verdict {
    let k8s = cluster(objects);
    let body = match write {
        Write::App(kind, spec) => payload(
            "CREATE",
            kind,
            ns,
            "subject",
            spec.clone(),
            None,
            gpu_settings_json(warn),
        ),
        Write::Tenant(new, old) => payload(
            if old.is_some() { "UPDATE" } else { "CREATE" },
            "Tenant",
            ns,
            "new",
            new.clone(),
            old.clone(),
            gpu_settings_json(warn),
        ),
    };
    validate_payload(&body, &k8s)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_verdict_does_not_depend_on_the_order_of_siblings(
        (scenario, order) in scenario().prop_flat_map(|s| {
            let objects = s.1.clone();
            (Just(s), Just(objects).prop_shuffle())
        }),
    ) {
        let (_tree, objects, ns, write, warn) = scenario;
        let first = decide(objects, &ns, &write, warn);
        let second = decide(order, &ns, &write, warn);
        prop_assert_eq!(first.allowed, second.allowed, "{:?} in {}: {:?} / {:?}", write, ns, first, second);
        // The parts of a message (and the warnings) name the objects in the order the host
        // lists them, which a real API server keeps stable; the set of parts must not change.
        prop_assert_eq!(parts(&first), parts(&second), "{:?} in {}", write, ns);
    }
}
