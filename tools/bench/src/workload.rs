//! The generated cluster: one quota pool of `size` applications (VMInstance, Postgres and
//! Kubernetes, with the chart defaults the Cozystack API stores and per-application
//! variation), the real definitions and instance types, and the two admission requests.

use std::collections::BTreeSet;

use host_sim::{AnswerCache, ListQuery, ObjectStore};
use serde::Deserialize;
use serde_json::{Value, json};
use tenant_reservation_policy::cluster::{Kubernetes, Query};
use tenant_reservation_policy::testing;

/// The bounded Tenant whose pool is measured.
pub const POOL: &str = "tenant-foo";
/// An unbounded sub-tenant: a member of the pool.
pub const MEMBER: &str = "tenant-foo-dev";

/// The request subject: a VMInstance.
pub const SUBJECT_KIND: &str = "VMInstance";
/// CREATE: a new VM.
pub const CREATE_NAME: &str = "vm-new";
/// UPDATE: an existing VM of the pool grows (u1.medium to u1.large), so the pool is summed.
pub const UPDATE_NAME: &str = "vm-0";

const VM_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/vm-instance.values.yaml");
const POSTGRES_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/postgres.values.yaml");
const KUBERNETES_DEFAULTS: &str =
    include_str!("../../../test_data/reference/values/kubernetes.values.yaml");

/// The list request the policy makes for `query`.
pub fn list_query(query: Query) -> ListQuery {
    let list = ListQuery::all(query.api_version(), query.kind());
    match query.label_selector() {
        Some(selector) => list.with_label_selector(selector),
        None => list,
    }
}

/// The native policy's view of the same cluster, pruned to the masks it asks for.
pub struct Native<'a>(pub &'a AnswerCache);

impl Kubernetes for Native<'_> {
    fn list(
        &self,
        query: Query,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        self.0
            .list(&list_query(query), field_masks)
            .map(|bytes| bytes.to_vec())
            .map_err(|e| e.to_string())
    }
}

pub struct Workload {
    pub create: Vec<u8>,
    pub update: Vec<u8>,
    /// Applications by kind: (VMInstance, Postgres, Kubernetes).
    pub mix: (usize, usize, usize),
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Vm,
    Postgres,
    Kubernetes,
}

/// 10 VMInstance, 7 Postgres, 3 Kubernetes in every 20; the first 10 hold all three.
const PATTERN: [Kind; 20] = {
    use Kind::*;
    [
        Vm, Postgres, Vm, Kubernetes, Vm, Postgres, Vm, Postgres, Vm, Postgres, Vm, Kubernetes, Vm,
        Postgres, Vm, Postgres, Vm, Kubernetes, Vm, Postgres,
    ]
};

const SSH_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq0dGVuYW50LXJlc2VydmF0aW9uLXBvbGljeS1iZW5jaA operator@workstation";
const CLOUD_INIT: &str = "#cloud-config\npackages:\n  - qemu-guest-agent\nruncmd:\n  - systemctl enable --now qemu-guest-agent\n";

struct Defaults {
    vm: Value,
    postgres: Value,
    kubernetes: Value,
}

fn vm_values(d: &Defaults, i: usize) -> Value {
    const TYPES: [&str; 7] = [
        "u1.medium",
        "u1.large",
        "u1.xlarge",
        "cx1.large",
        "m1.large",
        "u1.small",
        "",
    ];
    // vm-0, the UPDATE subject, is stored as a u1.medium.
    let instance_type = TYPES[(i / 2) % TYPES.len()];
    let mut o = json!({
        "instanceType": instance_type,
        "systemDisk": {"image": "ubuntu", "storage": "20Gi"},
        "disks": [{"name": format!("data-{i}")}],
        "subnets": [{"name": "default"}],
        "sshKeys": [SSH_KEY],
        "cloudInit": CLOUD_INIT,
    });
    if instance_type.is_empty() {
        o["resources"] =
            json!({"cpu": format!("{}", 1 + i % 4), "memory": format!("{}Gi", 2 + 2 * (i % 4))});
    }
    if i % 40 == 38 {
        o["instanceType"] = json!("gn1.xlarge");
        o["gpus"] = json!([{"name": "nvidia.com/AD102GL_L40S"}]);
    }
    merged(&d.vm, o)
}

fn postgres_values(d: &Defaults, i: usize) -> Value {
    const PRESETS: [&str; 5] = ["t1.micro", "c1.small", "u1.medium", "s1.large", "c1.medium"];
    const SIZES: [&str; 4] = ["10Gi", "20Gi", "50Gi", "100Gi"];
    let mut o = json!({
        "replicas": 1 + i % 3,
        "resourcesPreset": PRESETS[i % PRESETS.len()],
        "size": SIZES[i % SIZES.len()],
        "users": {"app": {"password": format!("pw-{i:08x}")}, "readonly": {}},
        "databases": {"app": {"roles": {"admin": ["app"], "readonly": ["readonly"]}, "extensions": ["pg_trgm"]}},
        "backup": {"enabled": i.is_multiple_of(2), "schedule": "0 2 * * *", "destinationPath": format!("s3://backups/pg-{i}/")},
    });
    if i % 9 == 4 {
        o["resources"] = json!({"cpu": "2", "memory": "4Gi"});
    }
    merged(&d.postgres, o)
}

fn kubernetes_values(d: &Defaults, i: usize) -> Value {
    let groups = match i % 3 {
        // The chart's implicit md0 (whenEmpty).
        0 => json!({}),
        1 => json!({"md0": {"minReplicas": 1, "maxReplicas": 3 + i % 5, "instanceType": "u1.large",
                            "diskSize": "50Gi", "roles": ["ingress-nginx"]}}),
        _ => json!({
            "md0": {"minReplicas": 1, "maxReplicas": 4, "instanceType": "u1.xlarge", "diskSize": "40Gi", "roles": ["ingress-nginx"]},
            "md1": {"minReplicas": 0, "maxReplicas": 2, "instanceType": "", "diskSize": "100Gi",
                    "resources": {"cpu": "4", "memory": "8Gi"}, "roles": []},
        }),
    };
    merged(
        &d.kubernetes,
        json!({
            "nodeGroups": groups,
            "host": format!("k8s-{i}.example.org"),
            "addons": {"certManager": {"enabled": true}, "ingressNginx": {"enabled": i % 2 == 1}},
        }),
    )
}

/// A stored HelmRelease: with the metadata the API server and Flux set (the host always keeps
/// `metadata` whole in a list, emptying `managedFields`), and the chart spec and status a
/// release carries (pruned by the field masks).
fn served(mut release: Value, i: usize) -> Value {
    let metadata = release["metadata"].as_object_mut().expect("metadata");
    metadata.insert(
        "uid".into(),
        json!(format!("3f0c{i:04x}-8d1e-4c5b-9a7e-2b6d{i:08x}")),
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
    release["spec"]["install"] = json!({"remediation": {"retries": -1}});
    release["spec"]["upgrade"] = json!({"remediation": {"retries": -1}});
    release
}

/// The pool's Tenants: `root`; `foo`, bounded; `foo/dev`, unbounded (a member); and
/// `foo/team`, bounded (a carve-out). `foo`'s quota scales with the pool so the writes fit.
fn tenants(size: usize) -> Vec<Value> {
    let n = size.max(1);
    vec![
        testing::tenant("tenant-root", "root", json!({})),
        testing::tenant(
            "tenant-root",
            "foo",
            json!({"cpu": format!("{}", 64 * n + 64), "memory": format!("{}Gi", 256 * n + 256),
                   "storage": format!("{}Gi", 512 * n + 512)}),
        ),
        testing::tenant("tenant-foo", "dev", json!({})),
        testing::tenant(
            "tenant-foo",
            "team",
            json!({"cpu": "16", "memory": "64Gi", "storage": "1Ti"}),
        ),
    ]
}

/// The requests for a pool of `size` applications, and the host's answers: `host_sim`'s, as
/// the host (and the replay-runner's `--cluster-state`) computes them, serialised once per
/// set of field masks asked for and then served as the same bytes.
pub fn generate(size: usize) -> (Workload, AnswerCache) {
    let defaults = Defaults {
        vm: yaml(VM_DEFAULTS),
        postgres: yaml(POSTGRES_DEFAULTS),
        kubernetes: yaml(KUBERNETES_DEFAULTS),
    };
    let mut mix = (0, 0, 0);
    let mut releases: Vec<Value> = tenants(size);
    let mut counters = [0usize; 3];
    for i in 0..size {
        let kind = PATTERN[i % PATTERN.len()];
        let namespace = if i % 3 == 2 { MEMBER } else { POOL };
        let (name, kind_name, values) = match kind {
            Kind::Vm => {
                let n = counters[0];
                counters[0] += 1;
                mix.0 += 1;
                (format!("vm-{n}"), "VMInstance", vm_values(&defaults, n))
            }
            Kind::Postgres => {
                let n = counters[1];
                counters[1] += 1;
                mix.1 += 1;
                (format!("pg-{n}"), "Postgres", postgres_values(&defaults, n))
            }
            Kind::Kubernetes => {
                let n = counters[2];
                counters[2] += 1;
                mix.2 += 1;
                (
                    format!("k8s-{n}"),
                    "Kubernetes",
                    kubernetes_values(&defaults, n),
                )
            }
        };
        releases.push(served(
            testing::application(kind_name, namespace, &name, values),
            i,
        ));
    }
    let mut objects = releases;
    objects.extend(testing::definitions());
    objects.extend(testing::instance_types());
    let store = ObjectStore::new(objects).expect("the generated cluster is a valid one");
    let answers = AnswerCache::new(store);
    let new_vm = vm_values(&defaults, 1); // a u1.medium
    let create = testing::payload(
        "CREATE",
        SUBJECT_KIND,
        POOL,
        CREATE_NAME,
        new_vm,
        None,
        json!({}),
    );
    // vm-0 is the first application, in tenant-foo.
    let old = vm_values(&defaults, 0);
    let mut grown = old.clone();
    grown["instanceType"] = json!("u1.large");
    let update = testing::payload(
        "UPDATE",
        SUBJECT_KIND,
        POOL,
        UPDATE_NAME,
        grown,
        Some(old),
        json!({}),
    );
    // The answers for the masks the linked crate asks (the module under test asks the same,
    // unless it differs: then they are computed on its first request, before any timing).
    tenant_reservation_policy::validate_payload(&create, &Native(&answers));
    (
        Workload {
            create,
            update,
            mix,
        },
        answers,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_are_the_hosts_lists_of_each_kind() {
        let (w, answers) = generate(10);
        assert_eq!(w.mix, (5, 4, 1));
        let instance_types = testing::instance_types()
            .into_iter()
            .filter(|o| o["kind"] == Query::InstanceTypes.kind())
            .count();
        assert!(instance_types < testing::instance_types().len());
        for (query, count) in [
            // The 4 Tenants and the 10 applications.
            (Query::Applications, 14),
            (Query::Definitions, testing::definitions().len()),
            // Only instance types: the reference files hold preferences too.
            (Query::InstanceTypes, instance_types),
        ] {
            let bytes = Native(&answers).list(query, None).unwrap();
            let list: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(list["kind"], format!("{}List", query.kind()));
            let items = list["items"].as_array().unwrap();
            assert_eq!(items.len(), count, "{query:?}");
            assert!(items.iter().all(|i| i["kind"] == query.kind()), "{query:?}");
            // Served as the same bytes every time.
            let again = answers.list(&list_query(query), None).unwrap();
            assert_eq!(*again, bytes);
        }
    }
}
