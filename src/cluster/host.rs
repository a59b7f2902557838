//! The Kubewarden host: each query is one `kubewarden/kubernetes/list_resources_all` call.

use std::collections::BTreeSet;

use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;

use super::{Kubernetes, Query};

pub struct Host;

impl Kubernetes for Host {
    fn list(
        &self,
        query: Query,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        let request = ListAllResourcesRequest {
            api_version: query.api_version().to_string(),
            kind: query.kind().to_string(),
            label_selector: query.label_selector().map(str::to_string),
            field_selector: None,
            field_masks: field_masks.cloned(),
        };
        let payload = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
        wapc_guest::host_call("kubewarden", "kubernetes", "list_resources_all", &payload)
            .map_err(|e| format!("cannot list {} {}: {e}", query.api_version(), query.kind()))
    }
}
