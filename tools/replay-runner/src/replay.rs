//! Strict in-order replay of a kwctl session (`--replay-host-capabilities-interactions`), like
//! kwctl 1.31's `produce_recorded_response`: the n-th call must be the n-th recorded request.

use std::collections::VecDeque;

use anyhow::{Context, Result};

use crate::session::{CallbackRequestType, Response, Session};

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
    use crate::session::Exchange;

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
}
