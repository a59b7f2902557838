//! The Kubewarden host: a lookup of the whole cluster is one
//! `kubewarden/kubernetes/list_resources_all` call, one of a namespace one
//! `list_resources_by_namespace` call, a permission check one `can_i` call, a pool summary one
//! `get_resource` call.

use std::collections::BTreeSet;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    ResourceAttributes, SubjectAccessReview, can_i,
};

use super::permissions::User;
use super::{Access, Kubernetes, Lookup, Permission};
use crate::summary;

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
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload).map_err(|e| {
            format!(
                "cannot list {}: {}",
                lookup.describe(),
                one_line(&e.to_string())
            )
        })
    }

    /// `kubewarden/kubernetes/get_resource`, through policy-server's 5 s cache: a cached copy
    /// carries its own `renewedAt`, so the trust rule bounds its age as it bounds a fresh one's,
    /// and a warm write makes no API round trip.
    fn pool_summary(&self, namespace: &str) -> Result<Vec<u8>, String> {
        let payload = serde_json::to_vec(&GetResourceRequest {
            api_version: format!("{}/{}", summary::GROUP, summary::VERSION),
            kind: summary::KIND.to_string(),
            name: namespace.to_string(),
            namespace: Some(namespace.to_string()),
            disable_cache: false,
            field_masks: None,
        })
        .map_err(|e| e.to_string())?;
        wapc_guest::host_call("kubewarden", "kubernetes", "get_resource", &payload)
            .map_err(|e| one_line(&e.to_string()))
    }

    /// `kubewarden/kubernetes/can_i`: a SubjectAccessReview in every namespace, cached 5 s by
    /// policy-server.
    fn can_i(&self, user: &User, permission: &Permission) -> Result<Access, String> {
        let request = CanIRequest {
            subject_access_review: SubjectAccessReview {
                groups: Some(user.groups.clone()),
                resource_attributes: ResourceAttributes {
                    group: Some(permission.group.to_string()),
                    resource: permission.resource.to_string(),
                    verb: permission.verb.to_string(),
                    ..ResourceAttributes::default()
                },
                user: user.name.clone(),
            },
            disable_cache: false,
        };
        let status = can_i(request).map_err(|e| one_line(&e.to_string()))?;
        Ok(Access {
            allowed: status.allowed,
            reason: status.reason.unwrap_or_default(),
        })
    }
}

/// A host call's error as policy-server reports it (anyhow's report: the error, `Caused by:`
/// and its causes, then a stack backtrace) on one line, for a refusal: the errors joined by
/// `: `.
fn one_line(report: &str) -> String {
    let errors = report.split("Stack backtrace:").next().unwrap_or(report);
    let (error, causes) = errors.split_once("Caused by:").unwrap_or((errors, ""));
    let causes = causes.lines().map(|line| {
        let line = line.trim();
        // A cause of several is numbered: `0: ...`.
        match line.split_once(": ") {
            Some((n, rest)) if n.parse::<u32>().is_ok() => rest,
            _ => line,
        }
    });
    error
        .lines()
        .map(str::trim)
        .chain(causes)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_hosts_error_report_is_one_line_without_its_backtrace() {
        let report = "host call failed: kubernetes.can_i\n\nCaused by:\n    subjectaccessreviews.authorization.k8s.io is forbidden: User \"u\" cannot create\n\nStack backtrace:\n   0: <unknown>\n   1: start_thread\n             at ./nptl/pthread_create.c:442:8";
        assert_eq!(
            one_line(report),
            "host call failed: kubernetes.can_i: subjectaccessreviews.authorization.k8s.io is forbidden: User \"u\" cannot create"
        );
        let causes = "outer\n\nCaused by:\n    0: middle\n    1: inner";
        assert_eq!(one_line(causes), "outer: middle: inner");
        assert_eq!(one_line("plain"), "plain");
        // Only a cause's number is dropped, not a number that opens the error.
        assert_eq!(one_line("404: not found"), "404: not found");
    }
}
