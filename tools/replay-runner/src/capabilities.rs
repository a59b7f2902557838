//! The host side of the guest's waPC host calls: what Kubewarden's policy-evaluator
//! (`runtimes/callback.rs`) does with `__host_call`, for the calls a context-aware policy makes.
//!
//! * `kubewarden` / `tracing` / `log`: the SDK's log drain. Accepted, answered with nothing,
//!   never recorded; printed on stderr when [`LogMode::Stderr`].
//! * `kubewarden` / `kubernetes` / `list_resources_all`, `list_resources_by_namespace`,
//!   `get_resource`: checked against the context-aware allow-list, then answered by an
//!   [`Answerer`] (a session replay, a cluster state, a recorder around one, or a closure).
//! * anything else: refused, naming the binding, namespace and operation.
//!
//! Errors that a real host gives the policy (not found, wrong scope, a recorded `type: Error`)
//! go back to the guest as host-call errors with policy-evaluator's wording. Calls the run
//! cannot answer faithfully (not in the session, not allowed, unsupported) also go back to the
//! guest as errors, and are collected as *violations*: the runner fails the run on any.

use serde_json::Value;

use crate::answers::{Answer, Answerer};
use crate::calls::{ContextAwareAccess, KubernetesCall};

/// What to do with the guest's log events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogMode {
    #[default]
    Ignore,
    Stderr,
}

/// Host-call counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCallStats {
    /// Kubernetes calls (list/get), whatever their outcome.
    pub kubernetes_calls: u64,
    /// `tracing/log` calls.
    pub log_calls: u64,
    /// Calls to anything else (always refused).
    pub other_calls: u64,
    /// Calls answered with an error (including violations).
    pub failed_calls: u64,
    /// Bytes of the guest's Kubernetes call payloads.
    pub request_bytes: u64,
    /// Bytes of successful answers given to the guest.
    pub response_bytes: u64,
}

impl HostCallStats {
    pub fn add(&mut self, other: &HostCallStats) {
        self.kubernetes_calls += other.kubernetes_calls;
        self.log_calls += other.log_calls;
        self.other_calls += other.other_calls;
        self.failed_calls += other.failed_calls;
        self.request_bytes += other.request_bytes;
        self.response_bytes += other.response_bytes;
    }
}

/// Dispatches host calls; lives behind a mutex shared with the waPC host callback.
pub struct Dispatcher {
    pub access: ContextAwareAccess,
    pub answerer: Box<dyn Answerer>,
    pub log_mode: LogMode,
    /// Counters of the current evaluation.
    pub stats: HostCallStats,
    /// Violations of the current evaluation.
    pub violations: Vec<String>,
}

impl Dispatcher {
    pub fn new(access: ContextAwareAccess, answerer: Box<dyn Answerer>, log_mode: LogMode) -> Self {
        Dispatcher {
            access,
            answerer,
            log_mode,
            stats: HostCallStats::default(),
            violations: Vec::new(),
        }
    }

    fn violation(&mut self, guest_message: String, violation: String) -> Result<Vec<u8>, String> {
        self.stats.failed_calls += 1;
        self.violations.push(violation);
        Err(guest_message)
    }

    /// Handles one `__host_call`: `Ok` is the answer, `Err` the host error the guest reads.
    pub fn host_call(
        &mut self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String> {
        match (binding, namespace) {
            ("kubewarden", "tracing") if operation == "log" => {
                self.stats.log_calls += 1;
                if self.log_mode == LogMode::Stderr {
                    eprintln!("{}", format_log_line(payload));
                }
                Ok(Vec::new())
            }
            ("kubewarden", "kubernetes") => self.kubernetes(operation, payload),
            _ => {
                self.stats.other_calls += 1;
                let guest_message = match (binding, namespace) {
                    ("kubewarden", "tracing" | "oci" | "net" | "crypto") => {
                        format!("unknown operation: {operation}")
                    }
                    ("kubewarden", _) | ("kubernetes", _) => {
                        format!("unknown namespace: {namespace}")
                    }
                    _ => format!("unknown binding: {binding}"),
                };
                self.violation(
                    guest_message,
                    format!(
                        "host call not served by replay-runner: binding {binding:?}, namespace {namespace:?}, operation {operation:?} (served: kubewarden/kubernetes list_resources_all, list_resources_by_namespace, get_resource; kubewarden/tracing log)"
                    ),
                )
            }
        }
    }

    fn kubernetes(&mut self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.stats.kubernetes_calls += 1;
        self.stats.request_bytes += payload.len() as u64;
        let call = match KubernetesCall::parse(operation, payload) {
            Ok(Some(call)) => call,
            Ok(None) => {
                return self.violation(
                    format!("unknown operation: {operation}"),
                    format!(
                        "host call not served by replay-runner: binding \"kubewarden\", namespace \"kubernetes\", operation {operation:?} (served: list_resources_all, list_resources_by_namespace, get_resource)"
                    ),
                );
            }
            Err(e) => {
                return self.violation(
                    e.to_string(),
                    format!(
                        "the policy sent a malformed kubernetes/{operation} request ({e}): {}",
                        String::from_utf8_lossy(payload)
                    ),
                );
            }
        };
        let (api_version, kind) = call.api_version_kind();
        if !self.access.allows(api_version, kind) {
            let guest_message = format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported."
            );
            let hint = match &self.access {
                ContextAwareAccess::Denied => {
                    "context-aware calls need --allow-context-aware".to_string()
                }
                ContextAwareAccess::AllowList(list) => format!(
                    "the policy metadata's contextAwareResources are {:?}",
                    list.iter()
                        .map(|r| format!("{}/{}", r.api_version, r.kind))
                        .collect::<Vec<_>>()
                ),
                ContextAwareAccess::AllowAll => unreachable!(),
            };
            return self.violation(guest_message.clone(), format!("{guest_message} ({hint})"));
        }
        match self.answerer.answer(&call) {
            Answer::Success(bytes) => {
                self.stats.response_bytes += bytes.len() as u64;
                Ok(bytes)
            }
            Answer::Error(message) => {
                self.stats.failed_calls += 1;
                Err(format!("Callback evaluation failure: {message}"))
            }
            Answer::Violation {
                guest_message,
                violation,
            } => self.violation(guest_message, violation),
        }
    }
}

/// `[policy LEVEL] message {other fields}` for a log event of the SDK's drain.
pub fn format_log_line(payload: &[u8]) -> String {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(mut map)) => {
            let level = map
                .remove("level")
                .and_then(|l| l.as_str().map(str::to_uppercase))
                .unwrap_or_else(|| "?".into());
            let message = map
                .remove("message")
                .and_then(|m| m.as_str().map(str::to_string))
                .unwrap_or_default();
            if map.is_empty() {
                format!("[policy {level}] {message}")
            } else {
                format!("[policy {level}] {message} {}", Value::Object(map))
            }
        }
        _ => format!("[policy ?] {}", String::from_utf8_lossy(payload)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::{ClusterAnswers, NoAnswers, Recorder};
    use crate::calls::ContextAwareResource;
    use crate::session::Response;

    fn dispatcher(access: ContextAwareAccess, answerer: Box<dyn Answerer>) -> Dispatcher {
        Dispatcher::new(access, answerer, LogMode::Ignore)
    }

    const LIST: &[u8] = br#"{"api_version":"v1","kind":"Namespace","label_selector":null,"field_selector":null,"field_masks":null}"#;

    #[test]
    fn context_aware_access_is_enforced() {
        let mut d = dispatcher(
            ContextAwareAccess::Denied,
            Box::new(|_: &KubernetesCall| Answer::Success(b"{}".to_vec())),
        );
        let err = d
            .host_call("kubewarden", "kubernetes", "list_resources_all", LIST)
            .unwrap_err();
        assert_eq!(
            err,
            "Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported."
        );
        assert!(d.violations[0].contains("--allow-context-aware"));

        let allow = ContextAwareAccess::AllowList(
            [ContextAwareResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
            }]
            .into(),
        );
        let mut d = dispatcher(
            allow,
            Box::new(|_: &KubernetesCall| Answer::Success(b"{}".to_vec())),
        );
        assert_eq!(
            d.host_call("kubewarden", "kubernetes", "list_resources_all", LIST)
                .unwrap(),
            b"{}"
        );
        assert!(d.violations.is_empty());
        assert_eq!(d.stats.kubernetes_calls, 1);
        assert_eq!(d.stats.request_bytes, LIST.len() as u64);
        assert_eq!(d.stats.response_bytes, 2);
    }

    #[test]
    fn logs_are_accepted_and_other_calls_refused() {
        let mut d = dispatcher(ContextAwareAccess::AllowAll, Box::new(NoAnswers));
        assert_eq!(
            d.host_call(
                "kubewarden",
                "tracing",
                "log",
                br#"{"level":"info","message":"hi"}"#
            ),
            Ok(vec![])
        );
        assert!(d.violations.is_empty());
        let err = d
            .host_call("kubewarden", "oci", "v1/verify", b"{}")
            .unwrap_err();
        assert_eq!(err, "unknown operation: v1/verify");
        let err = d
            .host_call("kubewarden", "kubernetes", "can_i", b"{}")
            .unwrap_err();
        assert_eq!(err, "unknown operation: can_i");
        let err = d.host_call("other", "x", "y", b"").unwrap_err();
        assert_eq!(err, "unknown binding: other");
        assert_eq!(d.violations.len(), 3);
        assert!(d.violations[0].contains("\"oci\"") && d.violations[0].contains("\"v1/verify\""));
        assert_eq!(d.stats.log_calls, 1);
        assert_eq!(
            format_log_line(br#"{"level":"warning","message":"m","k":1}"#),
            r#"[policy WARNING] m {"k":1}"#
        );
    }

    #[test]
    fn api_errors_reach_the_guest_and_are_recorded() {
        let state =
            crate::cluster::from_yaml("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
                .unwrap();
        let rec = Recorder::new(ClusterAnswers::new(state));
        let mut d = dispatcher(ContextAwareAccess::AllowAll, Box::new(rec));
        let get = br#"{"api_version":"v1","kind":"Namespace","name":"b","namespace":null,"disable_cache":false}"#;
        let err = d
            .host_call("kubewarden", "kubernetes", "get_resource", get)
            .unwrap_err();
        assert_eq!(
            err,
            "Callback evaluation failure: Cannot find v1/Namespace named 'b' inside of namespace 'None'"
        );
        assert!(d.violations.is_empty(), "not found is a normal answer");
        let ok = d
            .host_call("kubewarden", "kubernetes", "list_resources_all", LIST)
            .unwrap();
        let session = d.answerer.recorded_session().unwrap();
        assert_eq!(session.exchanges.len(), 2);
        assert_eq!(
            session.exchanges[0].response,
            Response::Error {
                message: "Cannot find v1/Namespace named 'b' inside of namespace 'None'".into()
            }
        );
        assert_eq!(
            session.exchanges[1].response,
            Response::Success {
                payload: String::from_utf8(ok).unwrap()
            }
        );
    }
}
