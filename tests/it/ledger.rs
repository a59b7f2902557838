//! The ledger: every pool's standing, on the same evaluation as the policy.

use serde_json::json;
use tenant_reservation_policy::ledger::ledger;

use crate::common::*;

#[test]
fn the_ledger_shows_each_pool_and_key_with_its_holders() {
    let k8s = foo_pool(vec![
        tenant("tenant-foo", "dev", json!({"memory": "4Gi"})),
        application("VMDisk", "tenant-foo-dev", "d", json!({"storage": "5Gi"})),
    ]);
    let ledger = ledger(&Settings::default(), &k8s, 2).unwrap();
    let lines: Vec<(String, String, String, String, String)> = ledger
        .pools
        .iter()
        .map(|l| {
            (
                l.standing.pool.clone(),
                l.standing.key.clone(),
                l.show(l.standing.budget),
                l.show(l.standing.reserved),
                l.show(l.available),
            )
        })
        .collect();
    let row = |p: &str, k: &str, b: &str, r: &str, a: &str| {
        (p.into(), k.into(), b.into(), r.into(), a.into())
    };
    assert_eq!(
        lines,
        [
            row("tenant-foo", "cpu", "16", "4", "12"),
            row("tenant-foo", "memory", "32Gi", "16Gi", "12Gi"),
            row("tenant-foo", "storage", "100Gi", "5Gi", "95Gi"),
            row("tenant-foo-dev", "memory", "4Gi", "0", "4Gi"),
        ]
    );
    let memory = &ledger.pools[1];
    assert_eq!(
        (
            memory.standing.carved.by,
            memory.show(memory.standing.carved.total)
        ),
        (1, "4Gi".into())
    );
    assert_eq!(
        memory.standing.largest,
        [
            (q("8Gi"), "VMInstance tenant-foo/vm3".to_string()),
            (q("4Gi"), "VMInstance tenant-foo/vm1".to_string()),
        ]
    );
    assert_eq!(ledger.pools[2].namespaces, ["tenant-foo", "tenant-foo-dev"]);
    // One read of every application, after the definitions: no walk, no tenant by name.
    assert_eq!(
        k8s.calls()[..2],
        [Lookup::Definitions, Lookup::AllApplications]
    );
    assert!(!k8s.sources().contains(&Source::Tenant));
}

// ---- the ledger agrees with the policy ---------------------------------------------------
//
// For every application write (the scenarios of test_data/scenarios/ and a generated set),
// with the ledger of the cluster as it stands (`before`, every holder kept) and the ledger
// of the cluster with the write applied (`after`: it gives the write's new charge, from the
// same evaluation, independently of the verdict):
//
// - the policy refuses the write for its size ("exceeds pool") exactly when, on some key k
//   the write grows in the pool its namespace belongs to for k, growth_k > available_k;
// - each of the policy's records carries that line's budget and carve-outs, what the line
//   reserves less the write's own stored version, and the same growth and fit.
//
// Growth is the policy's: the new charge less the old one on UPDATE (the stored version),
// the whole new charge on CREATE. A CREATE of an application already stored (the audit
// scanner's) replaces it: the headroom it sees is the line's plus what the stored version
// holds, so the test compares `new - held` with the unclamped `budget - carved - reserved`.
//
// Writes refused for another reason (the subject cannot be evaluated, siblingFailure: deny,
// an unreadable budget, a growOnly key shrinking) are not compared but counted, and where
// the ledger can show the reason, the test requires it to.

pub(crate) mod agreement {
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::OnceLock;

    use proptest::prelude::*;
    use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRng, TestRunner};
    use serde::Deserialize;
    use serde_json::{Value, json};
    use tenant_reservation_policy::ledger::{Ledger, PoolLine, ledger};
    use tenant_reservation_policy::quantity::Quantity;
    use tenant_reservation_policy::settings::Settings;
    use tenant_reservation_policy::{Verdict, validate_payload};
    use test_kit::{self, Fixture, application, module, release, tenant};

    /// What one case came to.
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
    pub enum Outcome {
        /// Compared key by key: admitted, or refused for its size.
        Admitted,
        Refused,
        /// Not compared, by reason.
        Excluded(&'static str),
    }

    /// The counts of a run, by outcome, and how many compared cases sat exactly on a
    /// boundary (growth = available on some key).
    #[derive(Debug, Default)]
    pub struct Counts {
        pub outcomes: BTreeMap<Outcome, usize>,
        pub boundary: usize,
        /// Compared cases that grow no key of any pool (outside every pool, exempt, shrinking).
        pub no_key: usize,
        pub keys_compared: usize,
    }

    impl Counts {
        fn total(&self) -> usize {
            self.outcomes.values().sum()
        }

        fn of(&self, outcome: &Outcome) -> usize {
            self.outcomes.get(outcome).copied().unwrap_or(0)
        }
    }

    /// One application write against one cluster.
    #[derive(Debug, Clone)]
    pub struct Case {
        pub objects: Vec<Value>,
        pub settings: Value,
        /// The admission request (`request` of an AdmissionReview).
        pub request: Value,
    }

    struct Subject {
        operation: String,
        kind: String,
        namespace: String,
        name: String,
        spec: Value,
    }

    impl Subject {
        fn of(request: &Value) -> Subject {
            let object = &request["object"];
            let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
            let namespace = match text(&request["namespace"]) {
                ns if ns.is_empty() => text(&object["metadata"]["namespace"]),
                ns => ns,
            };
            let name = match text(&object["metadata"]["name"]) {
                name if name.is_empty() => text(&request["name"]),
                name => name,
            };
            Subject {
                operation: text(&request["operation"]),
                kind: text(&request["kind"]["kind"]),
                namespace,
                name,
                spec: object.get("spec").cloned().unwrap_or(Value::Null),
            }
        }

        fn label(&self) -> String {
            format!("{} {}/{}", self.kind, self.namespace, self.name)
        }
    }

    /// `objects` with the subject stored as the write leaves it: its HelmRelease's values
    /// replaced, or a new HelmRelease named by its kind's release prefix.
    fn apply(objects: &[Value], subject: &Subject) -> Vec<Value> {
        // The cluster's own definition of the kind, else the reference one (the generated
        // cases keep the definitions apart).
        let reference = test_kit::definitions();
        let prefix = objects
            .iter()
            .chain(&reference)
            .find(|o| {
                o["kind"] == "ApplicationDefinition"
                    && o["spec"]["application"]["kind"] == *subject.kind
            })
            .and_then(|d| d["spec"]["release"]["prefix"].as_str())
            .unwrap_or_default()
            .to_string();
        let release_name = format!("{prefix}{}", subject.name);
        let mut after = objects.to_vec();
        let stored = after.iter_mut().find(|o| {
            o["kind"] == "HelmRelease"
                && o["metadata"]["namespace"] == *subject.namespace
                && o["metadata"]["name"] == *release_name
        });
        match stored {
            Some(hr) => hr["spec"]["values"] = subject.spec.clone(),
            None => after.push(release(
                &subject.kind,
                &subject.namespace,
                &release_name,
                Some(&subject.name),
                subject.spec.clone(),
            )),
        }
        after
    }

    /// What `line` holds for `label` (its charge of the line's key; zero when it holds none).
    fn held(line: &PoolLine, label: &str) -> Quantity {
        line.standing
            .largest
            .iter()
            .find(|(_, holder)| holder == label)
            .map_or(Quantity::ZERO, |(q, _)| *q)
    }

    /// `budget - carved - reserved`, negative when the line is over budget.
    fn left(line: &PoolLine) -> i128 {
        line.available.nanos() - line.over_budget.map_or(0, Quantity::nanos)
    }

    fn lines_of<'l>(ledger: &'l Ledger, namespace: &str) -> Vec<&'l PoolLine> {
        ledger
            .pools
            .iter()
            .filter(|l| l.namespaces.iter().any(|n| n == namespace))
            .collect()
    }

    /// One key the write grows, as the ledger sees it.
    struct Grown {
        pool: String,
        key: String,
        growth: Quantity,
        /// What the line reserves less the write's stored version: the policy's `reserved`.
        others: Quantity,
        budget: Quantity,
        carved: Quantity,
        refused: bool,
        boundary: bool,
    }

    /// Decides `case` with the policy and draws both ledgers, then holds them to each other.
    pub fn check(
        case: &Case,
        fixture: &dyn Fn(Vec<Value>) -> Fixture,
        counts: &mut Counts,
    ) -> Result<Outcome, String> {
        let subject = Subject::of(&case.request);
        let payload =
            serde_json::to_vec(&json!({"request": case.request, "settings": case.settings}))
                .expect("JSON serialises");
        let k8s = fixture(case.objects.clone());
        let verdict = validate_payload(&payload, &k8s);
        let message = verdict.message.clone().unwrap_or_default();
        // Kubewarden refuses such settings before any request (`validate_settings`), and
        // the ledger refuses them too.
        let settings_bytes = serde_json::to_vec(&case.settings).expect("JSON serialises");
        if !tenant_reservation_policy::check_settings(&settings_bytes).valid {
            let settings = serde_json::from_value::<Settings>(case.settings.clone());
            if let Ok(settings) = settings
                && ledger(&settings, &k8s, 0).is_ok()
            {
                return Err("settings validate_settings refuses give a ledger".into());
            }
            return Ok(Outcome::Excluded("invalid settings"));
        }
        let settings: Settings =
            serde_json::from_value(case.settings.clone()).map_err(|e| e.to_string())?;
        let before = ledger(&settings, &k8s, usize::MAX).map_err(|e| format!("no ledger: {e}"))?;
        let after = ledger(
            &settings,
            &fixture(apply(&case.objects, &subject)),
            usize::MAX,
        )
        .map_err(|e| format!("no ledger after the write: {e}"))?;
        let label = subject.label();
        let lines = lines_of(&before, &subject.namespace);

        // Writes refused for something else than their size.
        if !verdict.allowed && !message.contains("exceeds pool") {
            if message.contains(&format!("{label} cannot be evaluated:")) {
                // The ledger with the write applied cannot evaluate it either; or its
                // namespace is in no line, under a pool whose budget cannot be read.
                let after_lines = lines_of(&after, &subject.namespace);
                let flagged = after_lines.iter().any(|l| {
                    l.unevaluable
                        .iter()
                        .any(|u| u.starts_with(&format!("{label}: ")))
                }) || (after_lines.is_empty()
                    && after
                        .warnings
                        .iter()
                        .any(|w| w.contains(" has no ledger: ")));
                if !flagged {
                    return Err(format!(
                        "{message}: the ledger after the write does not flag {label}"
                    ));
                }
                return Ok(Outcome::Excluded("the subject cannot be evaluated"));
            }
            if message.contains("(siblingFailure: deny)") {
                if lines.iter().all(|l| l.unevaluable.is_empty()) {
                    return Err(format!(
                        "{message}: no line of {} flags an object",
                        subject.namespace
                    ));
                }
                return Ok(Outcome::Excluded("siblingFailure: deny"));
            }
            if message.contains(": the budget of pool ") {
                let pool = message
                    .split(": the budget of pool ")
                    .nth(1)
                    .and_then(|rest| rest.split(' ').next())
                    .unwrap_or_default();
                let warned = before
                    .warnings
                    .iter()
                    .any(|w| w.starts_with(&format!("pool {pool} has no ledger: ")));
                if !warned {
                    return Err(format!(
                        "{message}: the ledger does not warn about pool {pool}"
                    ));
                }
                return Ok(Outcome::Excluded("an unreadable budget"));
            }
            if message.contains(" cannot shrink from ") {
                return Ok(Outcome::Excluded("a growOnly key shrinks"));
            }
            return excluded(&verdict, "refused before any pool (intake)");
        }

        let update = subject.operation == "UPDATE";
        let mut grown = Vec::new();
        for line in &lines {
            let after_line = after
                .pools
                .iter()
                .find(|l| {
                    l.standing.pool == line.standing.pool && l.standing.key == line.standing.key
                })
                .ok_or_else(|| {
                    format!(
                        "pool {} {}: no line after the write",
                        line.standing.pool, line.standing.key
                    )
                })?;
            let held_before = held(line, &label);
            let new = held(after_line, &label);
            // The ledger is one evaluation: the write changes the line by what it changes.
            if after_line.standing.reserved.nanos() - line.standing.reserved.nanos()
                != new.nanos() - held_before.nanos()
            {
                return Err(format!(
                    "pool {} {}: reserved {} -> {} for {label} {} -> {}",
                    line.standing.pool,
                    line.standing.key,
                    line.show(line.standing.reserved),
                    line.show(after_line.standing.reserved),
                    line.show(held_before),
                    line.show(new)
                ));
            }
            let old = if update { held_before } else { Quantity::ZERO };
            let growth = new.nanos() - old.nanos();
            if growth <= 0 {
                continue;
            }
            let need = new.nanos() - held_before.nanos();
            let refused = need > left(line);
            if update && refused != (growth > line.available.nanos()) {
                return Err(format!(
                    "pool {} {}: clamped and signed headroom disagree",
                    line.standing.pool, line.standing.key
                ));
            }
            grown.push(Grown {
                pool: line.standing.pool.clone(),
                key: line.standing.key.clone(),
                growth: Quantity::from_nanos(growth),
                others: Quantity::from_nanos(line.standing.reserved.nanos() - held_before.nanos()),
                budget: line.standing.budget,
                carved: line.standing.carved.total,
                refused,
                boundary: need == left(line),
            });
        }
        let ledger_refuses = grown.iter().any(|g| g.refused);
        let policy_refuses = !verdict.allowed;
        if ledger_refuses != policy_refuses {
            return Err(format!(
                "the policy {} but the ledger says {}: {verdict:?}\nbefore: {:#}\nafter: {:#}",
                if policy_refuses { "refuses" } else { "admits" },
                grown
                    .iter()
                    .map(|g| format!(
                        "{} {} grows {} (refused: {})",
                        g.pool,
                        g.key,
                        g.growth.nanos(),
                        g.refused
                    ))
                    .collect::<Vec<_>>()
                    .join("; "),
                before.to_json(),
                after.to_json()
            ));
        }
        // The records: one per key grown in a pool, with the ledger's figures.
        let mut records: Vec<_> = verdict.records.iter().collect();
        records.sort_by(|a, b| (&a.pool, &a.key).cmp(&(&b.pool, &b.key)));
        grown.sort_by(|a, b| (&a.pool, &a.key).cmp(&(&b.pool, &b.key)));
        let pairs = |r: &[(String, String)]| r.to_vec();
        let recorded: Vec<(String, String)> = records
            .iter()
            .map(|r| (r.pool.clone(), r.key.clone()))
            .collect();
        let expected: Vec<(String, String)> = grown
            .iter()
            .map(|g| (g.pool.clone(), g.key.clone()))
            .collect();
        if pairs(&recorded) != pairs(&expected) {
            return Err(format!(
                "records {recorded:?}, ledger lines grown {expected:?}: {verdict:?}"
            ));
        }
        for (r, g) in records.iter().zip(&grown) {
            let figures =
                |budget, carved, reserved, growth, fits| (budget, carved, reserved, growth, fits);
            let policy = figures(r.budget, r.carved, r.reserved, r.growth, r.fits);
            let ours = figures(g.budget, g.carved, g.others, g.growth, !g.refused);
            if policy != ours {
                return Err(format!(
                    "pool {} {}: policy {policy:?}, ledger {ours:?}",
                    g.pool, g.key
                ));
            }
        }
        counts.keys_compared += grown.len();
        if grown.is_empty() {
            counts.no_key += 1;
        }
        if grown.iter().any(|g| g.boundary) {
            counts.boundary += 1;
        }
        Ok(if policy_refuses {
            Outcome::Refused
        } else {
            Outcome::Admitted
        })
    }

    fn excluded(verdict: &Verdict, reason: &'static str) -> Result<Outcome, String> {
        if verdict.allowed {
            return Err(format!("{reason}, yet admitted: {verdict:?}"));
        }
        Ok(Outcome::Excluded(reason))
    }

    // ---- the scenarios -------------------------------------------------------------------

    fn yaml_objects(text: &str) -> Vec<Value> {
        serde_yaml::Deserializer::from_str(text)
            .map(|doc| serde_json::to_value(serde_yaml::Value::deserialize(doc).unwrap()).unwrap())
            .filter(|v| !v.is_null())
            .collect()
    }

    /// The scenarios whose subject is an application write, as cases, by directory name;
    /// and the others' names.
    pub fn scenarios() -> (Vec<(String, Case)>, Vec<String>) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/scenarios");
        let mut dirs: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("request.json").is_file())
            .collect();
        dirs.sort();
        let (mut cases, mut others) = (Vec::new(), Vec::new());
        for dir in dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
            let review: Value = serde_json::from_str(&read("request.json")).unwrap();
            let request = review["request"].clone();
            let write = matches!(request["operation"].as_str(), Some("CREATE" | "UPDATE"));
            if !write || request["kind"]["kind"] == "Tenant" {
                others.push(name);
                continue;
            }
            let settings = match dir.join("settings.json").is_file() {
                true => serde_json::from_str(&read("settings.json")).unwrap(),
                false => json!({}),
            };
            let objects = yaml_objects(&read("cluster.yaml"));
            cases.push((
                name,
                Case {
                    objects,
                    settings,
                    request,
                },
            ));
        }
        (cases, others)
    }

    // ---- the generated set ---------------------------------------------------------------

    /// The kinds written, and the instance types they name: the cluster holds only those
    /// (an unoptimised test build spends most of its time reading the full lists otherwise).
    const KINDS: &[&str] = &[
        "Tenant",
        "VMDisk",
        "VMInstance",
        "Postgres",
        "KubernetesNodes",
        "Redis",
        "Etcd",
    ];
    const INSTANCE_TYPES: &[&str] = &[
        "u1.small",
        "u1.medium",
        "u1.large",
        "u1.xlarge",
        "gn1.xlarge",
    ];
    const A10: &str = "nvidia.com/GA102GL_A10";

    /// The generated cases' cluster: their objects beside the definitions and instance
    /// types, whose lists are served ready-made.
    pub fn generated_cluster(objects: Vec<Value>) -> Fixture {
        static LISTS: OnceLock<test_kit::Trimmed> = OnceLock::new();
        LISTS
            .get_or_init(|| test_kit::Trimmed::new(KINDS, INSTANCE_TYPES))
            .cluster(objects)
    }

    fn gi(n: u64) -> String {
        format!("{n}Gi")
    }

    /// A tenant's quota: unbounded, a budget on some keys (coarse, so that writes land on
    /// the boundary), or, rarely, one that cannot be read.
    fn quota() -> impl Strategy<Value = Value> {
        let budget = (
            prop::option::weighted(0.7, 0u64..24),
            prop::option::weighted(0.7, 0u64..48),
            prop::option::weighted(0.7, 0u64..40),
            prop::option::weighted(0.3, 0u64..4),
            prop::option::weighted(0.3, 0u64..3),
            any::<bool>(),
        )
            .prop_map(|(cpu, memory, storage, gpus, a10, alias)| {
                let mut q = serde_json::Map::new();
                if let Some(c) = cpu {
                    let key = if alias { "requests.cpu" } else { "cpu" };
                    q.insert(key.into(), json!(c.to_string()));
                }
                if let Some(m) = memory {
                    q.insert("memory".into(), json!(gi(m * 2)));
                }
                if let Some(s) = storage {
                    q.insert("storage".into(), json!(gi(s * 4)));
                }
                if let Some(g) = gpus {
                    q.insert("gpuclass.cozystack.io/devices".into(), json!(g.to_string()));
                }
                if let Some(g) = a10 {
                    q.insert(
                        "a10.gpuclass.cozystack.io/devices".into(),
                        json!(g.to_string()),
                    );
                }
                Value::Object(q)
            });
        prop_oneof![
            3 => Just(json!({})),
            12 => budget,
            1 => Just(json!({"cpu": "plenty"})),
        ]
    }

    fn gpus() -> impl Strategy<Value = Value> {
        prop::collection::vec(
            prop::sample::select(vec![A10, "nvidia.com/AD102GL_L40S"]),
            0..3,
        )
        .prop_map(|names| json!(names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()))
    }

    fn instance_type() -> impl Strategy<Value = &'static str> {
        prop::sample::select(INSTANCE_TYPES.to_vec())
    }

    fn preset() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["nano", "micro", "small", "medium", "large"])
    }

    /// A spec of `kind`, as a tenant writes it.
    fn spec(kind: &'static str) -> BoxedStrategy<Value> {
        match kind {
            "VMDisk" => (1u64..17).prop_map(|s| json!({"storage": gi(s * 2)})).boxed(),
            "VMInstance" => prop_oneof![
                (instance_type(), gpus())
                    .prop_map(|(it, gpus)| json!({"instanceType": it, "gpus": gpus})),
                (1u64..6, 1u64..9)
                    .prop_map(|(c, m)| json!({"instanceType": "", "resources": {"cpu": c, "sockets": 1, "memory": gi(m * 2)}})),
            ]
            .boxed(),
            "Postgres" => (0u64..4, preset(), 1u64..9)
                .prop_map(|(r, p, s)| json!({"replicas": r, "resourcesPreset": p, "size": gi(s * 2)}))
                .boxed(),
            "KubernetesNodes" => (0u64..4, instance_type(), 1u64..5, gpus())
                .prop_map(|(r, it, d, gpus)| json!({"maxReplicas": r, "instanceType": it, "diskSize": gi(d * 10), "gpus": gpus}))
                .boxed(),
            "Redis" => (1u64..4, preset(), 1u64..5)
                .prop_map(|(r, p, s)| json!({"replicas": r, "resourcesPreset": p, "size": gi(s)}))
                .boxed(),
            other => unreachable!("no generator for {other}"),
        }
    }

    /// A kind, one spec of it, and another one (what an UPDATE writes over it).
    fn app() -> impl Strategy<Value = (&'static str, Value, Value)> {
        prop::sample::select(vec![
            "VMDisk",
            "VMInstance",
            "Postgres",
            "KubernetesNodes",
            "Redis",
        ])
        .prop_flat_map(|kind| (Just(kind), spec(kind), spec(kind)))
    }

    /// A spec that cannot be evaluated, for a kind.
    fn broken(kind: &str) -> Value {
        match kind {
            "VMDisk" => json!({"storage": "10 Gi"}),
            "VMInstance" | "KubernetesNodes" => json!({"instanceType": "gone.large"}),
            _ => json!({"replicas": "three"}),
        }
    }

    #[derive(Debug, Clone)]
    enum Write {
        /// A new application in the namespace of that index (past the tenants': one no
        /// tenant owns).
        Create(usize),
        /// An application already stored, by index.
        Update(usize),
        /// The audit scanner's CREATE of an application already stored.
        Audit(usize),
    }

    fn write() -> impl Strategy<Value = Write> {
        prop_oneof![
            3 => any::<usize>().prop_map(Write::Create),
            4 => any::<usize>().prop_map(Write::Update),
            1 => any::<usize>().prop_map(Write::Audit),
        ]
    }

    /// A tenant tree (tenant-root, up to three children, each with up to two of its own,
    /// one of those with one more), applications spread over its namespaces, now and then
    /// a stored application that cannot be evaluated or a tenant module, and one write.
    pub fn case() -> impl Strategy<Value = Case> {
        let tree = (
            quota(),
            prop::collection::vec(
                (
                    quota(),
                    prop::collection::vec((quota(), prop::option::weighted(0.3, quota())), 0..3),
                ),
                1..4,
            ),
        );
        let apps = prop::collection::vec((any::<usize>(), app()), 0..9);
        (
            tree,
            apps,
            prop::option::weighted(0.1, any::<usize>()),
            prop::option::weighted(0.1, any::<usize>()),
            (write(), app(), prop::bool::weighted(0.06)),
            any::<bool>(),
        )
            .prop_map(
                |((root, children), apps, legacy, etcd, (write, fresh, bad), warn)| {
                    build(root, children, apps, legacy, etcd, write, fresh, bad, warn)
                },
            )
    }

    type Children = Vec<(Value, Vec<(Value, Option<Value>)>)>;

    #[allow(clippy::too_many_arguments)]
    fn build(
        root: Value,
        children: Children,
        apps: Vec<(usize, (&'static str, Value, Value))>,
        legacy: Option<usize>,
        etcd: Option<usize>,
        write: Write,
        fresh: (&'static str, Value, Value),
        bad: bool,
        warn: bool,
    ) -> Case {
        let mut objects = vec![tenant("tenant-root", "root", root)];
        let mut namespaces = vec!["tenant-root".to_string()];
        for (name, (quota, grandchildren)) in ["a", "b", "c"].iter().zip(children) {
            let ns = format!("tenant-{name}");
            objects.push(tenant("tenant-root", name, quota));
            namespaces.push(ns.clone());
            for (name, (quota, below)) in ["x", "y"].iter().zip(grandchildren) {
                let child = format!("{ns}-{name}");
                objects.push(tenant(&ns, name, quota));
                namespaces.push(child.clone());
                if let Some(quota) = below {
                    objects.push(tenant(&child, "z", quota));
                    namespaces.push(format!("{child}-z"));
                }
            }
        }
        let pick = |i: usize| namespaces[i % namespaces.len()].clone();
        let mut stored: Vec<(&str, String, String, Value, Value)> = apps
            .into_iter()
            .enumerate()
            .map(|(i, (at, (kind, spec, other)))| (kind, pick(at), format!("app{i}"), spec, other))
            .collect();
        if let Some(at) = legacy {
            let spec = broken("VMInstance");
            stored.push((
                "VMInstance",
                pick(at),
                "legacy".into(),
                spec,
                json!({"instanceType": "u1.small"}),
            ));
        }
        for (kind, ns, name, spec, _) in &stored {
            objects.push(application(kind, ns, name, spec.clone()));
        }
        if let Some(at) = etcd {
            objects.push(module("Etcd", &pick(at), "etcd"));
        }
        let settings = json!({
            "siblingFailure": if warn { "warn" } else { "deny" },
            "gpuDeviceClasses": {A10: "a10"},
        });
        let new_spec = |kind: &str, spec: Value| if bad { broken(kind) } else { spec };
        let (operation, kind, ns, name, spec, old) = match (write, stored.is_empty()) {
            (Write::Create(at), _) | (Write::Update(at) | Write::Audit(at), true) => {
                // Past the tenants' namespaces: one no tenant owns, now and then.
                let ns = if at % (namespaces.len() + 1) == namespaces.len() {
                    "tenant-nobody".to_string()
                } else {
                    pick(at)
                };
                (
                    "CREATE",
                    fresh.0,
                    ns,
                    "new".to_string(),
                    new_spec(fresh.0, fresh.1),
                    None,
                )
            }
            (Write::Update(i), false) => {
                let (kind, ns, name, old, new) = stored[i % stored.len()].clone();
                ("UPDATE", kind, ns, name, new_spec(kind, new), Some(old))
            }
            (Write::Audit(i), false) => {
                let (kind, ns, name, spec, other) = stored[i % stored.len()].clone();
                let spec = if i % 2 == 0 { spec } else { other };
                ("CREATE", kind, ns, name, new_spec(kind, spec), None)
            }
        };
        let payload = test_kit::payload(operation, kind, &ns, &name, spec, old, json!({}));
        let payload: Value = serde_json::from_slice(&payload).unwrap();
        Case {
            objects,
            settings,
            request: payload["request"].clone(),
        }
    }

    /// Runs `cases` generated cases from a fixed seed, counting outcomes.
    pub fn run_generated(cases: u32) -> Counts {
        let config = ProptestConfig {
            cases,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let counts = RefCell::new(Counts::default());
        let result = runner.run(&case(), |case| {
            let mut scratch = Counts::default();
            let outcome = check(&case, &generated_cluster, &mut scratch).map_err(|e| {
                TestCaseError::fail(format!("{e}\ncase: {}", json!({"objects": case.objects, "settings": case.settings, "request": case.request})))
            })?;
            let mut counts = counts.borrow_mut();
            *counts.outcomes.entry(outcome).or_default() += 1;
            counts.boundary += scratch.boundary;
            counts.no_key += scratch.no_key;
            counts.keys_compared += scratch.keys_compared;
            Ok(())
        });
        if let Err(e) = result {
            panic!("the ledger and the policy disagree: {e}");
        }
        counts.into_inner()
    }

    pub fn report(what: &str, counts: &Counts) {
        let admitted = counts.of(&Outcome::Admitted);
        let refused = counts.of(&Outcome::Refused);
        eprintln!(
            "{what}: {} cases, {} compared ({admitted} admitted, {refused} refused for their size; {} growing no pool's key, {} on a boundary; {} keys), excluded: {}",
            counts.total(),
            admitted + refused,
            counts.no_key,
            counts.boundary,
            counts.keys_compared,
            counts
                .outcomes
                .iter()
                .filter_map(|(o, n)| match o {
                    Outcome::Excluded(reason) => Some(format!("{reason} {n}")),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

#[test]
fn the_ledger_agrees_with_the_policy_on_every_scenario() {
    use agreement::*;
    let (cases, others) = scenarios();
    let mut counts = Counts::default();
    for (name, case) in &cases {
        let outcome =
            check(case, &Fixture::new, &mut counts).unwrap_or_else(|e| panic!("{name}: {e}"));
        *counts.outcomes.entry(outcome).or_default() += 1;
    }
    report("scenarios", &counts);
    eprintln!("scenarios not application writes: {}", others.join(", "));
    assert!(cases.len() >= 40, "{} application scenarios", cases.len());
    let compared = counts
        .outcomes
        .get(&Outcome::Admitted)
        .copied()
        .unwrap_or(0)
        + counts.outcomes.get(&Outcome::Refused).copied().unwrap_or(0);
    assert!(compared >= 25, "{counts:?}");
}

#[test]
fn the_ledger_agrees_with_the_policy_on_generated_clusters() {
    use agreement::*;
    let counts = run_generated(1000);
    report("generated", &counts);
    let of = |o: Outcome| counts.outcomes.get(&o).copied().unwrap_or(0);
    // The generator reaches every side of the rule.
    assert!(
        of(Outcome::Admitted) >= 200 && of(Outcome::Refused) >= 200,
        "{counts:?}"
    );
    assert!(of(Outcome::Admitted) - counts.no_key >= 100, "{counts:?}");
    assert!(counts.boundary >= 5, "{counts:?}");
}
