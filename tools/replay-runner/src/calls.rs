//! The Kubernetes host calls a guest makes: the kubewarden-policy-sdk request payloads, parsed
//! into the requests kwctl records ([`KubernetesCall`]), and which resources the guest may read
//! ([`ContextAwareAccess`], from the policy's `contextAwareResources`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::session::CallbackRequestType;

/// policy-evaluator's `ContextAwareResource` (`contextAwareResources` entries in the metadata).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

/// Which Kubernetes resources the guest may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextAwareAccess {
    /// kwctl without `--allow-context-aware`.
    Denied,
    /// kwctl with `--allow-context-aware` on an annotated policy: its `contextAwareResources`.
    AllowList(BTreeSet<ContextAwareResource>),
    /// Any resource (replay-runner with `--allow-context-aware` on a policy without metadata;
    /// kwctl would deny everything there).
    AllowAll,
}

impl ContextAwareAccess {
    pub(crate) fn allows(&self, api_version: &str, kind: &str) -> bool {
        match self {
            ContextAwareAccess::Denied => false,
            ContextAwareAccess::AllowAll => true,
            ContextAwareAccess::AllowList(list) => list.contains(&ContextAwareResource {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            }),
        }
    }
}

/// kubewarden-policy-sdk 0.17 `ListAllResourcesRequest`. `field_masks` defaults so that guests
/// built with older SDKs (no masks) are served too.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ListAllResourcesRequest {
    pub api_version: String,
    pub kind: String,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    #[serde(default)]
    pub field_masks: Option<BTreeSet<String>>,
}

/// kubewarden-policy-sdk 0.17 `ListResourcesByNamespaceRequest`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ListResourcesByNamespaceRequest {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    #[serde(default)]
    pub field_masks: Option<BTreeSet<String>>,
}

/// kubewarden-policy-sdk 0.17 `GetResourceRequest`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GetResourceRequest {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    pub disable_cache: bool,
    #[serde(default)]
    pub field_masks: Option<BTreeSet<String>>,
}

/// A Kubernetes host call as the guest made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesCall {
    /// What policy-evaluator turns it into (and what kwctl records and matches).
    pub request: CallbackRequestType,
}

impl KubernetesCall {
    /// Parses the guest's payload for `operation`, as policy-evaluator does.
    pub fn parse(operation: &str, payload: &[u8]) -> Result<Option<Self>, serde_json::Error> {
        Ok(Some(match operation {
            "list_resources_all" => {
                let r: ListAllResourcesRequest = serde_json::from_slice(payload)?;
                KubernetesCall {
                    request: CallbackRequestType::KubernetesListResourceAll {
                        api_version: r.api_version,
                        kind: r.kind,
                        label_selector: r.label_selector,
                        field_selector: r.field_selector,
                        field_masks: r.field_masks,
                    },
                }
            }
            "list_resources_by_namespace" => {
                let r: ListResourcesByNamespaceRequest = serde_json::from_slice(payload)?;
                KubernetesCall {
                    request: CallbackRequestType::KubernetesListResourceNamespace {
                        api_version: r.api_version,
                        kind: r.kind,
                        namespace: r.namespace,
                        label_selector: r.label_selector,
                        field_selector: r.field_selector,
                        field_masks: r.field_masks,
                    },
                }
            }
            "get_resource" => {
                let r: GetResourceRequest = serde_json::from_slice(payload)?;
                KubernetesCall {
                    request: CallbackRequestType::KubernetesGetResource {
                        api_version: r.api_version,
                        kind: r.kind,
                        name: r.name,
                        namespace: r.namespace,
                        disable_cache: r.disable_cache,
                        field_masks: r.field_masks,
                    },
                }
            }
            _ => return Ok(None),
        }))
    }

    pub fn api_version_kind(&self) -> (&str, &str) {
        self.request.api_version_kind()
    }

    pub fn field_masks(&self) -> Option<&BTreeSet<String>> {
        self.request.field_masks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sdk_payloads_parse_into_kwctl_requests() {
        let call = KubernetesCall::parse(
            "get_resource",
            br#"{"api_version":"v1","kind":"Namespace","name":"a","namespace":null,"disable_cache":true,"field_masks":["metadata.name"]}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            call.request,
            CallbackRequestType::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                name: "a".into(),
                namespace: None,
                disable_cache: true,
                field_masks: Some(["metadata.name".to_string()].into()),
            }
        );
        // Older SDKs send no field_masks.
        let call = KubernetesCall::parse(
            "list_resources_by_namespace",
            br#"{"api_version":"v1","kind":"Pod","namespace":"n","label_selector":"a=b","field_selector":null}"#,
        )
        .unwrap()
        .unwrap();
        assert!(call.field_masks().is_none());
        assert!(KubernetesCall::parse("can_i", b"{}").unwrap().is_none());
        assert!(KubernetesCall::parse("get_resource", b"{}").is_err());
    }
}
