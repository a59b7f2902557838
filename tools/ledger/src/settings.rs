//! The policy settings the ledger evaluates with: a JSON or YAML settings document, or a
//! (Cluster)AdmissionPolicy manifest (its `spec.settings`), or, by default, the settings the
//! project ships (`deploy/clusteradmissionpolicy.yaml`).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use tenant_reservation_policy::settings::Settings;

/// The ClusterAdmissionPolicy this project ships.
const SHIPPED: &str = include_str!("../../../deploy/clusteradmissionpolicy.yaml");

/// The settings, as the JSON object the policy receives.
pub fn load(path: Option<&Path>) -> Result<Value> {
    let Some(path) = path else {
        return from_text(SHIPPED).context("deploy/clusteradmissionpolicy.yaml");
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
    let doc: Value = serde_json::to_value(doc).context("not JSON-compatible")?;
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
}
