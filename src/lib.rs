//! Kubewarden policy: Cozystack tenant quotas as reservation limits.
//!
//! This file holds only the waPC entry points and their wiring. The rooms, in the order a
//! request walks them:
//! - [`review`]: one request, start to verdict: intake, then the application gate or the
//!   Tenant declaration gate;
//! - [`context`]: the cluster as one request sees it: the tenants above the namespace, the
//!   pools read from their roots down (`context/scope.rs`), each list read once, charges cached;
//! - [`cluster`]: every Kubernetes lookup, behind one interface (host and fixture);
//! - [`charge`]: what one application reserves (definition, values, evaluation, presets);
//! - [`pool`]: the tenant tree and its pools, one [`pool::Pool`] per key;
//! - [`decision`]: does the write fit, and every figure message;
//! - [`keys`], [`quantity`], [`resources`]: the vocabulary, exact quantities and their sums;
//! - [`settings`]: the policy settings and their validation;
//! - [`summary`]: a pool's `PoolReservation` summary: its status, how a write trusts and sums
//!   it (`poolSummary`), and every summary of a cluster, computed as the controller will;
//! - [`ledger`]: every pool's standing at once (the `ledger` command, not an admission).

use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::request::ValidationRequest;
use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::{SettingsValidationResponse, Validatable};
use kubewarden_policy_sdk::wapc_guest::prelude::*;

pub mod builtin;
mod charge;
pub mod cluster;
mod context;
mod decision;
mod json;
pub mod keys;
pub mod ledger;
mod pool;
pub mod quantity;
mod resources;
mod review;
pub mod settings;
pub mod summary;

pub use context::{Context, NAMESPACE_LISTS};
pub use pool::{owned_namespace, owner_of, tree::ROOT_NAMESPACE};
pub use resources::Resources;
pub use review::Verdict;
use settings::Settings;

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

fn validate(payload: &[u8]) -> CallResult {
    let verdict = validate_payload(payload, &cluster::host::Host);
    log_decision(&verdict);
    respond(verdict)
}

/// One structured record per check made (and one for a verdict reached without any), sent
/// to the host's log: visible under `kwctl run` and in policy-server's log.
fn log_decision(verdict: &Verdict) {
    use kubewarden_policy_sdk::logging::KubewardenDrain;
    use slog::{Logger, info, o};
    use std::sync::OnceLock;
    static LOG: OnceLock<Logger> = OnceLock::new();
    let log = LOG
        .get_or_init(|| Logger::root(KubewardenDrain::new(), o!("policy" => "tenant-reservation")));
    let subject = verdict.subject.as_deref().unwrap_or("");
    let message = verdict.message.as_deref().unwrap_or("");
    if verdict.records.is_empty() {
        info!(log, "decision"; "subject" => subject, "allowed" => verdict.allowed, "message" => message);
    }
    for r in &verdict.records {
        info!(log, "decision";
            "subject" => subject,
            "pool" => &r.pool,
            "key" => &r.key,
            "budget" => keys::show(&r.key, r.budget),
            "carved" => keys::show(&r.key, r.carved),
            "reserved" => keys::show(&r.key, r.reserved),
            "growth" => keys::show(&r.key, r.growth),
            "fits" => r.fits,
            "allowed" => verdict.allowed,
        );
    }
}

/// Decides a raw `validate` payload against `k8s`: the whole policy, minus the waPC wiring.
pub fn validate_payload(payload: &[u8], k8s: &dyn cluster::Kubernetes) -> Verdict {
    match serde_json::from_slice::<ValidationRequest<Settings>>(payload) {
        Ok(request) => review::review(&request.request, &request.settings, k8s),
        // DELETE and CONNECT pass whatever their objects hold (one nested past serde_json's
        // depth limit, say): read only the operation, skipping the rest unparsed.
        Err(_) if operation_only(payload).is_some_and(|op| op == "DELETE" || op == "CONNECT") => {
            Verdict::accept(Vec::new())
        }
        Err(e) => Verdict::reject(
            review::Refusal::Unreadable(e.to_string()).to_string(),
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
