//! The host's list answers read into what the policy needs: stored applications, definitions
//! and instance types. Borrowing where it can: the lists are most of a request's work.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{APPLICATION_DEFINITION, ClusterError, HELM_RELEASE, INSTANCE_TYPE};
use crate::charge::definition::{ApplicationDefinition, Metadata};
use crate::charge::sizing::InstanceTypeSize;
use crate::quantity::{JsonQuantityError, Quantity};

#[derive(Deserialize)]
struct List<T> {
    items: Vec<T>,
}

fn parse_list<'a, T: Deserialize<'a>>(
    (_, kind): (&str, &'static str),
    bytes: &'a [u8],
) -> Result<Vec<T>, ClusterError> {
    serde_json::from_slice::<List<T>>(bytes)
        .map(|l| l.items)
        .map_err(|e| ClusterError::NotAList {
            kind,
            reason: e.to_string(),
        })
}

/// An application as the Cozystack API server stores it: a labelled HelmRelease whose
/// `spec.values` is the application's spec.
#[derive(Debug, Clone)]
pub struct Application {
    /// Shared: a pool of a thousand applications holds a handful of kinds and namespaces.
    pub kind: Rc<str>,
    pub namespace: Rc<str>,
    /// The name Cozystack gives it: its release's name less its kind's release prefix
    /// (the `application.name` label is not read: the root tenant's says `tenant-root`).
    pub name: String,
    /// The HelmRelease's name.
    pub release: String,
    /// Whether the release's name starts with its kind's prefix (else `name` is the release's).
    pub prefixed: bool,
    /// A module the tenant chart created (`internal.cozystack.io/tenantmodule: "true"`).
    pub module: bool,
    /// Kept raw: only the applications of the pool in question are ever parsed.
    pub values: Option<Box<RawValue>>,
}

impl Application {
    pub fn label(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }
}

#[derive(Deserialize)]
struct HelmRelease<'a> {
    #[serde(borrow)]
    metadata: HelmReleaseMetadata<'a>,
    #[serde(default)]
    spec: Option<HelmReleaseSpec>,
}

/// Borrowed from the answer where no escape forces a copy.
#[derive(Deserialize)]
struct HelmReleaseMetadata<'a> {
    #[serde(default, borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    namespace: Cow<'a, str>,
    #[serde(default, borrow)]
    labels: Labels<'a>,
}

/// The two labels read; the others are skipped unread.
#[derive(Deserialize, Default)]
struct Labels<'a> {
    #[serde(rename = "apps.cozystack.io/application.kind", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(rename = "internal.cozystack.io/tenantmodule", borrow)] // keys::TENANT_MODULE_LABEL
    module: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct HelmReleaseSpec {
    #[serde(default)]
    values: Option<Box<RawValue>>,
}

/// The applications of a HelmRelease list; `prefix` gives each kind's release prefix (its
/// definition's `spec.release.prefix`), `None` for a kind no definition declares.
pub fn parse_applications<'p>(
    bytes: &[u8],
    prefix: impl Fn(&str) -> Option<&'p str>,
) -> Result<Vec<Application>, ClusterError> {
    let releases: Vec<HelmRelease> = parse_list(HELM_RELEASE, bytes)?;
    let mut interned: HashMap<Cow<str>, Rc<str>> = HashMap::new();
    let mut intern = |s: Cow<'_, str>| -> Rc<str> {
        match interned.get(s.as_ref()) {
            Some(shared) => shared.clone(),
            None => {
                let shared: Rc<str> = Rc::from(s.as_ref());
                interned.insert(Cow::Owned(s.into_owned()), shared.clone());
                shared
            }
        }
    };
    Ok(releases
        .into_iter()
        .filter_map(|hr| {
            let labels = hr.metadata.labels;
            let kind = intern(labels.kind?);
            let release = hr.metadata.name;
            let stripped = prefix(&kind).and_then(|p| release.strip_prefix(p));
            Some(Application {
                prefixed: stripped.is_some(),
                name: stripped.unwrap_or(&release).to_string(),
                release: release.to_string(),
                kind,
                namespace: intern(hr.metadata.namespace),
                module: labels.module.as_deref() == Some("true"),
                values: hr.spec.and_then(|s| s.values),
            })
        })
        .collect())
}

/// The definitions of the list. One pass when every item has the shape of a definition;
/// otherwise item by item, so that one malformed definition (ignored, as if absent) does not
/// hide the others.
pub fn parse_definitions(bytes: &[u8]) -> Result<Vec<ApplicationDefinition>, ClusterError> {
    if let Ok(all) = serde_json::from_slice::<List<ApplicationDefinition>>(bytes) {
        return Ok(all.items);
    }
    let items: Vec<&RawValue> = parse_list(APPLICATION_DEFINITION, bytes)?;
    Ok(items
        .into_iter()
        .filter_map(|raw| serde_json::from_str(raw.get()).ok())
        .collect())
}

/// Every definition's `openAPISchema` (its raw JSON string token, parsed only for the
/// definitions a request evaluates), by the definition's name.
pub fn parse_schemas(bytes: &[u8]) -> Result<HashMap<String, Option<Box<RawValue>>>, ClusterError> {
    #[derive(Deserialize)]
    struct Schema {
        metadata: Metadata,
        spec: SchemaSpec,
    }
    #[derive(Deserialize)]
    struct SchemaSpec {
        #[serde(default)]
        application: SchemaApplication,
    }
    #[derive(Deserialize, Default)]
    struct SchemaApplication {
        #[serde(default, rename = "openAPISchema")]
        open_api_schema: Option<Box<RawValue>>,
    }
    let items: Vec<Schema> = parse_list(APPLICATION_DEFINITION, bytes)?;
    Ok(items
        .into_iter()
        .map(|d| (d.metadata.name, d.spec.application.open_api_schema))
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
) -> Result<BTreeMap<String, Result<InstanceTypeSize, String>>, ClusterError> {
    let items: Vec<InstanceType> = parse_list(INSTANCE_TYPE, bytes)?;
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
        Quantity::from_json(v).map_err(|e| match e {
            JsonQuantityError::WrongType => bad(format!("{field} is {v}")),
            JsonQuantityError::Invalid(e) => bad(format!("{field}: {e}")),
        })
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
            {"metadata":{"name":"vm-instance-db2","namespace":"tenant-\u0066oo","labels":{
                "apps.cozystack.io/application.kind":"VM\u0049nstance"}}},
            {"metadata":{"name":"not-an-app","namespace":"tenant-foo","labels":{}}}]}"#;
        let apps = parse_applications(list, |kind| {
            (kind == "VMInstance").then_some("vm-instance-")
        })
        .unwrap();
        assert_eq!(apps.len(), 2);
        assert_eq!(apps[0].label(), "VMInstance tenant-foo/db1");
        // Escaped strings are decoded, and equal strings shared; the name is the release's
        // less the prefix, whatever the label says.
        assert_eq!(apps[1].label(), "VMInstance tenant-foo/db2");
        assert!(apps[1].prefixed && !apps[1].module);
        assert!(Rc::ptr_eq(&apps[0].kind, &apps[1].kind));
        assert!(apps[1].values.is_none());
        assert_eq!(
            apps[0].values.as_ref().unwrap().get(),
            r#"{"instanceType":"u1.large"}"#
        );
    }

    #[test]
    fn refuses_an_answer_that_is_not_a_list() {
        let err = parse_applications(br#"{"kind":"Status","status":"Failure"}"#, |_| None)
            .unwrap_err()
            .to_string();
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
