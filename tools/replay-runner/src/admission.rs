//! The admission request sent to the guest and the admission response printed to the user,
//! modelled field by field on policy-evaluator 0.30 (`admission_request.rs`,
//! `admission_response.rs`, `policy_evaluator.rs`) so that the bytes match what `kwctl run`
//! sends and prints.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Result, anyhow};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `admission/v1` AdmissionRequest, as policy-evaluator models it. Unknown fields are dropped and
/// absent optional fields are not serialized, exactly like policy-evaluator does before sending
/// the request to the guest.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub operation: String,
    pub user_info: UserInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, Eq, PartialEq)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, Eq, PartialEq)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// `authentication/v1` UserInfo, as k8s-openapi models it (every field optional, `None`
/// omitted).
#[derive(Clone, Debug, Default, Serialize, Deserialize, Eq, PartialEq)]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// Reads a request the way `kwctl run --request-path` does: an `AdmissionReview` (its
/// `.request` is used) or a bare admission request. The messages are kwctl's.
pub fn parse_admission_request(request: &Value) -> Result<AdmissionRequest> {
    let object = request
        .as_object()
        .ok_or_else(|| anyhow!("Invalid request object"))?;
    let req_obj = if object.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        object
            .get("request")
            .cloned()
            .ok_or_else(|| anyhow!("invalid AdmissionReview object"))?
    } else {
        request.clone()
    };
    serde_json::from_value(req_obj)
        .map_err(|e| anyhow!("cannot build AdmissionRequest object from given input: {e}"))
}

/// Policy settings: a JSON object (`null` means `{}`), like policy-evaluator's `PolicySettings`.
pub type PolicySettings = Map<String, Value>;

/// policy-evaluator's `PolicySettings::try_from(&Value)`.
pub fn settings_from_value(value: &Value) -> Result<PolicySettings> {
    match value {
        Value::Null => Ok(Map::new()),
        Value::Object(obj) => Ok(obj.clone()),
        _ => Err(anyhow!("Invalid settings in CRD, not an object")),
    }
}

/// The bytes given to the guest's `validate`: `{"request": ..., "settings": ...}`. policy-evaluator
/// builds this with `json!`, so every object's keys come out sorted.
pub fn validate_payload(request: &AdmissionRequest, settings: &PolicySettings) -> Vec<u8> {
    let params = serde_json::json!({ "request": request, "settings": settings });
    serde_json::to_vec(&params).expect("a JSON value always serializes")
}

/// The guest's answer to `validate` (kubewarden-policy-sdk `ValidationResponse`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct PolicyValidationResponse {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    pub mutated_object: Option<Value>,
    pub audit_annotations: Option<HashMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

/// The guest's answer to `validate_settings` (kubewarden-policy-sdk `SettingsValidationResponse`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct SettingsValidationResponse {
    pub valid: bool,
    pub message: Option<String>,
}

/// What `kwctl run` prints: policy-evaluator's `AdmissionResponse`, with its field order and
/// omission rules (`auditAnnotations` and `warnings` are always present, `null` when unset).
/// Audit annotations use a sorted map so the output is deterministic (policy-evaluator uses a
/// `HashMap`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<PatchType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionResponseStatus>,
    pub audit_annotations: Option<BTreeMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum PatchType {
    #[serde(rename = "JSONPatch")]
    #[default]
    JsonPatch,
}

/// The subset of policy-evaluator's `AdmissionResponseStatus` that a single policy run fills
/// (`status`, `reason` and `details` are only set by policy-server's group/custom-message paths).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AdmissionResponseStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

impl AdmissionResponse {
    /// policy-evaluator's `AdmissionResponse::from_policy_validation_response`. `req_obj` is the
    /// request's `object` (absent for DELETE).
    pub fn from_policy_validation_response(
        uid: String,
        req_obj: Option<&Value>,
        resp: &PolicyValidationResponse,
    ) -> Result<AdmissionResponse> {
        if resp.mutated_object.is_some() && req_obj.is_none() {
            return Ok(AdmissionResponse {
                uid,
                allowed: false,
                status: Some(AdmissionResponseStatus {
                    message: Some(
                        "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed".to_string(),
                    ),
                    code: None,
                }),
                ..Default::default()
            });
        }
        let patch = match (&resp.mutated_object, req_obj) {
            (Some(mutated), Some(original)) => {
                let diff = json_patch::diff(original, mutated);
                if diff.0.is_empty() {
                    None
                } else {
                    let diff = serde_json::to_string(&diff)?;
                    Some(base64::engine::general_purpose::STANDARD.encode(diff))
                }
            }
            _ => None,
        };
        let status = if resp.message.is_some() || resp.code.is_some() {
            Some(AdmissionResponseStatus {
                message: resp.message.clone(),
                code: resp.code,
            })
        } else {
            None
        };
        Ok(AdmissionResponse {
            uid,
            allowed: resp.accepted,
            patch_type: patch.as_ref().map(|_| PatchType::JsonPatch),
            patch,
            status,
            audit_annotations: resp
                .audit_annotations
                .as_ref()
                .map(|a| a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            warnings: resp.warnings.clone(),
        })
    }

    /// policy-evaluator's `reject_internal_server_error`: what kwctl prints when the guest call
    /// fails.
    pub fn reject_internal_server_error(uid: String, message: String) -> AdmissionResponse {
        AdmissionResponse {
            uid,
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(format!("internal server error: {message}")),
                code: Some(500),
            }),
            ..Default::default()
        }
    }

    /// The line `kwctl run` prints on stdout.
    pub fn to_kwctl_json(&self) -> String {
        serde_json::to_string(self).expect("an AdmissionResponse always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal_request() -> Value {
        json!({
            "uid": "abc",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": null},
            "object": {"metadata": {"name": "p"}, "apiVersion": "v1"},
            "oldObject": null,
            "unknownField": 1
        })
    }

    #[test]
    fn admission_review_and_bare_request_are_both_accepted() {
        let bare = parse_admission_request(&minimal_request()).unwrap();
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": minimal_request()});
        assert_eq!(parse_admission_request(&review).unwrap(), bare);
    }

    #[test]
    fn payload_drops_unknown_and_null_fields_and_sorts_keys() {
        let req = parse_admission_request(&minimal_request()).unwrap();
        let payload = String::from_utf8(validate_payload(&req, &Map::new())).unwrap();
        assert_eq!(
            payload,
            r#"{"request":{"kind":{"group":"","kind":"Pod","version":"v1"},"object":{"apiVersion":"v1","metadata":{"name":"p"}},"operation":"CREATE","resource":{"group":"","resource":"pods","version":"v1"},"uid":"abc","userInfo":{"username":"alice"}},"settings":{}}"#
        );
    }

    #[test]
    fn not_a_request_is_rejected_with_kwctl_messages() {
        let err = parse_admission_request(&json!([1])).unwrap_err();
        assert_eq!(err.to_string(), "Invalid request object");
        let err = parse_admission_request(&json!({"kind": "AdmissionReview"})).unwrap_err();
        assert_eq!(err.to_string(), "invalid AdmissionReview object");
        let err =
            parse_admission_request(&json!({"apiVersion": "v1", "metadata": {}})).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "cannot build AdmissionRequest object from given input: missing field `uid`"
            ),
            "{err}"
        );
    }

    #[test]
    fn response_serialization_matches_kwctl() {
        let accepted = AdmissionResponse::from_policy_validation_response(
            "u".into(),
            None,
            &PolicyValidationResponse {
                accepted: true,
                message: None,
                code: None,
                mutated_object: None,
                audit_annotations: None,
                warnings: None,
            },
        )
        .unwrap();
        assert_eq!(
            accepted.to_kwctl_json(),
            r#"{"uid":"u","allowed":true,"auditAnnotations":null,"warnings":null}"#
        );
        let rejected = AdmissionResponse::from_policy_validation_response(
            "u".into(),
            None,
            &PolicyValidationResponse {
                accepted: false,
                message: Some("no".into()),
                code: Some(403),
                mutated_object: None,
                audit_annotations: None,
                warnings: Some(vec!["w".into()]),
            },
        )
        .unwrap();
        assert_eq!(
            rejected.to_kwctl_json(),
            r#"{"uid":"u","allowed":false,"status":{"message":"no","code":403},"auditAnnotations":null,"warnings":["w"]}"#
        );
    }

    #[test]
    fn mutation_becomes_a_base64_json_patch() {
        let original = json!({"a": 1});
        let resp = PolicyValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object: Some(json!({"a": 1, "b": 2})),
            audit_annotations: None,
            warnings: None,
        };
        let out =
            AdmissionResponse::from_policy_validation_response("u".into(), Some(&original), &resp)
                .unwrap();
        assert_eq!(out.patch_type, Some(PatchType::JsonPatch));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(out.patch.as_ref().unwrap())
            .unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            r#"[{"op":"add","path":"/b","value":2}]"#
        );
        let json = out.to_kwctl_json();
        assert!(json.starts_with(r#"{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":""#));

        // An unchanged "mutated" object is no mutation.
        let same = PolicyValidationResponse {
            mutated_object: Some(original.clone()),
            ..resp.clone()
        };
        let out =
            AdmissionResponse::from_policy_validation_response("u".into(), Some(&original), &same)
                .unwrap();
        assert!(out.patch.is_none() && out.patch_type.is_none());

        // Mutating a DELETE (no object) is refused.
        let out =
            AdmissionResponse::from_policy_validation_response("u".into(), None, &resp).unwrap();
        assert!(!out.allowed);
    }

    #[test]
    fn settings_must_be_an_object_or_null() {
        assert!(settings_from_value(&Value::Null).unwrap().is_empty());
        assert_eq!(settings_from_value(&json!({"a": 1})).unwrap().len(), 1);
        assert!(settings_from_value(&json!([1])).is_err());
    }
}
