//! One admission request, start to verdict: read the request into a [`subject::Subject`], then hand
//! it to its gate, [`application`] (every kind but Tenant) or [`tenant`] (the declaration
//! gate). Generic over [`Kubernetes`], so it runs natively in tests.
//!
//! Every refusal is a [`Refusal`], turned into text only in the verdict, which names the
//! subject.
//!
//! - here: which gate decides a request;
//! - [`subject`]: intake, the request read into a [`subject::Subject`];
//! - [`verdict`]: the [`Verdict`] and the [`verdict::Notes`] a gate takes beside it;
//! - [`refusal`]: every reason a write is refused;
//! - [`outcome`]: how every gate ends (`siblingFailure`, then the violations);
//! - [`text`]: long texts kept readable.

mod application;
mod outcome;
mod refusal;
mod subject;
mod tenant;
mod text;
mod verdict;

use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;

use crate::cluster::Kubernetes;
use crate::cluster::permissions::Checked;
use crate::context::Context;
use crate::keys::{GROUP, TENANT_KIND};
use crate::settings::Settings;

pub use refusal::Refusal;
pub use verdict::Verdict;

/// Decides one admission request.
pub fn review(
    request: &KubernetesAdmissionRequest,
    settings: &Settings,
    k8s: &dyn Kubernetes,
) -> Verdict {
    match request.operation.as_str() {
        // A subresource write (status) cannot change the values a reservation reads.
        "CREATE" | "UPDATE" if !request.sub_resource.is_empty() => Verdict::accept(Vec::new()),
        "CREATE" | "UPDATE" if request.kind.group != GROUP => Verdict::accept(vec![format!(
            "{}/{} {} is not an {GROUP} application: this policy does not check it",
            request.kind.group, request.kind.version, request.kind.kind
        )]),
        "CREATE" | "UPDATE" => Verdict::of(|notes| {
            let subject = subject::subject_of(request, notes)?;
            // policy-server's permissions checked before each resource's first list.
            let guarded;
            let k8s = match settings.policy_server_user.as_deref() {
                Some(user) => {
                    guarded = Checked::new(k8s, user);
                    &guarded as &dyn Kubernetes
                }
                None => k8s,
            };
            let context = Context::new(settings, k8s).map_err(Refusal::Settings)?;
            let checked = if subject.kind == TENANT_KIND {
                tenant::check(&subject, &context, notes)
            } else {
                application::check(&subject, &context, notes)
            };
            // Tenant releases of the namespace written to that bound nothing, if it was read.
            let unplaced = context.unplaced_in(subject.namespace);
            notes.warnings.splice(0..0, unplaced);
            checked
        }),
        "DELETE" | "CONNECT" => Verdict::accept(Vec::new()),
        other => Verdict::reject(
            Refusal::UnsupportedOperation(other.to_string()).to_string(),
            Vec::new(),
        ),
    }
}
