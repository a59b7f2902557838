//! Every Kubernetes lookup the policy makes, behind one small interface.
//!
//! [`Kubernetes`] answers three cluster-wide list queries with the raw JSON the Kubewarden
//! host returns; [`host::Host`] asks the host, [`fixture::Fixture`] answers from memory
//! (unit tests, the benchmark and the fuzzers). Parsing the answers is shared, so a fixture
//! exercises the same code as production.
//!
//! The number of calls per request is constant, whatever the number of applications: one
//! list of definitions, one list of HelmReleases (every application and every Tenant), and
//! one list of instance types only when an evaluation needs one. They come in that order,
//! as kwctl's session replay requires a deterministic sequence: the definitions come first
//! because they say which fields of the applications' values the policy reads, and so which
//! field masks the host can prune the HelmReleases to.

#[cfg(any(test, feature = "fixtures"))]
pub mod fixture;
pub mod host;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::definition::{ApplicationDefinition, Reservation};
use crate::evaluate::InstanceTypeSize;
use crate::quantity::Quantity;

pub const KIND_LABEL: &str = "apps.cozystack.io/application.kind";
pub const GROUP_LABEL: &str = "apps.cozystack.io/application.group";
pub const NAME_LABEL: &str = "apps.cozystack.io/application.name";

/// The three lists the policy reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Query {
    /// `cozystack.io/v1alpha1` ApplicationDefinitions.
    Definitions,
    /// `helm.toolkit.fluxcd.io/v2` HelmReleases labelled as Cozystack applications.
    Applications,
    /// `instancetype.kubevirt.io/v1beta1` VirtualMachineClusterInstancetypes.
    InstanceTypes,
}

/// The field masks that keep a HelmRelease's whole `spec.values`: used when the definitions
/// cannot be read, so that nothing a reservation might read is pruned.
pub const WHOLE_VALUES: &[&str] = &["spec.values"];

/// More masks than this (a cluster with very many definitions) and the whole values are
/// asked for instead: a long mask list costs the host more than it saves.
const MAX_FIELD_MASKS: usize = 256;

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

    /// The fields the policy reads of every object of the list, whatever the cluster holds
    /// (the host always keeps `apiVersion`, `kind` and `metadata`). A HelmRelease is also
    /// read in the value paths of [`application_masks`].
    pub fn fixed_field_masks(self) -> &'static [&'static str] {
        match self {
            // A HelmRelease's chart spec and status are most of its size.
            Query::Applications => &["metadata.labels", "metadata.name", "metadata.namespace"],
            // A definition's dashboard (its icon), release and secrets are most of its size.
            Query::Definitions => &[
                "metadata.name",
                "spec.application.kind",
                "spec.application.openAPISchema",
                "spec.reservation",
            ],
            // An instance type's description annotations are most of its size.
            Query::InstanceTypes => &[
                "metadata.name",
                "spec.cpu.guest",
                "spec.gpus",
                "spec.memory.guest",
            ],
        }
    }
}

/// The field masks for the HelmRelease list: the fixed ones, every `spec.values` path a
/// definition's reservation block reads, and a Tenant's `resourceQuotas`. Without
/// definitions (`None`: they cannot be read) the whole values are kept.
///
/// A mask under another is dropped: the host keeps only the deeper path when both are given
/// (`spec` with `spec.a` keeps only `spec.a`), and the shorter one must keep its subtree.
pub fn application_masks(definitions: Option<&[ApplicationDefinition]>) -> BTreeSet<String> {
    let fixed = Query::Applications.fixed_field_masks().iter();
    let whole = || {
        fixed
            .clone()
            .chain(WHOLE_VALUES)
            .map(|m| m.to_string())
            .collect()
    };
    let Some(definitions) = definitions else {
        return whole();
    };
    let blocks: Vec<Reservation> = definitions
        .iter()
        .filter_map(|d| d.spec.reservation.as_ref())
        // A block that does not parse makes its kind unevaluable whatever the values hold.
        .filter_map(|block| Reservation::from_value(block).ok())
        .collect();
    let mut paths = BTreeSet::from([crate::admission::RESOURCE_QUOTAS]);
    for block in &blocks {
        block.read_paths(&mut paths);
    }
    let under_another = |path: &str| {
        path.match_indices('.')
            .any(|(dot, _)| paths.contains(&path[..dot]))
    };
    let masks: BTreeSet<String> = paths
        .iter()
        .filter(|p| !under_another(p))
        .map(|p| format!("spec.values.{p}"))
        .chain(fixed.clone().map(|m| m.to_string()))
        .collect();
    if masks.len() > MAX_FIELD_MASKS {
        return whole();
    }
    masks
}

/// Answers a list query with the JSON list the Kubewarden host returns, its items pruned to
/// `field_masks` (`None`: whole objects).
pub trait Kubernetes {
    fn list(&self, query: Query, field_masks: Option<&BTreeSet<String>>)
    -> Result<Vec<u8>, String>;
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
    /// Shared: a pool of a thousand applications holds a handful of kinds and namespaces.
    pub kind: Rc<str>,
    pub namespace: Rc<str>,
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
    #[serde(rename = "apps.cozystack.io/application.name", borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct HelmReleaseSpec {
    #[serde(default)]
    values: Option<Box<RawValue>>,
}

pub fn parse_applications(bytes: &[u8]) -> Result<Vec<Application>, String> {
    let releases: Vec<HelmRelease> = parse_list(Query::Applications, bytes)?;
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
            Some(Application {
                kind: intern(labels.kind?),
                namespace: intern(hr.metadata.namespace),
                name: labels.name.unwrap_or(hr.metadata.name).into_owned(),
                values: hr.spec.and_then(|s| s.values),
            })
        })
        .collect())
}

/// The definitions of the list. One pass when every item has the shape of a definition;
/// otherwise item by item, so that one malformed definition (ignored, as if absent) does not
/// hide the others.
pub fn parse_definitions(bytes: &[u8]) -> Result<Vec<ApplicationDefinition>, String> {
    if let Ok(all) = serde_json::from_slice::<List<ApplicationDefinition>>(bytes) {
        return Ok(all.items);
    }
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
            {"metadata":{"name":"vm-instance-db2","namespace":"tenant-\u0066oo","labels":{
                "apps.cozystack.io/application.kind":"VM\u0049nstance"}}},
            {"metadata":{"name":"not-an-app","namespace":"tenant-foo","labels":{}}}]}"#;
        let apps = parse_applications(list).unwrap();
        assert_eq!(apps.len(), 2);
        assert_eq!(apps[0].label(), "VMInstance tenant-foo/db1");
        // Escaped strings are decoded, and equal strings shared.
        assert_eq!(apps[1].label(), "VMInstance tenant-foo/vm-instance-db2");
        assert!(Rc::ptr_eq(&apps[0].kind, &apps[1].kind));
        assert!(apps[1].values.is_none());
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

    fn definition(kind: &str, reservation: serde_json::Value) -> ApplicationDefinition {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": kind.to_lowercase()},
            "spec": {"application": {"kind": kind}, "reservation": reservation},
        }))
        .unwrap()
    }

    #[test]
    fn masks_keep_what_the_reservations_read_and_no_path_under_another() {
        let masks = |defs: &[ApplicationDefinition]| -> Vec<String> {
            application_masks(Some(defs)).into_iter().collect()
        };
        let defs = [
            definition(
                "A",
                serde_json::json!({"replicas": "x.replicas", "resources": "x",
                "components": [{"enabledBy": "y.enabled", "storage": ["y.size", "z"]}]}),
            ),
            definition(
                "B",
                serde_json::json!({"each": {"path": "groups",
                "reservation": {"replicas": "maxReplicas"}}, "preset": "x-preset"}),
            ),
            // Unparseable: its kind cannot be evaluated whatever its values hold.
            definition("C", serde_json::json!({"replica": "ignored"})),
        ];
        assert_eq!(
            masks(&defs),
            [
                "metadata.labels",
                "metadata.name",
                "metadata.namespace",
                "spec.values.groups",
                "spec.values.resourceQuotas",
                "spec.values.x",
                "spec.values.x-preset",
                "spec.values.y.enabled",
                "spec.values.y.size",
                "spec.values.z",
            ]
        );
        let whole: BTreeSet<String> = [
            "metadata.labels",
            "metadata.name",
            "metadata.namespace",
            "spec.values",
        ]
        .map(String::from)
        .into();
        assert_eq!(application_masks(None), whole);
        let many: Vec<ApplicationDefinition> = (0..300)
            .map(|i| {
                definition(
                    &format!("K{i}"),
                    serde_json::json!({"storage": format!("s{i}")}),
                )
            })
            .collect();
        assert_eq!(application_masks(Some(&many)), whole);
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
