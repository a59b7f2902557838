//! `replay-runner`: a host-only test tool that runs a Kubewarden waPC policy the way
//! `kwctl run` does, answering its context-aware host calls from a kwctl session file
//! (strict replay) or from a cluster-state fixture (optionally recording a kwctl session).
//! Never shipped; see README.md.
//!
//! The library exposes the pieces for reuse (e.g. by a benchmark): [`Host`] loads a module once
//! and evaluates it repeatedly, answering host calls through any [`capabilities::Answerer`]
//! and counting them ([`capabilities::HostCallStats`]).

pub mod admission;
pub mod capabilities;
pub mod cli;
pub mod cluster;
pub use field_mask;
pub mod host;
pub mod metadata;
pub mod selector;
pub mod session;
pub mod test_guest;

pub use admission::{AdmissionRequest, AdmissionResponse, PolicySettings};
pub use capabilities::{Answer, Answerer, ContextAwareAccess, HostCallStats, KubernetesCall};
pub use cluster::ClusterState;
pub use host::{Evaluation, EvaluationError, Host, HostOptions};
pub use session::{CallbackRequestType, Exchange, Replay, Response, Session};
