//! Who answers the guest's Kubernetes calls: an [`Answerer`]. A session replay
//! ([`ReplayAnswers`]), a cluster state ([`ClusterAnswers`], answered by `host_sim`), a recorder
//! around another ([`Recorder`]), a closure, or nothing ([`NoAnswers`]).

use std::sync::Arc;

use host_sim::{AnswerCache, GetQuery, ObjectStore, QueryError, Request};

use crate::calls::KubernetesCall;
use crate::replay::Replay;
use crate::session::{CallbackRequestType, Exchange, Response, Session};

/// The answer to one Kubernetes call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The payload given to the guest.
    Success(Vec<u8>),
    /// An error a real host gives (given to the guest, recorded as `type: Error`).
    Error(String),
    /// The call cannot be answered faithfully: the guest gets `guest_message`, the run fails with
    /// `violation`.
    Violation {
        guest_message: String,
        violation: String,
    },
}

/// Something that answers Kubernetes calls.
pub trait Answerer: Send {
    fn answer(&mut self, call: &KubernetesCall) -> Answer;
    /// Called before each `validate`.
    fn begin_evaluation(&mut self) {}
    /// Warnings once the run is over (e.g. unreplayed exchanges).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// The recorded session, for a recorder.
    fn recorded_session(&self) -> Option<Session> {
        None
    }
}

/// Closures answer calls too (handy for benchmarks).
impl<F> Answerer for F
where
    F: FnMut(&KubernetesCall) -> Answer + Send,
{
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        self(call)
    }
}

/// No source of answers: every Kubernetes call is a violation.
#[derive(Debug, Default)]
pub struct NoAnswers;

impl Answerer for NoAnswers {
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        let violation = format!(
            "the policy made a Kubernetes host call but no answers were given (pass --replay-host-capabilities-interactions or --cluster-state): {:?}",
            call.request
        );
        Answer::Violation {
            guest_message: "Callback evaluation failure: kube::Client was not initialized properly"
                .to_string(),
            violation,
        }
    }
}

/// Strict in-order replay of a kwctl session.
#[derive(Debug)]
pub struct ReplayAnswers {
    replay: Replay,
    /// Rewind to the first exchange before each evaluation (benchmarks); the CLI does not.
    pub rewind_each_evaluation: bool,
}

impl ReplayAnswers {
    pub fn new(replay: Replay) -> Self {
        ReplayAnswers {
            replay,
            rewind_each_evaluation: false,
        }
    }
}

impl Answerer for ReplayAnswers {
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        match self.replay.answer(&call.request) {
            Ok(Response::Success { payload }) => Answer::Success(payload.into_bytes()),
            Ok(Response::Error { message }) => Answer::Error(message),
            Err(e) => Answer::Violation {
                // kwctl's proxy error, wrapped as policy-evaluator wraps callback failures.
                guest_message: format!("Callback evaluation failure: {}", e.kwctl_message()),
                violation: format!("host call not in the session: {e}"),
            },
        }
    }

    fn begin_evaluation(&mut self) {
        if self.rewind_each_evaluation {
            self.replay.rewind();
        }
    }

    fn warnings(&self) -> Vec<String> {
        let leftovers = self.replay.leftovers();
        if leftovers.is_empty() {
            vec![]
        } else {
            vec![format!(
                "Some of the recorded exchanges have not been replayed: {leftovers:?}"
            )]
        }
    }
}

/// Answers from a cluster state, computed by `host_sim` (serialised once per request and masks).
#[derive(Debug, Clone)]
pub struct ClusterAnswers {
    pub cache: Arc<AnswerCache>,
}

impl ClusterAnswers {
    pub fn new(store: ObjectStore) -> Self {
        ClusterAnswers {
            cache: Arc::new(AnswerCache::new(store)),
        }
    }

    /// Answers from `cache`, shared (a benchmark serves one cache to several hosts).
    pub fn shared(cache: Arc<AnswerCache>) -> Self {
        ClusterAnswers { cache }
    }

    /// The answer's bytes as the cache holds them, or the answer to give instead (an API error
    /// or a violation).
    pub fn answer_bytes(&self, call: &KubernetesCall) -> Result<Arc<Vec<u8>>, Answer> {
        self.cache
            .answer(&host_request(&call.request), call.field_masks())
            .map_err(|e| match e {
                QueryError::Api(message) => Answer::Error(message),
                QueryError::Unanswerable(message) => Answer::Violation {
                    guest_message: format!("Callback evaluation failure: {message}"),
                    violation: format!("cluster state cannot answer {:?}: {message}", call.request),
                },
            })
    }
}

impl Answerer for ClusterAnswers {
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        match self.answer_bytes(call) {
            Ok(bytes) => Answer::Success(bytes.to_vec()),
            Err(answer) => answer,
        }
    }
}

/// The request `host_sim` answers for what the guest asked.
fn host_request(request: &CallbackRequestType) -> Request {
    match request {
        CallbackRequestType::KubernetesGetResource {
            api_version,
            kind,
            name,
            namespace,
            ..
        } => Request::Get(GetQuery {
            api_version: api_version.clone(),
            kind: kind.clone(),
            name: name.clone(),
            namespace: namespace.clone(),
        }),
        list => {
            let (query, _) = list
                .list_query()
                .expect("a request that is not a get is a list");
            Request::List(query)
        }
    }
}

/// Records what another answerer answers, in kwctl's session format.
pub struct Recorder<A: Answerer> {
    pub inner: A,
    pub session: Session,
}

impl<A: Answerer> Recorder<A> {
    pub fn new(inner: A) -> Self {
        Recorder {
            inner,
            session: Session::default(),
        }
    }
}

impl<A: Answerer> Answerer for Recorder<A> {
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        let answer = self.inner.answer(call);
        let response = match &answer {
            Answer::Success(payload) => Some(Response::Success {
                // kwctl records the payload as UTF-8 text.
                payload: String::from_utf8_lossy(payload).into_owned(),
            }),
            Answer::Error(message) => Some(Response::Error {
                message: message.clone(),
            }),
            Answer::Violation { .. } => None,
        };
        if let Some(response) = response {
            self.session
                .exchanges
                .push(Exchange::new(&call.request, response));
        }
        answer
    }

    fn begin_evaluation(&mut self) {
        self.inner.begin_evaluation();
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }

    fn recorded_session(&self) -> Option<Session> {
        Some(self.session.clone())
    }
}
