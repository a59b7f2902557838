//! Kubewarden policy: Cozystack tenant quotas as reservation limits.
//!
//! This file holds only the waPC entry points and their wiring. Where things are:
//! - [`admission`]: one request, start to verdict; [`tenant_gate`]: Tenant writes.
//! - [`evaluate`]: what one application reserves, read from its values ([`values`]) by the
//!   `spec.reservation` contract of its [`definition`], sized by [`presets`] or instance types.
//! - [`pool`]: the tenant tree and its pools; [`decision`]: does the write fit.
//! - [`cluster`]: every Kubernetes lookup, behind one interface (host and fixture).
//! - [`quantity`], [`resources`]: exact Kubernetes quantities and their sums.

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::{SettingsValidationResponse, Validatable};
use kubewarden_policy_sdk::wapc_guest::prelude::*;

pub mod admission;
pub mod cluster;
pub mod decision;
pub mod definition;
pub mod evaluate;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod pool;
pub mod presets;
pub mod quantity;
pub mod resources;
pub mod settings;
pub mod tenant_gate;
pub mod values;

use admission::Verdict;
use settings::Settings;

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    respond(validate_payload(payload, &cluster::host::Host))
}

/// Decides a raw `validate` payload against `k8s`: the whole policy, minus the waPC wiring.
pub fn validate_payload(payload: &[u8], k8s: &dyn cluster::Kubernetes) -> Verdict {
    match serde_json::from_slice::<ValidationRequest<Settings>>(payload) {
        Ok(request) => admission::review(&request.request, &request.settings, k8s),
        // DELETE and CONNECT pass whatever their objects hold (one nested past serde_json's
        // depth limit, say): read only the operation, skipping the rest unparsed.
        Err(_) if operation_only(payload).is_some_and(|op| op == "DELETE" || op == "CONNECT") => {
            Verdict::accept(Vec::new())
        }
        Err(e) => Verdict::reject(
            format!("the admission request cannot be read: {e}"),
            Vec::new(),
        ),
    }
}

fn operation_only(payload: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Payload {
        request: Operation,
    }
    #[derive(serde::Deserialize)]
    struct Operation {
        operation: String,
    }
    serde_json::from_slice::<Payload>(payload)
        .ok()
        .map(|p| p.request.operation)
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&check_settings(payload))?)
}

/// Like the SDK's helper, but a settings document that does not even parse (a typo in a
/// field name, a wrong type) is reported as invalid settings with serde's message, not as a
/// policy error.
pub fn check_settings(payload: &[u8]) -> SettingsValidationResponse {
    let outcome = serde_json::from_slice::<Settings>(payload)
        .map_err(|e| e.to_string())
        .and_then(|s| s.validate());
    SettingsValidationResponse {
        valid: outcome.is_ok(),
        message: outcome.err(),
    }
}

fn respond(verdict: Verdict) -> CallResult {
    let response = ValidationResponse {
        accepted: verdict.allowed,
        message: verdict.message,
        code: None,
        mutated_object: None,
        audit_annotations: None,
        warnings: (!verdict.warnings.is_empty()).then_some(verdict.warnings),
    };
    Ok(serde_json::to_vec(&response)?)
}
