//! Every Kubernetes lookup the policy makes, behind one small interface.
//!
//! [`Kubernetes`] answers three cluster-wide list queries with the raw JSON the Kubewarden
//! host returns; [`host::Host`] asks the host, [`fixture::Fixture`] answers from memory
//! (unit tests, the benchmark and the fuzzers). Parsing the answers is shared, so a fixture
//! exercises the same code as production.
//!
//! The number of calls per request is constant, whatever the number of applications: one
//! list of HelmReleases (every application and every Tenant), one list of definitions, and
//! one list of instance types only when an evaluation needs one. They come in that order,
//! as kwctl's session replay requires a deterministic sequence.

pub mod fixture;
pub mod host;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::definition::ApplicationDefinition;
use crate::evaluate::InstanceTypeSize;
use crate::quantity::Quantity;

pub const KIND_LABEL: &str = "apps.cozystack.io/application.kind";
pub const GROUP_LABEL: &str = "apps.cozystack.io/application.group";
pub const NAME_LABEL: &str = "apps.cozystack.io/application.name";

/// The three lists the policy reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// `helm.toolkit.fluxcd.io/v2` HelmReleases labelled as Cozystack applications.
    Applications,
    /// `cozystack.io/v1alpha1` ApplicationDefinitions.
    Definitions,
    /// `instancetype.kubevirt.io/v1beta1` VirtualMachineClusterInstancetypes.
    InstanceTypes,
}

impl Query {
    pub fn api_version(self) -> &'static str {
        match self {
            Query::Applications => "helm.toolkit.fluxcd.io/v2",
            Query::Definitions => "cozystack.io/v1alpha1",
            Query::InstanceTypes => "instancetype.kubevirt.io/v1beta1",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Query::Applications => "HelmRelease",
            Query::Definitions => "ApplicationDefinition",
            Query::InstanceTypes => "VirtualMachineClusterInstancetype",
        }
    }

    pub fn label_selector(self) -> Option<&'static str> {
        match self {
            Query::Applications => Some(KIND_LABEL),
            _ => None,
        }
    }

    /// Only what the policy reads: a HelmRelease's status and chart spec are most of its size.
    pub fn field_masks(self) -> Option<&'static [&'static str]> {
        match self {
            Query::Applications => Some(&[
                "metadata.labels",
                "metadata.name",
                "metadata.namespace",
                "spec.values",
            ]),
            _ => None,
        }
    }
}

/// Answers a list query with the JSON list the Kubewarden host returns.
pub trait Kubernetes {
    fn list(&self, query: Query) -> Result<Vec<u8>, String>;
}

#[derive(Deserialize)]
struct List<T> {
    items: Vec<T>,
}

fn parse_list<'a, T: Deserialize<'a>>(query: Query, bytes: &'a [u8]) -> Result<Vec<T>, String> {
    serde_json::from_slice::<List<T>>(bytes)
        .map(|l| l.items)
        .map_err(|e| {
            format!(
                "the {} list from the cluster is not a valid list: {e}",
                query.kind()
            )
        })
}

/// An application as the Cozystack API server stores it: a labelled HelmRelease whose
/// `spec.values` is the application's spec.
#[derive(Debug, Clone)]
pub struct Application {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// Kept raw: only the applications of the pool in question are ever parsed.
    pub values: Option<Box<RawValue>>,
}

impl Application {
    pub fn label(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }
}

#[derive(Deserialize)]
struct HelmRelease {
    metadata: HelmReleaseMetadata,
    #[serde(default)]
    spec: Option<HelmReleaseSpec>,
}

#[derive(Deserialize)]
struct HelmReleaseMetadata {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct HelmReleaseSpec {
    #[serde(default)]
    values: Option<Box<RawValue>>,
}

pub fn parse_applications(bytes: &[u8]) -> Result<Vec<Application>, String> {
    let releases: Vec<HelmRelease> = parse_list(Query::Applications, bytes)?;
    Ok(releases
        .into_iter()
        .filter_map(|hr| {
            let mut labels = hr.metadata.labels;
            let kind = labels.remove(KIND_LABEL)?;
            let name = labels.remove(NAME_LABEL).unwrap_or(hr.metadata.name);
            Some(Application {
                kind,
                namespace: hr.metadata.namespace,
                name,
                values: hr.spec.and_then(|s| s.values),
            })
        })
        .collect())
}

pub fn parse_definitions(bytes: &[u8]) -> Result<Vec<ApplicationDefinition>, String> {
    // Item by item, so that one malformed definition does not hide the others.
    let items: Vec<&RawValue> = parse_list(Query::Definitions, bytes)?;
    Ok(items
        .into_iter()
        .filter_map(|raw| serde_json::from_str(raw.get()).ok())
        .collect())
}

#[derive(Deserialize)]
struct InstanceType<'a> {
    metadata: InstanceTypeMetadata,
    #[serde(borrow)]
    spec: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InstanceTypeMetadata {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstanceTypeSpec {
    cpu: GuestField,
    memory: GuestField,
    #[serde(default)]
    gpus: Vec<InstanceTypeGpu>,
}

#[derive(Deserialize)]
struct GuestField {
    guest: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstanceTypeGpu {
    device_name: String,
}

/// Instance types by name; each one's size, or why it is unusable.
pub fn parse_instance_types(
    bytes: &[u8],
) -> Result<BTreeMap<String, Result<InstanceTypeSize, String>>, String> {
    let items: Vec<InstanceType> = parse_list(Query::InstanceTypes, bytes)?;
    Ok(items
        .into_iter()
        .map(|it| {
            let name = it.metadata.name;
            let size = instance_type_size(&name, it.spec);
            (name, size)
        })
        .collect())
}

fn instance_type_size(name: &str, spec: Option<&RawValue>) -> Result<InstanceTypeSize, String> {
    let bad = |what: String| format!("instance type {name:?} is unusable: {what}");
    let spec: InstanceTypeSpec = serde_json::from_str(spec.map(RawValue::get).unwrap_or("null"))
        .map_err(|e| bad(format!("spec: {e}")))?;
    let quantity = |field: &str, v: &serde_json::Value| -> Result<Quantity, String> {
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            other => return Err(bad(format!("{field} is {other}"))),
        };
        Quantity::parse_non_negative(&text).map_err(|e| bad(format!("{field}: {e}")))
    };
    Ok(InstanceTypeSize {
        cpu: quantity("spec.cpu.guest", &spec.cpu.guest)?,
        memory: quantity("spec.memory.guest", &spec.memory.guest)?,
        gpu_devices: spec.gpus.into_iter().map(|g| g.device_name).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_applications_from_labelled_helm_releases() {
        let list = br#"{"apiVersion":"helm.toolkit.fluxcd.io/v2","kind":"HelmReleaseList","items":[
            {"metadata":{"name":"vm-instance-db1","namespace":"tenant-foo","labels":{
                "apps.cozystack.io/application.kind":"VMInstance","apps.cozystack.io/application.name":"db1"}},
             "spec":{"values":{"instanceType":"u1.large"}}},
            {"metadata":{"name":"not-an-app","namespace":"tenant-foo","labels":{}}}]}"#;
        let apps = parse_applications(list).unwrap();
        assert_eq!(apps.len(), 1);
        assert_eq!(apps[0].label(), "VMInstance tenant-foo/db1");
        assert_eq!(
            apps[0].values.as_ref().unwrap().get(),
            r#"{"instanceType":"u1.large"}"#
        );
    }

    #[test]
    fn refuses_an_answer_that_is_not_a_list() {
        let err = parse_applications(br#"{"kind":"Status","status":"Failure"}"#).unwrap_err();
        assert!(
            err.starts_with("the HelmRelease list from the cluster is not a valid list"),
            "{err}"
        );
        assert!(parse_definitions(b"[]").is_err());
        assert!(parse_instance_types(b"not json").is_err());
    }

    #[test]
    fn reads_real_instance_types() {
        let yaml = include_str!("../../test_data/reference/instancetypes/extra-instancetypes.yaml");
        let items: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(yaml)
            .map(|d| serde_json::to_value(serde_yaml::Value::deserialize(d).unwrap()).unwrap())
            .collect();
        let list = serde_json::to_vec(&serde_json::json!({"items": items})).unwrap();
        let types = parse_instance_types(&list).unwrap();
        let gn1 = types["gn1.2xlarge"].as_ref().unwrap();
        assert_eq!(gn1.cpu, Quantity::from_units(8));
        assert_eq!(gn1.memory, Quantity::parse("32Gi").unwrap());
        assert_eq!(gn1.gpu_devices, ["nvidia.com/A400"]);
    }
}
