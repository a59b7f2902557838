//! kwctl's host-capabilities session file (`--record-host-capabilities-interactions` /
//! `--replay-host-capabilities-interactions`), modelled on kwctl 1.31 `src/callback_handler/proxy.rs`
//! and policy-evaluator 0.30 `callback_requests.rs`.
//!
//! The file is a YAML sequence of exchanges. Each exchange's `request` is itself a YAML document
//! (policy-evaluator's `CallbackRequestType`, serialized with `serde_yaml::to_string`, hence the
//! `!Variant` tag), embedded as a string; `response` is `type: Success` with the answer as a
//! string `payload`, or `type: Error` with a `message`:
//!
//! ```yaml
//! - type: Exchange
//!   request: |
//!     !KubernetesListResourceAll
//!     api_version: cozystack.io/v1alpha1
//!     kind: ApplicationDefinition
//!     label_selector: null
//!     field_selector: null
//!   response:
//!     type: Success
//!     payload: '{"apiVersion":"cozystack.io/v1alpha1","items":[],"kind":"ApplicationDefinitionList","metadata":{"resourceVersion":"1"}}'
//! ```
//!
//! Serialization uses serde_yaml 0.9.34 like kwctl, so a session written here is byte-for-byte
//! what kwctl would write for the same exchanges.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

/// The Kubernetes variants of policy-evaluator's `CallbackRequestType`, with the same names,
/// field order and types, so the YAML and the `Debug` text (used in replay errors) are the same
/// as kwctl's.
///
/// `field_masks` (kubewarden-policy-sdk 0.16+) is the last field of each variant, as in the
/// policy-evaluator releases that serve field masks. It is written only when the guest sent masks:
/// a request without masks is byte-for-byte what kwctl 1.31 (policy-evaluator 0.30, which has no
/// such field) writes, and kwctl 1.31 ignores the field when reading. Replay compares masks when
/// the recorded request has the key, and ignores them (like kwctl 1.31) when it has not.
#[derive(Debug, Clone, Eq, PartialEq, Serialize, Deserialize)]
pub enum CallbackRequestType {
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field_masks: Option<BTreeSet<String>>,
    },
}

impl CallbackRequestType {
    pub fn api_version_kind(&self) -> (&str, &str) {
        match self {
            CallbackRequestType::KubernetesListResourceNamespace {
                api_version, kind, ..
            }
            | CallbackRequestType::KubernetesListResourceAll {
                api_version, kind, ..
            }
            | CallbackRequestType::KubernetesGetResource {
                api_version, kind, ..
            } => (api_version, kind),
        }
    }

    /// The same request without field masks (what kwctl 1.31 sees of it).
    pub fn without_field_masks(&self) -> Self {
        let mut r = self.clone();
        match &mut r {
            CallbackRequestType::KubernetesListResourceNamespace { field_masks, .. }
            | CallbackRequestType::KubernetesListResourceAll { field_masks, .. }
            | CallbackRequestType::KubernetesGetResource { field_masks, .. } => *field_masks = None,
        }
        r
    }

    pub fn field_masks(&self) -> Option<&BTreeSet<String>> {
        match self {
            CallbackRequestType::KubernetesListResourceNamespace { field_masks, .. }
            | CallbackRequestType::KubernetesListResourceAll { field_masks, .. }
            | CallbackRequestType::KubernetesGetResource { field_masks, .. } => {
                field_masks.as_ref()
            }
        }
    }

    /// kwctl stores each request as `serde_yaml::to_string(&request)`.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a CallbackRequestType always serializes")
    }

    pub fn from_yaml(text: &str) -> Result<Self> {
        serde_yaml::from_str(text).map_err(|e| {
            anyhow!(
                "cannot deserialize recorded request into `CallbackRequestType` ({e}); replay-runner only replays the Kubernetes requests (KubernetesListResourceNamespace, KubernetesListResourceAll, KubernetesGetResource). Request was:\n{text}"
            )
        })
    }
}

/// kwctl's `Response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    Success { payload: String },
    Error { message: String },
}

/// kwctl's `Exchange` (the `type: Exchange` field comes from `#[serde(tag = "type")]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub struct Exchange {
    pub request: String,
    pub response: Response,
}

impl Exchange {
    pub fn new(request: &CallbackRequestType, response: Response) -> Self {
        Exchange {
            request: request.to_yaml(),
            response,
        }
    }
}

/// A whole session file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    pub exchanges: Vec<Exchange>,
}

impl Session {
    pub fn from_yaml(text: &str) -> Result<Self> {
        let exchanges: Vec<Exchange> = serde_yaml::from_str(text)?;
        Ok(Session { exchanges })
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "Cannot open host capabilities interactions file {}",
                path.display()
            )
        })?;
        Self::from_yaml(&text)
            .with_context(|| format!("cannot deserialize contents of {}", path.display()))
    }

    /// What kwctl writes: `serde_yaml::to_writer(file, &exchanges)`.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.exchanges).expect("a session always serializes")
    }

    pub fn write_file(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_yaml())
            .with_context(|| format!("Cannot save context aware session to {}", path.display()))
    }
}

/// The outcome of asking a [`Replay`] for the answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// More calls than recorded exchanges.
    Exhausted { actual: Box<CallbackRequestType> },
    /// The next recorded request is not the one the guest made.
    Mismatch {
        index: usize,
        expected: Box<CallbackRequestType>,
        actual: Box<CallbackRequestType>,
    },
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // kwctl's own wording, then what replay-runner adds.
            ReplayError::Exhausted { actual } => write!(
                f,
                "the list of recorded responses is empty: the policy made a host call that the session does not contain: {actual:?}"
            ),
            ReplayError::Mismatch {
                index,
                expected,
                actual,
            } => write!(
                f,
                "Replay error: unexpected request. Was expecting {expected:?}, got {actual:?} instead (exchange #{})",
                index + 1
            ),
        }
    }
}

impl ReplayError {
    /// Exactly the error kwctl's replay proxy gives (what the guest reads, after
    /// policy-evaluator's `Callback evaluation failure: ` prefix).
    pub fn kwctl_message(&self) -> String {
        match self {
            ReplayError::Exhausted { .. } => "the list of recorded responses is empty".to_string(),
            ReplayError::Mismatch {
                expected, actual, ..
            } => format!(
                "Replay error: unexpected request. Was expecting {expected:?}, got {actual:?} instead"
            ),
        }
    }
}

/// One recorded exchange, parsed.
#[derive(Debug, Clone)]
struct Recorded {
    request: CallbackRequestType,
    /// Whether the recorded request has a `field_masks` key. A session written by kwctl 1.31
    /// has none, and kwctl 1.31 ignores masks when matching: so does the replay then.
    has_field_masks: bool,
    response: Response,
}

/// Whether the request YAML (a `!Variant` tagged mapping) has a `field_masks` key.
fn has_field_masks_key(text: &str) -> bool {
    match serde_yaml::from_str::<serde_yaml::Value>(text) {
        Ok(serde_yaml::Value::Tagged(tagged)) => tagged
            .value
            .as_mapping()
            .is_some_and(|m| m.contains_key("field_masks")),
        _ => false,
    }
}

/// Strict in-order replay of a session, like kwctl's `produce_recorded_response`.
#[derive(Debug, Clone)]
pub struct Replay {
    recorded: Vec<Recorded>,
    next: usize,
}

impl Replay {
    /// Parses every recorded request up front (kwctl does it lazily and panics on a bad one).
    pub fn new(session: &Session) -> Result<Self> {
        let recorded = session
            .exchanges
            .iter()
            .enumerate()
            .map(|(i, ex)| {
                CallbackRequestType::from_yaml(&ex.request)
                    .map(|request| Recorded {
                        request,
                        has_field_masks: has_field_masks_key(&ex.request),
                        response: ex.response.clone(),
                    })
                    .with_context(|| format!("exchange #{}", i + 1))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Replay { recorded, next: 0 })
    }

    /// The next answer, when `actual` is the next recorded request.
    pub fn answer(&mut self, actual: &CallbackRequestType) -> Result<Response, ReplayError> {
        let Some(recorded) = self.recorded.get(self.next) else {
            return Err(ReplayError::Exhausted {
                actual: Box::new(actual.clone()),
            });
        };
        let index = self.next;
        // kwctl pops the exchange whether or not it matches.
        self.next += 1;
        let matches = if recorded.has_field_masks {
            &recorded.request == actual
        } else {
            recorded.request == actual.without_field_masks()
        };
        if matches {
            Ok(recorded.response.clone())
        } else {
            Err(ReplayError::Mismatch {
                index,
                expected: Box::new(recorded.request.clone()),
                actual: Box::new(actual.clone()),
            })
        }
    }

    /// Recorded exchanges that were not replayed (kwctl warns about them).
    pub fn leftovers(&self) -> VecDeque<CallbackRequestType> {
        self.recorded[self.next.min(self.recorded.len())..]
            .iter()
            .map(|r| r.request.clone())
            .collect()
    }

    /// Start again from the first exchange (for repeated evaluations, e.g. a benchmark).
    pub fn rewind(&mut self) {
        self.next = 0;
    }

    pub fn len(&self) -> usize {
        self.recorded.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recorded.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list_all(kind: &str) -> CallbackRequestType {
        CallbackRequestType::KubernetesListResourceAll {
            api_version: "helm.toolkit.fluxcd.io/v2".into(),
            kind: kind.into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        }
    }

    #[test]
    fn request_yaml_has_kwctl_shape() {
        assert_eq!(
            list_all("HelmRelease").to_yaml(),
            "!KubernetesListResourceAll\napi_version: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nlabel_selector: null\nfield_selector: null\n"
        );
        let get = CallbackRequestType::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            name: "tenant-a".into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        };
        assert_eq!(
            get.to_yaml(),
            "!KubernetesGetResource\napi_version: v1\nkind: Namespace\nname: tenant-a\nnamespace: null\ndisable_cache: false\n"
        );
    }

    #[test]
    fn field_masks_are_written_only_when_sent() {
        let masked = CallbackRequestType::KubernetesListResourceNamespace {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: "n".into(),
            label_selector: Some("a=b".into()),
            field_selector: None,
            field_masks: Some(
                [
                    "spec.containers.image".to_string(),
                    "metadata.name".to_string(),
                ]
                .into(),
            ),
        };
        let yaml = masked.to_yaml();
        assert_eq!(
            yaml,
            "!KubernetesListResourceNamespace\napi_version: v1\nkind: Pod\nnamespace: n\nlabel_selector: a=b\nfield_selector: null\nfield_masks:\n- metadata.name\n- spec.containers.image\n"
        );
        assert_eq!(CallbackRequestType::from_yaml(&yaml).unwrap(), masked);
        // A request written by kwctl 1.31 (no field_masks key) reads as "no masks".
        let old = CallbackRequestType::from_yaml(
            "!KubernetesListResourceAll\napi_version: v1\nkind: Pod\nlabel_selector: null\nfield_selector: null\n",
        )
        .unwrap();
        assert_eq!(old.field_masks(), None);
    }

    #[test]
    fn session_round_trip_is_byte_stable() {
        let session = Session {
            exchanges: vec![
                Exchange::new(
                    &list_all("HelmRelease"),
                    Response::Success {
                        payload: r#"{"apiVersion":"helm.toolkit.fluxcd.io/v2","items":[],"kind":"HelmReleaseList","metadata":{"resourceVersion":"1"}}"#.into(),
                    },
                ),
                Exchange::new(
                    &CallbackRequestType::KubernetesGetResource {
                        api_version: "v1".into(),
                        kind: "Namespace".into(),
                        name: "x".into(),
                        namespace: None,
                        disable_cache: true,
                        field_masks: None,
                    },
                    Response::Error {
                        message: "Cannot find v1/Namespace named 'x' inside of namespace 'None'".into(),
                    },
                ),
            ],
        };
        let yaml = session.to_yaml();
        assert!(
            yaml.starts_with("- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("  response:\n    type: Success\n    payload: '{\"apiVersion\""),
            "{yaml}"
        );
        assert!(yaml.contains("    type: Error\n    message: Cannot find v1/Namespace named 'x' inside of namespace 'None'\n"), "{yaml}");
        let parsed = Session::from_yaml(&yaml).unwrap();
        assert_eq!(parsed, session);
        assert_eq!(parsed.to_yaml(), yaml);
        assert_eq!(Session::default().to_yaml(), "[]\n");
    }

    #[test]
    fn kwctl_written_session_parses() {
        // The shape kwctl 1.31 writes (literal block for the request, a block scalar payload).
        let text = "- type: Exchange\n  request: |\n    !KubernetesGetResource\n    api_version: v1\n    kind: Namespace\n    name: demo\n    namespace: null\n    disable_cache: false\n  response:\n    type: Success\n    payload: |\n      {\"apiVersion\": \"v1\", \"kind\": \"Namespace\"}\n";
        let session = Session::from_yaml(text).unwrap();
        let mut replay = Replay::new(&session).unwrap();
        let resp = replay
            .answer(&CallbackRequestType::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                name: "demo".into(),
                namespace: None,
                disable_cache: false,
                field_masks: None,
            })
            .unwrap();
        assert_eq!(
            resp,
            Response::Success {
                payload: "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\"}\n".into()
            }
        );
    }

    #[test]
    fn replay_is_strict_and_ordered() {
        let session = Session {
            exchanges: vec![Exchange::new(
                &list_all("HelmRelease"),
                Response::Success {
                    payload: "{}".into(),
                },
            )],
        };
        let mut replay = Replay::new(&session).unwrap();
        let err = replay.answer(&list_all("Other")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("Replay error: unexpected request. Was expecting KubernetesListResourceAll { api_version: \"helm.toolkit.fluxcd.io/v2\", kind: \"HelmRelease\""), "{text}");
        assert!(text.contains("got KubernetesListResourceAll { api_version: \"helm.toolkit.fluxcd.io/v2\", kind: \"Other\""), "{text}");
        let err = replay.answer(&list_all("HelmRelease")).unwrap_err();
        assert!(matches!(err, ReplayError::Exhausted { .. }));
        assert!(
            err.to_string()
                .contains("the list of recorded responses is empty")
        );

        replay.rewind();
        assert!(replay.answer(&list_all("HelmRelease")).is_ok());
        assert!(replay.leftovers().is_empty());
    }

    #[test]
    fn field_masks_are_matched_only_when_recorded() {
        let masked = CallbackRequestType::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Pod".into(),
            label_selector: None,
            field_selector: None,
            field_masks: Some(["spec".to_string()].into()),
        };
        let ok = || Response::Success {
            payload: "{}".into(),
        };
        // Recorded with masks: they must be the same.
        let session = Session {
            exchanges: vec![Exchange::new(&masked, ok())],
        };
        let mut replay = Replay::new(&session).unwrap();
        assert!(replay.answer(&masked.without_field_masks()).is_err());
        replay.rewind();
        assert!(replay.answer(&masked).is_ok());
        // Recorded by kwctl 1.31 (no field_masks key): masks are not compared, as with kwctl 1.31.
        let old = Session {
            exchanges: vec![Exchange::new(&masked.without_field_masks(), ok())],
        };
        assert!(!old.exchanges[0].request.contains("field_masks"));
        assert!(Replay::new(&old).unwrap().answer(&masked).is_ok());
        // An explicit `field_masks: null` means "no masks" and is compared.
        let explicit = Session {
            exchanges: vec![Exchange {
                request: "!KubernetesListResourceAll\napi_version: v1\nkind: Pod\nlabel_selector: null\nfield_selector: null\nfield_masks: null\n".into(),
                response: ok(),
            }],
        };
        assert!(Replay::new(&explicit).unwrap().answer(&masked).is_err());
    }

    #[test]
    fn unsupported_recorded_request_is_reported_at_load() {
        let text = "- type: Exchange\n  request: |\n    !DNSLookupHost\n    host: example.com\n  response:\n    type: Success\n    payload: '[]'\n";
        let session = Session::from_yaml(text).unwrap();
        let err = format!("{:#}", Replay::new(&session).unwrap_err());
        assert!(
            err.contains("exchange #1") && err.contains("DNSLookupHost"),
            "{err}"
        );
    }
}
