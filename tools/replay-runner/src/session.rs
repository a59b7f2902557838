//! kwctl's host-capabilities session file (`--record-host-capabilities-interactions` /
//! `--replay-host-capabilities-interactions`), modelled on kwctl 1.31 `src/callback_handler/proxy.rs`
//! and policy-evaluator 0.30 `callback_requests.rs`.
//!
//! The file is a YAML sequence of exchanges. Each exchange's `request` is itself a YAML document
//! (policy-evaluator's `CallbackRequestType`, serialized with `serde_yaml::to_string`, hence the
//! `!Variant` tag), embedded as a string; `response` is `type: Success` with the answer as a
//! string `payload`, or `type: Error` with a `message`:
//!
//! ```yaml
//! - type: Exchange
//!   request: |
//!     !KubernetesListResourceAll
//!     api_version: cozystack.io/v1alpha1
//!     kind: ApplicationDefinition
//!     label_selector: null
//!     field_selector: null
//!   response:
//!     type: Success
//!     payload: '{"apiVersion":"cozystack.io/v1alpha1","items":[],"kind":"ApplicationDefinitionList","metadata":{"resourceVersion":"1"}}'
//! ```
//!
//! Serialization uses serde_yaml 0.9.34 like kwctl, so a session written here is byte-for-byte
//! what kwctl would write for the same exchanges.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use host_sim::ListQuery;
use serde::{Deserialize, Serialize};

/// The Kubernetes variants of policy-evaluator's `CallbackRequestType`, with the same names,
/// field order and types, so the YAML and the `Debug` text (used in replay errors) are the same
/// as kwctl's.
///
/// `field_masks` (kubewarden-policy-sdk 0.16+) is the last field of each variant, as in the
/// policy-evaluator releases that serve field masks. It is written only when the guest sent masks:
/// a request without masks is byte-for-byte what kwctl 1.31 (policy-evaluator 0.30, which has no
/// such field) writes, and kwctl 1.31 ignores the field when reading. Replay compares masks when
/// the recorded request has the key, and ignores them (like kwctl 1.31) when it has not.
#[derive(Debug, Clone, Eq, PartialEq, Serialize, Deserialize)]
pub enum CallbackRequestType {
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
}

impl CallbackRequestType {
    pub fn api_version_kind(&self) -> (&str, &str) {
        match self {
            CallbackRequestType::KubernetesListResourceNamespace {
                api_version, kind, ..
            }
            | CallbackRequestType::KubernetesListResourceAll {
                api_version, kind, ..
            }
            | CallbackRequestType::KubernetesGetResource {
                api_version, kind, ..
            } => (api_version, kind),
        }
    }

    /// The same request without field masks (what kwctl 1.31 sees of it).
    pub fn without_field_masks(&self) -> Self {
        let mut r = self.clone();
        match &mut r {
            CallbackRequestType::KubernetesListResourceNamespace { field_masks, .. }
            | CallbackRequestType::KubernetesListResourceAll { field_masks, .. }
            | CallbackRequestType::KubernetesGetResource { field_masks, .. } => *field_masks = None,
        }
        r
    }

    pub fn field_masks(&self) -> Option<&BTreeSet<String>> {
        match self {
            CallbackRequestType::KubernetesListResourceNamespace { field_masks, .. }
            | CallbackRequestType::KubernetesListResourceAll { field_masks, .. }
            | CallbackRequestType::KubernetesGetResource { field_masks, .. } => {
                field_masks.as_ref()
            }
        }
    }

    /// The list this request asks for, as `host_sim` takes it, and its field masks; `None`
    /// for a get.
    pub fn list_query(&self) -> Option<(ListQuery, Option<&BTreeSet<String>>)> {
        match self {
            CallbackRequestType::KubernetesListResourceAll {
                api_version,
                kind,
                label_selector,
                field_selector,
                field_masks,
            } => Some((
                ListQuery {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    namespace: None,
                    label_selector: label_selector.clone(),
                    field_selector: field_selector.clone(),
                },
                field_masks.as_ref(),
            )),
            CallbackRequestType::KubernetesListResourceNamespace {
                api_version,
                kind,
                namespace,
                label_selector,
                field_selector,
                field_masks,
            } => Some((
                ListQuery {
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                    namespace: Some(namespace.clone()),
                    label_selector: label_selector.clone(),
                    field_selector: field_selector.clone(),
                },
                field_masks.as_ref(),
            )),
            CallbackRequestType::KubernetesGetResource { .. } => None,
        }
    }

    /// kwctl stores each request as `serde_yaml::to_string(&request)`.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a CallbackRequestType always serializes")
    }

    pub fn from_yaml(text: &str) -> Result<Self> {
        serde_yaml::from_str(text).map_err(|e| {
            anyhow!(
                "cannot deserialize recorded request into `CallbackRequestType` ({e}); replay-runner only replays the Kubernetes requests (KubernetesListResourceNamespace, KubernetesListResourceAll, KubernetesGetResource). Request was:\n{text}"
            )
        })
    }
}

/// kwctl's `Response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    Success { payload: String },
    Error { message: String },
}

/// kwctl's `Exchange` (the `type: Exchange` field comes from `#[serde(tag = "type")]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub struct Exchange {
    pub request: String,
    pub response: Response,
}

impl Exchange {
    pub fn new(request: &CallbackRequestType, response: Response) -> Self {
        Exchange {
            request: request.to_yaml(),
            response,
        }
    }
}

/// A whole session file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    pub exchanges: Vec<Exchange>,
}

impl Session {
    pub fn from_yaml(text: &str) -> Result<Self> {
        let exchanges: Vec<Exchange> = serde_yaml::from_str(text)?;
        Ok(Session { exchanges })
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "Cannot open host capabilities interactions file {}",
                path.display()
            )
        })?;
        Self::from_yaml(&text)
            .with_context(|| format!("cannot deserialize contents of {}", path.display()))
    }

    /// What kwctl writes: `serde_yaml::to_writer(file, &exchanges)`.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.exchanges).expect("a session always serializes")
    }

    pub fn write_file(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_yaml())
            .with_context(|| format!("Cannot save context aware session to {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list_all(kind: &str) -> CallbackRequestType {
        CallbackRequestType::KubernetesListResourceAll {
            api_version: "helm.toolkit.fluxcd.io/v2".into(),
            kind: kind.into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        }
    }

    #[test]
    fn request_yaml_has_kwctl_shape() {
        assert_eq!(
            list_all("HelmRelease").to_yaml(),
            "!KubernetesListResourceAll\napi_version: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nlabel_selector: null\nfield_selector: null\n"
        );
        let get = CallbackRequestType::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: "tenant-a".into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        };
        assert_eq!(
            get.to_yaml(),
            "!KubernetesGetResource\napi_version: v1\nkind: Namespace\nname: tenant-a\nnamespace: null\ndisable_cache: false\n"
        );
    }

    #[test]
    fn field_masks_are_written_only_when_sent() {
        let masked = CallbackRequestType::KubernetesListResourceNamespace {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: "n".into(),
            label_selector: Some("a=b".into()),
            field_selector: None,
            field_masks: Some(
                [
                    "spec.containers.image".to_string(),
                    "metadata.name".to_string(),
                ]
                .into(),
            ),
        };
        let yaml = masked.to_yaml();
        assert_eq!(
            yaml,
            "!KubernetesListResourceNamespace\napi_version: v1\nkind: Pod\nnamespace: n\nlabel_selector: a=b\nfield_selector: null\nfield_masks:\n- metadata.name\n- spec.containers.image\n"
        );
        assert_eq!(CallbackRequestType::from_yaml(&yaml).unwrap(), masked);
        // A request written by kwctl 1.31 (no field_masks key) reads as "no masks".
        let old = CallbackRequestType::from_yaml(
            "!KubernetesListResourceAll\napi_version: v1\nkind: Pod\nlabel_selector: null\nfield_selector: null\n",
        )
        .unwrap();
        assert_eq!(old.field_masks(), None);
    }

    #[test]
    fn session_round_trip_is_byte_stable() {
        let session = Session {
            exchanges: vec![
                Exchange::new(
                    &list_all("HelmRelease"),
                    Response::Success {
                        payload: r#"{"apiVersion":"helm.toolkit.fluxcd.io/v2","items":[],"kind":"HelmReleaseList","metadata":{"resourceVersion":"1"}}"#.into(),
                    },
                ),
                Exchange::new(
                    &CallbackRequestType::KubernetesGetResource {
                        api_version: "v1".into(),
                        kind: "Namespace".into(),
                        name: "x".into(),
                        namespace: None,
                        disable_cache: true,
                        field_masks: None,
                    },
                    Response::Error {
                        message: "Cannot find v1/Namespace named 'x' inside of namespace 'None'".into(),
                    },
                ),
            ],
        };
        let yaml = session.to_yaml();
        assert!(
            yaml.starts_with("- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("  response:\n    type: Success\n    payload: '{\"apiVersion\""),
            "{yaml}"
        );
        assert!(yaml.contains("    type: Error\n    message: Cannot find v1/Namespace named 'x' inside of namespace 'None'\n"), "{yaml}");
        let parsed = Session::from_yaml(&yaml).unwrap();
        assert_eq!(parsed, session);
        assert_eq!(parsed.to_yaml(), yaml);
        assert_eq!(Session::default().to_yaml(), "[]\n");
    }
}
