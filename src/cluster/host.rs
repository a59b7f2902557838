//! The Kubewarden host: a lookup of the whole cluster is one
//! `kubewarden/kubernetes/list_resources_all` call, one of a namespace one
//! `list_resources_by_namespace` call.

use std::collections::BTreeSet;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};

use super::{Kubernetes, Lookup};

pub struct Host;

impl Kubernetes for Host {
    fn list(&self, lookup: &Lookup, field_masks: &BTreeSet<String>) -> Result<Vec<u8>, String> {
        let (api_version, kind) = lookup.resource();
        let (operation, payload) = match lookup.namespace() {
            None => (
                "list_resources_all",
                serde_json::to_vec(&ListAllResourcesRequest {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                    label_selector: lookup.label_selector(),
                    field_selector: lookup.field_selector(),
                    field_masks: Some(field_masks.clone()),
                }),
            ),
            Some(namespace) => (
                "list_resources_by_namespace",
                serde_json::to_vec(&ListResourcesByNamespaceRequest {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                    namespace: namespace.to_string(),
                    label_selector: lookup.label_selector(),
                    field_selector: lookup.field_selector(),
                    field_masks: Some(field_masks.clone()),
                }),
            ),
        };
        let payload = payload.map_err(|e| e.to_string())?;
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload)
            .map_err(|e| format!("cannot list {}: {e}", lookup.describe()))
    }
}
