//! `--what-if`: would one write fit? The policy's own `validate_payload`, natively, on the
//! same cluster the ledger reads, with the payload built as policy-evaluator builds it.
//!
//! The write is an AdmissionReview (or a bare admission request), as `kwctl run` takes it,
//! or a bare manifest: an application (`apps.cozystack.io/v1alpha1`) or the HelmRelease that
//! stores one. A manifest is a CREATE, or an UPDATE of the application stored under the same
//! namespace, kind and name, whose stored version becomes the `oldObject`.

use std::collections::BTreeSet;

use anyhow::{Context, Result, anyhow, bail};
use replay_runner::admission::{
    AdmissionRequest, parse_admission_request, settings_from_value, validate_payload,
};
use serde_json::{Value, json};
use tenant_reservation_policy::Verdict;
use tenant_reservation_policy::cluster::{HELM_RELEASE, Kubernetes, Lookup};
use tenant_reservation_policy::keys::{APPLICATIONS_API, KIND_LABEL, NAME_LABEL};
use tenant_reservation_policy::settings::without_permission_check;

/// One write and the policy's verdict on it.
pub struct WhatIf {
    pub request: AdmissionRequest,
    pub verdict: Verdict,
}

/// Decides the write `document` holds against `k8s` under `settings`.
pub fn decide(document: &Value, settings: &Value, k8s: &dyn Kubernetes) -> Result<WhatIf> {
    let request = request_of(document, k8s)?;
    // The what-if reads the cluster as its user, not as policy-server: policy-server's own
    // permissions (policyServerUser) are not what it asks.
    let settings = settings_from_value(&without_permission_check(settings.clone()))?;
    let verdict =
        tenant_reservation_policy::validate_payload(&validate_payload(&request, &settings), k8s);
    Ok(WhatIf { request, verdict })
}

/// The admission request of an AdmissionReview, a bare request or a manifest.
pub fn request_of(document: &Value, k8s: &dyn Kubernetes) -> Result<AdmissionRequest> {
    let is_review = document["kind"] == "AdmissionReview"
        || (document.get("operation").is_some() && document.get("uid").is_some());
    if is_review {
        return parse_admission_request(document);
    }
    let object = application_of(document)?;
    let namespace = text(&object["metadata"]["namespace"])
        .ok_or_else(|| anyhow!("the manifest names no metadata.namespace"))?;
    let name = text(&object["metadata"]["name"])
        .ok_or_else(|| anyhow!("the manifest names no metadata.name"))?;
    let kind = text(&object["kind"]).unwrap_or_default();
    let stored = stored(k8s, &namespace, &kind, &name)?;
    let (group, version) = APPLICATIONS_API.split_once('/').unwrap_or_default();
    let request = json!({
        "uid": "tenant-reservation-ledger-what-if",
        "kind": {"group": group, "version": version, "kind": kind},
        // The plural as the Cozystack API server names it (vminstances, tenants).
        "resource": {"group": group, "version": version, "resource": format!("{}s", kind.to_lowercase())},
        "name": name,
        "namespace": namespace,
        "operation": if stored.is_some() { "UPDATE" } else { "CREATE" },
        "userInfo": {"username": "tenant-reservation-ledger"},
        "object": object,
        "oldObject": stored,
    });
    parse_admission_request(&request)
}

fn text(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

/// The application a manifest declares: itself, or the one a HelmRelease stores.
fn application_of(document: &Value) -> Result<Value> {
    let api_version = document["apiVersion"].as_str().unwrap_or_default();
    let kind = document["kind"].as_str().unwrap_or_default();
    if (api_version, kind) == HELM_RELEASE {
        return from_release(document).context("the HelmRelease stores no application");
    }
    if api_version != APPLICATIONS_API {
        bail!(
            "{api_version} {kind} is not a write the policy decides: give an AdmissionReview, an {APPLICATIONS_API} application or the HelmRelease of one"
        );
    }
    Ok(document.clone())
}

/// The application a stored HelmRelease holds: its kind and name from the Cozystack labels,
/// its spec from `spec.values`.
fn from_release(release: &Value) -> Result<Value> {
    let labels = &release["metadata"]["labels"];
    let kind = text(&labels[KIND_LABEL]).ok_or_else(|| anyhow!("no label {KIND_LABEL}"))?;
    let name = text(&labels[NAME_LABEL]).ok_or_else(|| anyhow!("no label {NAME_LABEL}"))?;
    Ok(json!({
        "apiVersion": APPLICATIONS_API,
        "kind": kind,
        "metadata": {"name": name, "namespace": release["metadata"]["namespace"]},
        "spec": release["spec"]["values"].clone(),
    }))
}

/// The stored version of the application `kind` `namespace/name`, as an application.
fn stored(k8s: &dyn Kubernetes, namespace: &str, kind: &str, name: &str) -> Result<Option<Value>> {
    let lookup = Lookup::Applications {
        namespace: namespace.to_string(),
    };
    let masks: BTreeSet<String> = ["metadata", "spec.values"].map(String::from).into();
    let bytes = k8s.list(&lookup, &masks).map_err(|e| anyhow!(e))?;
    let list: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a list", lookup.describe()))?;
    let found = list["items"].as_array().into_iter().flatten().find(|hr| {
        let labels = &hr["metadata"]["labels"];
        labels[KIND_LABEL] == kind && labels[NAME_LABEL] == name
    });
    found.map(from_release).transpose()
}

impl WhatIf {
    /// `VMInstance tenant-foo/db1`.
    pub fn subject(&self) -> String {
        self.verdict.subject.clone().unwrap_or_else(|| {
            format!(
                "{} {}/{}",
                self.request.kind.kind,
                self.request.namespace.as_deref().unwrap_or_default(),
                self.request.name.as_deref().unwrap_or_default()
            )
        })
    }

    /// The verdict and the policy's figures, for people.
    pub fn render(&self) -> String {
        let verdict = if self.verdict.allowed {
            "fits: accepted"
        } else {
            "does not fit: refused"
        };
        let mut out = format!(
            "{} ({}): {verdict}\n",
            self.subject(),
            self.request.operation
        );
        if let Some(message) = &self.verdict.message {
            out.push_str(&format!("  {message}\n"));
        }
        for r in &self.verdict.records {
            let show = |q| tenant_reservation_policy::keys::show(&r.key, q);
            out.push_str(&format!(
                "  pool {} {}: budget {}, carved {}, reserved {}, growth {}: {}\n",
                r.pool,
                r.key,
                show(r.budget),
                show(r.carved),
                show(r.reserved),
                show(r.growth),
                if r.fits { "fits" } else { "does not fit" },
            ));
        }
        for warning in &self.verdict.warnings {
            out.push_str(&format!("  warning: {warning}\n"));
        }
        out
    }

    /// The verdict and the figures for scripts.
    pub fn to_json(&self) -> Value {
        json!({
            "subject": self.subject(),
            "operation": self.request.operation,
            "allowed": self.verdict.allowed,
            "message": self.verdict.message,
            "warnings": self.verdict.warnings,
            "records": self.verdict.records.iter().map(|r| {
                let show = |q| tenant_reservation_policy::keys::show(&r.key, q);
                json!({
                    "pool": r.pool,
                    "key": r.key,
                    "budget": show(r.budget),
                    "carved": show(r.carved),
                    "reserved": show(r.reserved),
                    "growth": show(r.growth),
                    "fits": r.fits,
                })
            }).collect::<Vec<_>>(),
        })
    }
}
