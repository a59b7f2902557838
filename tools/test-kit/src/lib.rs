//! The policy's test kit, shared by its integration tests, the fuzzers, the scenario
//! generator and the bench (a dev-dependency: never in `policy.wasm` nor in the ledger):
//! - real Cozystack shapes: the in-tree ApplicationDefinitions with the proposed
//!   reservation blocks, the shipped instance types;
//! - builders for stored applications, tenants and admission requests;
//! - [`Fixture`]: the in-memory implementation of the [`tenant_reservation_policy::cluster::Kubernetes`] seam.

mod cluster;

pub use cluster::{Fixture, list_query};

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Value, json};

use tenant_reservation_policy::keys::{
    GROUP, GROUP_LABEL, KIND_LABEL, NAME_LABEL, TENANT_MODULE_LABEL,
};

const DEFINITIONS: &[&str] = &[
    include_str!("../../../test_data/reference/applicationdefinitions/bootbox.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/bucket.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/clickhouse.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/computeplane.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/etcd.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/external-dns.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/foundationdb.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/harbor.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/http-cache.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/info.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/ingress.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/kafka.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/kubernetes-nodes.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/kubernetes.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/mariadb.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/mongodb.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/monitoring.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/nats.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/openbao.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/opensearch.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/postgres.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/qdrant.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/rabbitmq.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/redis.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/seaweedfs.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/tcp-balancer.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/tenant.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/virtualprivatecloud.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/vm-disk.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/vm-instance.yaml"),
    include_str!("../../../test_data/reference/applicationdefinitions/vpn.yaml"),
];
/// The ClusterAdmissionPolicy this project ships: its settings are the defaults spelled out.
const DEPLOY: &str = include_str!("../../../deploy/clusteradmissionpolicy.yaml");
const INSTANCE_TYPES: &[&str] = &[
    include_str!("../../../test_data/reference/instancetypes/templates_instancetypes.yaml"),
    include_str!("../../../test_data/reference/instancetypes/templates_extra-instancetypes.yaml"),
];

/// The documents of a YAML stream, as JSON (empty ones left out).
pub fn yaml_documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .filter_map(|doc| {
            let v = serde_yaml::Value::deserialize(doc).expect("reference YAML parses");
            let json = serde_json::to_value(v).expect("reference YAML is JSON-compatible");
            (!json.is_null()).then_some(json)
        })
        .collect()
}

/// The real definitions as stored, without reservation blocks.
pub fn real_definitions() -> Vec<Value> {
    DEFINITIONS.iter().flat_map(|d| yaml_documents(d)).collect()
}

/// The settings `deploy/clusteradmissionpolicy.yaml` ships.
pub fn deploy_settings() -> Value {
    match yaml_documents(DEPLOY).pop() {
        Some(mut policy) => policy["spec"]["settings"].take(),
        None => panic!("deploy/clusteradmissionpolicy.yaml holds a ClusterAdmissionPolicy"),
    }
}

/// The settings `deploy/` ships, without `policyServerUser`: for runs with no policy-server
/// and no RBAC behind them (the e2e scenarios under kwctl, the bench's model of the host),
/// whose answers are lists only. The check it adds is tested on fixtures (`tests/it`) and in
/// the real engine (`cluster.bats`, `fault.bats`).
pub fn deploy_settings_unchecked() -> Value {
    tenant_reservation_policy::settings::without_permission_check(deploy_settings())
}

/// The reservation block of each kind this project ships: the built-in defaults.
pub fn reservations() -> serde_json::Map<String, Value> {
    tenant_reservation_policy::builtin::reservations()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Every real definition, with the shipped reservation block added where there is one (the
/// definitions as they will be once upstream adopts `spec.reservation`).
pub fn definitions() -> Vec<Value> {
    defined().to_vec()
}

fn defined() -> &'static [Value] {
    static DEFINED: OnceLock<Vec<Value>> = OnceLock::new();
    DEFINED.get_or_init(build_definitions)
}

fn build_definitions() -> Vec<Value> {
    let blocks = reservations();
    real_definitions()
        .into_iter()
        .map(|mut d| {
            let kind = d["spec"]["application"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Some(block) = blocks.get(&kind) {
                d["spec"]["reservation"] = block.clone();
            }
            d
        })
        .collect()
}

pub fn definition(kind: &str) -> Value {
    defined()
        .iter()
        .find(|d| d["spec"]["application"]["kind"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no reference definition for {kind}"))
}

pub fn instance_types() -> Vec<Value> {
    INSTANCE_TYPES
        .iter()
        .flat_map(|t| yaml_documents(t))
        .collect()
}

/// The HelmRelease the Cozystack API server stores for an application.
pub fn application(kind: &str, namespace: &str, name: &str, values: Value) -> Value {
    let prefix = defined()
        .iter()
        .find(|d| d["spec"]["application"]["kind"] == kind)
        .and_then(|d| d["spec"]["release"]["prefix"].as_str().map(str::to_string))
        .unwrap_or_default();
    stored(kind, namespace, name, &prefix, values)
}

fn stored(kind: &str, namespace: &str, name: &str, prefix: &str, values: Value) -> Value {
    release(
        kind,
        namespace,
        &format!("{prefix}{name}"),
        Some(name),
        values,
    )
}

/// A HelmRelease of `kind` named `release` in `namespace`, with the `application.name` label
/// when `label` is given (the Cozystack API sets it; the root tenant's says `tenant-root`).
pub fn release(
    kind: &str,
    namespace: &str,
    release: &str,
    label: Option<&str>,
    values: Value,
) -> Value {
    let mut labels = json!({KIND_LABEL: kind, GROUP_LABEL: GROUP});
    if let Some(name) = label {
        labels[NAME_LABEL] = json!(name);
    }
    json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {
            "name": release,
            "namespace": namespace,
            "labels": labels,
        },
        "spec": release_spec(kind, values),
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "InstallSucceeded"}]},
    })
}

/// A module release the tenant chart creates in the namespace a tenant owns (no values: the
/// chart passes none; the `internal.cozystack.io/tenantmodule` label).
pub fn module(kind: &str, namespace: &str, name: &str) -> Value {
    let mut hr = release(kind, namespace, name, Some(name), Value::Null);
    hr["metadata"]["labels"][TENANT_MODULE_LABEL] = json!("true");
    hr["spec"] = release_spec(kind, Value::Null);
    hr
}

/// A HelmRelease's spec as Flux's CRD requires it (`interval`, a chart source), with `values`
/// unless null.
fn release_spec(kind: &str, values: Value) -> Value {
    let mut spec = json!({
        "interval": "5m",
        "chart": {"spec": {
            "chart": kind.to_lowercase(),
            "sourceRef": {"kind": "HelmRepository", "name": "cozystack-apps", "namespace": "cozy-public"},
        }},
    });
    if !values.is_null() {
        spec["values"] = values;
    }
    spec
}

/// A stored Tenant `name` in `namespace` declaring `quota` as its `resourceQuotas`.
pub fn tenant(namespace: &str, name: &str, quota: Value) -> Value {
    stored(
        "Tenant",
        namespace,
        name,
        "tenant-",
        json!({"resourceQuotas": quota}),
    )
}

/// A stored Tenant with the whole `spec` given.
pub fn tenant_with(namespace: &str, name: &str, spec: Value) -> Value {
    stored("Tenant", namespace, name, "tenant-", spec)
}

/// A stock installation holding `objects`: the real definitions as Cozystack ships them (no
/// reservation block: the CRD prunes it), every instance type.
pub fn stock_cluster(objects: Vec<Value>) -> Fixture {
    let mut all = real_definitions();
    all.extend(instance_types());
    all.extend(objects);
    Fixture::new(all)
}

/// A cluster holding every definition, every instance type, and `objects`.
pub fn cluster(objects: Vec<Value>) -> Fixture {
    let mut all = definitions();
    all.extend(instance_types());
    all.extend(objects);
    Fixture::new(all)
}

/// A cluster of the definitions of a few kinds and a few instance types, whose definition
/// and instance type lists are built and serialised once and served ready-made: an
/// unoptimised test build spends most of its time reading the full lists otherwise.
pub struct Trimmed {
    objects: Vec<Value>,
    definitions: Vec<u8>,
    instance_types: Vec<u8>,
}

impl Trimmed {
    /// The definitions (with their reservation blocks) of `kinds` and the instance types
    /// named in `instance_types`.
    pub fn new(kinds: &[&str], instance_types: &[&str]) -> Self {
        let mut objects: Vec<Value> = definitions()
            .into_iter()
            .filter(|d| kinds.iter().any(|k| d["spec"]["application"]["kind"] == *k))
            .collect();
        let types: Vec<Value> = self::instance_types()
            .into_iter()
            .filter(|t| instance_types.iter().any(|n| t["metadata"]["name"] == *n))
            .collect();
        objects.extend(types.iter().cloned());
        let fixture = Fixture::new(objects.clone());
        // Whole objects: a host may always answer more than the masks ask.
        let list = |lookup| {
            serde_json::to_vec(&fixture.list_value(&lookup, None)).expect("a list serialises")
        };
        Trimmed {
            definitions: list(tenant_reservation_policy::cluster::Lookup::Definitions),
            // Every one for each asked by name: the policy picks its own out of a list.
            instance_types: serde_json::to_vec(&serde_json::json!({ "items": types }))
                .expect("a list serialises"),
            objects,
        }
    }

    /// A cluster holding these definitions and instance types, and `objects`.
    pub fn cluster(&self, objects: Vec<Value>) -> Fixture {
        use tenant_reservation_policy::cluster::Source;
        Fixture::new(self.objects.iter().cloned().chain(objects).collect())
            .answering(Source::Definitions, Ok(self.definitions.clone()))
            .answering(Source::InstanceTypes, Ok(self.instance_types.clone()))
    }
}

/// A `validate` payload (`{"request": ..., "settings": ...}`) for a write of `kind`.
pub fn payload(
    operation: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    spec: Value,
    old_spec: Option<Value>,
    settings: Value,
) -> Vec<u8> {
    let object = |spec: Value| {
        json!({"apiVersion": "apps.cozystack.io/v1alpha1", "kind": kind,
               "metadata": {"name": name, "namespace": namespace}, "spec": spec})
    };
    let mut request = json!({
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": GROUP, "version": "v1alpha1", "kind": kind},
        "resource": {"group": GROUP, "version": "v1alpha1", "resource": format!("{}s", kind.to_lowercase())},
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": "tenant-user", "groups": ["system:authenticated"]},
        "object": object(spec),
    });
    if let Some(old) = old_spec {
        request["oldObject"] = object(old);
    }
    serde_json::to_vec(&json!({"request": request, "settings": settings})).expect("JSON serialises")
}
