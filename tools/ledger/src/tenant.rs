//! A tenant's view: the pools of one tenant's namespace, from what Cozystack's tenant roles can
//! read. `cozy:tenant:view` (cozystack-basics' `clusterroles.yaml`), bound by the tenant chart
//! in the tenant's namespace and in every namespace below it, reads the `apps.cozystack.io`
//! applications (Tenants and modules included) and ResourceQuotas there; every authenticated
//! user reads discovery and, through KubeVirt's `instancetype.kubevirt.io:view`, the cluster
//! instance types. Nobody in a tenant reads ApplicationDefinitions, HelmReleases, the Tenant
//! that declares its own quota (it lives in the parent's namespace) or the deployed policy.
//!
//! So the cluster the ledger reads is rebuilt from those answers, as Cozystack's API server
//! maps one onto the other: each application is its HelmRelease (`spec.values` = its spec, which
//! that server returns with its schema's defaults applied, so no schema is needed); each served
//! kind is a definition without a schema; the tenant's own budget is read back from the
//! ResourceQuota the tenant chart renders from `resourceQuotas`; the Tenants above it are
//! unbounded stand-ins. The pools rooted at the tenant or below it are then exactly the
//! policy's. A key the tenant does not bound is counted in an ancestor's pool, which this view
//! cannot see: it says so rather than show a figure.

use anyhow::{Result, bail};
use host_sim::ObjectStore;
use serde_json::{Map, Value, json};
use tenant_reservation_policy::cluster::{APPLICATION_DEFINITION, HELM_RELEASE, INSTANCE_TYPE};
use tenant_reservation_policy::keys::{
    APPLICATIONS_API, GROUP, GROUP_LABEL, KIND_LABEL, NAME_LABEL, TENANT_KIND,
};
use tenant_reservation_policy::{ROOT_NAMESPACE, owned_namespace, owner_of};

use crate::live::{ListError, Live};
use crate::state::Stored;

/// The prefix of a Tenant's release name.
const TENANT_PREFIX: &str = "tenant-";
/// The ResourceQuota the tenant chart renders from a Tenant's `resourceQuotas`
/// (`charts/tenant/templates/quota.yaml`).
pub const QUOTA: &str = "tenant-quota";

/// One tenant's pools as its roles read them.
pub struct TenantView {
    /// The tenant's namespace.
    pub namespace: String,
    /// The cluster rebuilt from what was read.
    pub cluster: Stored,
    /// The quota keys the tenant declares: its own pools.
    pub declared: Vec<String>,
    /// What could not be read, and what that leaves out.
    pub missing: Vec<String>,
}

impl TenantView {
    /// What the figures leave out: keys counted in an ancestor's pool, and reads refused.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.declared.is_empty() {
            notes.push(format!(
                "{} declares no quota (no ResourceQuota {QUOTA}): its applications count in an ancestor's pool, which a tenant's role cannot read",
                self.namespace
            ));
        } else {
            notes.push(format!(
                "{} declares {}; any other key counts in an ancestor's pool, which a tenant's role cannot read",
                self.namespace,
                self.declared.join(", ")
            ));
        }
        notes.extend(self.missing.iter().cloned());
        notes
    }
}

/// Reads `namespace`'s view through `live`.
pub fn read(live: &Live, namespace: &str) -> Result<TenantView> {
    let server = live.server();
    let Some(chain) = ancestry(namespace) else {
        bail!(
            "{namespace} is not a tenant's namespace (tenant-root, tenant-<name>, tenant-<name>-<name>...): the tenant view reads one tenant: give its namespace with -n"
        );
    };
    let kinds = live.served_kinds(APPLICATIONS_API).map_err(|e| {
        anyhow::anyhow!("{server}: cannot discover the kinds of {APPLICATIONS_API}: {e}")
    })?;
    if !kinds.iter().any(|(kind, _)| kind == TENANT_KIND) {
        bail!("{server}: {APPLICATIONS_API} serves no Tenant kind: is this a Cozystack cluster?");
    }
    let quota = live
        .get_namespaced(("v1", "ResourceQuota", "resourcequotas"), namespace, QUOTA)
        .map_err(|e| denied(server, &format!("get resourcequotas in {namespace}"), e))?;
    let budget = match &quota {
        Some(quota) => budget_from_quota(&quota["spec"]["hard"]),
        None => Map::new(),
    };

    let mut missing = Vec::new();
    let mut objects: Vec<Value> = kinds.iter().map(|(k, p)| definition(k, p)).collect();
    objects.extend(stand_in_tenants(&chain, &budget));
    let mut queue = vec![namespace.to_string()];
    while let Some(ns) = queue.pop() {
        for (kind, plural) in &kinds {
            let items = match live.list_objects((APPLICATIONS_API, kind, plural), Some(&ns)) {
                Ok(items) => items,
                Err(e) if e.code() == Some(404) => continue,
                Err(e) if ns == namespace => {
                    return Err(denied(server, &format!("list {plural} in {ns}"), e));
                }
                Err(e) => {
                    missing.push(format!(
                        "cannot list {plural} in {ns} ({e}): the pools holding {ns} are short of them"
                    ));
                    continue;
                }
            };
            for app in items {
                let name = app["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if kind == TENANT_KIND {
                    if ns == ROOT_NAMESPACE && name == "root" {
                        // The root tenant itself, already stood in for from its quota.
                        continue;
                    }
                    queue.push(owned_namespace(&name, &ns));
                }
                objects.push(release(kind, &ns, &name, &app));
            }
        }
    }
    let (api_version, kind) = INSTANCE_TYPE;
    match live.list_objects((api_version, kind, "virtualmachineclusterinstancetypes"), None) {
        Ok(types) => objects.extend(types),
        Err(e) => missing.push(format!(
            "cannot list virtualmachineclusterinstancetypes ({e}): applications sized by an instance type cannot be evaluated"
        )),
    }
    let store = ObjectStore::new(objects)
        .map_err(|e| anyhow::anyhow!("{server}: the answers do not make a cluster: {e}"))?;
    Ok(TenantView {
        namespace: namespace.to_string(),
        cluster: Stored(store),
        declared: budget.keys().cloned().collect(),
        missing,
    })
}

/// The Tenants from the root down to the one owning `namespace`: (namespace it lives in,
/// name), root first. `None`: no Tenant owns `namespace`.
fn ancestry(namespace: &str) -> Option<Vec<(String, String)>> {
    let mut chain = Vec::new();
    let mut owned = namespace.to_string();
    loop {
        let (parent, name) = owner_of(&owned)?;
        let at_root = owned == ROOT_NAMESPACE;
        chain.push((parent.clone(), name));
        if at_root {
            break;
        }
        owned = parent;
    }
    chain.reverse();
    Some(chain)
}

/// The Tenant releases of `chain` (root first): the last, the tenant viewed, declares
/// `budget`; those above it declare nothing, so that no pool above the tenant has a figure.
fn stand_in_tenants<'a>(
    chain: &'a [(String, String)],
    budget: &'a Map<String, Value>,
) -> impl Iterator<Item = Value> + 'a {
    chain.iter().enumerate().map(move |(i, (parent, name))| {
        let values = if i + 1 == chain.len() && !budget.is_empty() {
            json!({ "resourceQuotas": budget })
        } else {
            json!({})
        };
        release(
            TENANT_KIND,
            parent,
            name,
            &json!({ "metadata": { "name": name }, "spec": values }),
        )
    })
}

/// A served kind as the definition the policy reads: no schema (the applications come with
/// their defaults), no block of its own (the settings' and built-in blocks apply), the Tenant
/// prefix the tenant chart's names need; the other kinds' release names are not read.
fn definition(kind: &str, plural: &str) -> Value {
    let (api_version, definition_kind) = APPLICATION_DEFINITION;
    let prefix = if kind == TENANT_KIND {
        TENANT_PREFIX
    } else {
        ""
    };
    json!({
        "apiVersion": api_version,
        "kind": definition_kind,
        "metadata": { "name": plural },
        "spec": {
            "application": { "kind": kind, "plural": plural },
            "release": { "prefix": prefix },
        },
    })
}

/// The HelmRelease Cozystack's API server stores for application `name` of `kind` in
/// `namespace`: its labels (a module's included), `spec.values` = its spec.
fn release(kind: &str, namespace: &str, name: &str, app: &Value) -> Value {
    let mut labels = app["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.insert(KIND_LABEL.into(), kind.into());
    labels.insert(GROUP_LABEL.into(), GROUP.into());
    labels.insert(NAME_LABEL.into(), name.into());
    let release_name = if kind != TENANT_KIND {
        name.to_string()
    } else if namespace == ROOT_NAMESPACE && name == "root" {
        ROOT_NAMESPACE.to_string()
    } else {
        format!("{TENANT_PREFIX}{name}")
    };
    let (api_version, release_kind) = HELM_RELEASE;
    json!({
        "apiVersion": api_version,
        "kind": release_kind,
        "metadata": { "name": release_name, "namespace": namespace, "labels": labels },
        "spec": { "values": app.get("spec").cloned().unwrap_or_else(|| json!({})) },
    })
}

/// A Tenant's `resourceQuotas` read back from the `spec.hard` of the ResourceQuota the tenant
/// chart renders from it (cozy-lib's `resources.flatten` over `resources.sanitize`): each
/// key's value is its `limits.<key>` verbatim, except `storage` (only `requests.storage`) and
/// the object counts (`pods`, `services.loadbalancers`...: the key itself). The other
/// `requests.*` entries are derived (cpu divided by the allocation ratio) and not read.
pub fn budget_from_quota(hard: &Value) -> Map<String, Value> {
    let mut budget = Map::new();
    let Some(hard) = hard.as_object() else {
        return budget;
    };
    for (entry, value) in hard {
        let key = if let Some(key) = entry.strip_prefix("limits.") {
            key
        } else if entry == "requests.storage" {
            "storage"
        } else if entry.starts_with("requests.") {
            continue;
        } else {
            entry
        };
        budget.insert(key.to_string(), value.clone());
    }
    budget
}

/// A refused read of the tenant's own namespace: the view cannot be drawn.
fn denied(server: &str, what: &str, error: ListError) -> anyhow::Error {
    match error.code() {
        Some(403) => anyhow::anyhow!(
            "{server}: the user may not {what}: {error} (a tenant's view needs Cozystack's cozy:tenant:view, or more, in the tenant's namespace)"
        ),
        _ => anyhow::anyhow!("{server}: cannot {what}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    // What `cozy-lib.resources.flatten` renders (cpuAllocationRatio 10) from each
    // `resourceQuotas`, read back.
    #[rstest]
    #[case::cpu_memory_storage(
        json!({"limits.cpu": "16", "requests.cpu": "1600m", "limits.memory": "32Gi",
               "requests.memory": "32Gi", "requests.storage": "100Gi"}),
        json!({"cpu": "16", "memory": "32Gi", "storage": "100Gi"})
    )]
    #[case::object_counts_are_the_key_itself(
        json!({"pods": "20", "services.loadbalancers": "2", "limits.cpu": "4", "requests.cpu": "400m"}),
        json!({"pods": "20", "services.loadbalancers": "2", "cpu": "4"})
    )]
    #[case::gpu_and_extended_keys(
        json!({"limits.gpuclass.cozystack.io/devices": "2", "requests.gpuclass.cozystack.io/devices": "2",
               "limits.ephemeral-storage": "10Gi", "requests.ephemeral-storage": "256Mi"}),
        json!({"gpuclass.cozystack.io/devices": "2", "ephemeral-storage": "10Gi"})
    )]
    #[case::none(json!({}), json!({}))]
    #[case::not_an_object(json!(null), json!({}))]
    fn quota_read_back_as_resource_quotas(#[case] hard: Value, #[case] expected: Value) {
        assert_eq!(Value::Object(budget_from_quota(&hard)), expected);
    }

    #[rstest]
    #[case::root("tenant-root", Some(vec![("tenant-root", "root")]))]
    #[case::child("tenant-foo", Some(vec![("tenant-root", "root"), ("tenant-root", "foo")]))]
    #[case::grandchild(
        "tenant-foo-bar",
        Some(vec![("tenant-root", "root"), ("tenant-root", "foo"), ("tenant-foo", "bar")])
    )]
    #[case::not_a_tenant("kube-system", None)]
    #[case::empty_segment("tenant-foo--bar", None)]
    fn ancestry_reads_the_namespace_name(
        #[case] namespace: &str,
        #[case] expected: Option<Vec<(&str, &str)>>,
    ) {
        let expected = expected.map(|chain| {
            chain
                .into_iter()
                .map(|(p, n)| (p.to_string(), n.to_string()))
                .collect::<Vec<_>>()
        });
        assert_eq!(ancestry(namespace), expected);
    }

    #[test]
    fn the_viewed_tenant_declares_its_budget_and_those_above_nothing() {
        let chain = ancestry("tenant-foo-bar").unwrap();
        let budget = budget_from_quota(&json!({"limits.cpu": "4"}));
        let tenants: Vec<Value> = stand_in_tenants(&chain, &budget).collect();
        let names: Vec<(&str, &str)> = tenants
            .iter()
            .map(|t| {
                (
                    t["metadata"]["namespace"].as_str().unwrap(),
                    t["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("tenant-root", "tenant-root"),
                ("tenant-root", "tenant-foo"),
                ("tenant-foo", "tenant-bar")
            ]
        );
        assert_eq!(tenants[0]["spec"]["values"], json!({}));
        assert_eq!(tenants[1]["spec"]["values"], json!({}));
        assert_eq!(
            tenants[2]["spec"]["values"],
            json!({"resourceQuotas": {"cpu": "4"}})
        );
    }
}
