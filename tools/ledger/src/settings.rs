//! The policy settings the ledger evaluates with: a JSON or YAML settings document, or a
//! (Cluster)AdmissionPolicy manifest (its `spec.settings`); on a live cluster by default the
//! settings of the ClusterAdmissionPolicy deployed there, so that the ledger judges as the
//! policy that runs; else the settings the project ships (`deploy/clusteradmissionpolicy.yaml`).
//! [`Source`] says which, and the output says it too.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use tenant_reservation_policy::settings::Settings;

/// The ClusterAdmissionPolicy this project ships.
pub(crate) const SHIPPED: &str = include_str!("../../../deploy/clusteradmissionpolicy.yaml");

/// Where the settings come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `--settings FILE`.
    File(String),
    /// The ClusterAdmissionPolicy of that name in the cluster, whole (its rules say which
    /// kinds it sees).
    Deployed { name: String, policy: Value },
    /// The settings this plugin ships, and why the cluster's were not used.
    Shipped(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(path) => write!(f, "the settings file {path}"),
            Source::Deployed { name, .. } => {
                write!(f, "the deployed ClusterAdmissionPolicy {name}")
            }
            Source::Shipped(why) => write!(
                f,
                "the settings shipped with this plugin (deploy/clusteradmissionpolicy.yaml): {why}"
            ),
        }
    }
}

/// Whether a ClusterAdmissionPolicy runs this policy: its module is a `tenant-reservation`
/// artifact (any registry, tag or digest; a local file too), or it carries the shipped name.
pub fn runs_this_policy(policy: &Value) -> bool {
    let module = policy["spec"]["module"].as_str().unwrap_or_default();
    let artifact = module
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .split([':', '@'])
        .next()
        .unwrap_or_default()
        .trim_end_matches(".wasm");
    artifact == "tenant-reservation"
        || artifact == "tenant-reservation-policy"
        || artifact == "annotated-policy"
        || policy["metadata"]["name"] == "tenant-reservation"
}

/// The deployed policy: its name, its settings, and the whole ClusterAdmissionPolicy (whose
/// rules say which kinds it sees).
#[derive(Clone, Debug, PartialEq)]
pub struct Deployed {
    pub name: String,
    pub settings: Value,
    pub policy: Value,
}

/// The deployed policy among `policies` (the cluster's ClusterAdmissionPolicies): the one
/// named `wanted`, else the one that runs this policy. `Ok(None)` when none runs it; an error
/// when `wanted` is absent or several run it.
pub fn deployed(policies: &[Value], wanted: Option<&str>) -> Result<Option<Deployed>> {
    let name = |p: &Value| {
        p["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let chosen: Vec<&Value> = match wanted {
        Some(wanted) => {
            let found: Vec<_> = policies.iter().filter(|p| name(p) == wanted).collect();
            if found.is_empty() {
                let mut names: Vec<String> = policies.iter().map(name).collect();
                names.sort();
                bail!(
                    "no ClusterAdmissionPolicy {wanted} in the cluster (it has: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                );
            }
            found
        }
        None => policies.iter().filter(|p| runs_this_policy(p)).collect(),
    };
    match chosen.as_slice() {
        [] => Ok(None),
        [policy] => {
            let settings = from_document((*policy).clone())
                .with_context(|| format!("ClusterAdmissionPolicy {}", name(policy)))?;
            Ok(Some(Deployed {
                name: name(policy),
                settings,
                policy: (*policy).clone(),
            }))
        }
        several => {
            let mut names: Vec<String> = several.iter().map(|p| name(p)).collect();
            names.sort();
            bail!(
                "{} ClusterAdmissionPolicies run this policy ({}): name one with --policy",
                names.len(),
                names.join(", ")
            )
        }
    }
}

/// The settings this plugin ships.
pub fn shipped() -> Result<Value> {
    from_text(SHIPPED).context("deploy/clusteradmissionpolicy.yaml")
}

/// The settings, as the JSON object the policy receives.
pub fn load(path: Option<&Path>) -> Result<Value> {
    let Some(path) = path else {
        return shipped();
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read settings file {}", path.display()))?;
    from_text(&text).with_context(|| format!("settings file {}", path.display()))
}

/// The settings of a settings document or a policy manifest.
pub fn from_text(text: &str) -> Result<Value> {
    let doc = serde_yaml::Deserializer::from_str(text)
        .next()
        .map(serde_yaml::Value::deserialize)
        .transpose()
        .context("not valid YAML or JSON")?
        .unwrap_or(serde_yaml::Value::Null);
    from_document(serde_json::to_value(doc).context("not JSON-compatible")?)
}

/// The settings of a settings document or a policy manifest already read.
pub fn from_document(doc: Value) -> Result<Value> {
    let is_policy = doc["apiVersion"]
        .as_str()
        .is_some_and(|v| v.starts_with("policies.kubewarden.io/"));
    let settings = if is_policy {
        doc["spec"]["settings"].clone()
    } else {
        doc
    };
    match settings {
        Value::Null => Ok(Value::Object(Default::default())),
        Value::Object(_) => Ok(settings),
        _ => bail!("the settings are not an object"),
    }
}

/// The settings as the policy reads them, refused exactly when its `validate_settings`
/// refuses them (Kubewarden never runs the policy with those).
pub fn parse(settings: &Value) -> Result<Settings> {
    let bytes = serde_json::to_vec(settings)?;
    let check = tenant_reservation_policy::check_settings(&bytes);
    if !check.valid {
        bail!(
            "invalid settings: {}",
            check.message.unwrap_or_else(|| "refused".into())
        );
    }
    Ok(serde_json::from_value(settings.clone())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_documents_and_policy_manifests_are_read() {
        assert_eq!(
            from_text(r#"{"siblingFailure": "warn"}"#).unwrap(),
            json!({"siblingFailure": "warn"})
        );
        assert_eq!(
            from_text("siblingFailure: warn\n").unwrap(),
            json!({"siblingFailure": "warn"})
        );
        let manifest = "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nspec:\n  mode: monitor\n  settings:\n    requireReservation: false\n";
        assert_eq!(
            from_text(manifest).unwrap(),
            json!({"requireReservation": false})
        );
        assert_eq!(from_text("").unwrap(), json!({}));
        assert!(from_text("- 1\n").is_err());
        assert!(parse(&json!({"siblingFailure": "maybe"})).is_err());
        assert!(parse(&load(None).unwrap()).is_ok());
    }

    fn policy(name: &str, module: &str, settings: Value) -> Value {
        json!({"apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy",
               "metadata": {"name": name}, "spec": {"module": module, "settings": settings}})
    }

    #[test]
    fn the_deployed_policy_is_the_one_that_runs_this_module() {
        let ours = policy(
            "quotas",
            "registry://ghcr.io/cozystack/policies/tenant-reservation:v0.2.0",
            json!({"siblingFailure": "warn"}),
        );
        let other = policy(
            "psa",
            "registry://ghcr.io/kubewarden/policies/pod-privileged:v1.0.0",
            json!({}),
        );
        let found = deployed(&[other.clone(), ours.clone()], None).unwrap();
        assert_eq!(
            found,
            Some(Deployed {
                name: "quotas".to_string(),
                settings: json!({"siblingFailure": "warn"}),
                policy: ours.clone(),
            })
        );
        // By digest, from a file, by the shipped name.
        for module in [
            "ghcr.io/cozystack/policies/tenant-reservation@sha256:0123",
            "file:///opt/annotated-policy.wasm",
        ] {
            assert!(
                runs_this_policy(&policy("x", module, json!({}))),
                "{module}"
            );
        }
        assert!(runs_this_policy(&policy(
            "tenant-reservation",
            "registry://r/x:v1",
            json!({})
        )));
        assert!(!runs_this_policy(&policy(
            "x",
            "registry://r/tenant-reservation-extra:v1",
            json!({})
        )));
        // None: the caller falls back to the shipped settings.
        assert_eq!(deployed(std::slice::from_ref(&other), None).unwrap(), None);
        // Several: the user names one.
        let second = policy(
            "quotas-b",
            "registry://r/tenant-reservation:v0.1.0",
            json!({}),
        );
        let error = deployed(&[ours.clone(), second.clone()], None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2 ClusterAdmissionPolicies run this policy (quotas, quotas-b): name one with --policy"), "{error}");
        assert_eq!(
            deployed(&[ours, second], Some("quotas-b"))
                .unwrap()
                .unwrap()
                .name,
            "quotas-b"
        );
        let error = deployed(&[other], Some("nope")).unwrap_err().to_string();
        assert_eq!(
            error,
            "no ClusterAdmissionPolicy nope in the cluster (it has: psa)"
        );
    }
}
