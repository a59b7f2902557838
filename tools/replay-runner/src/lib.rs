//! `replay-runner`: a host-only test tool that runs a Kubewarden waPC policy the way
//! `kwctl run` does, answering its context-aware host calls from a kwctl session file
//! (strict replay) or from a cluster-state fixture (optionally recording a kwctl session).
//! Never shipped; see README.md.
//!
//! The library exposes the pieces for reuse (e.g. by a benchmark): [`Policy`] compiles a module
//! once and instantiates it any number of times; a [`Host`] (one instance) evaluates it
//! repeatedly, answering host calls through any [`answers::Answerer`] and counting them
//! ([`capabilities::HostCallStats`]).

pub mod admission;
pub mod answers;
pub mod calls;
pub mod capabilities;
#[cfg(feature = "engine")]
pub mod cli;
pub mod cluster;
#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "engine")]
pub mod host;
#[cfg(feature = "engine")]
pub mod metadata;
pub mod replay;
pub mod session;

pub use host_sim;

pub use admission::{AdmissionRequest, AdmissionResponse, PolicySettings};
pub use answers::{Answer, Answerer, ClusterAnswers, NoAnswers, Recorder, ReplayAnswers};
pub use calls::{ContextAwareAccess, ContextAwareResource, KubernetesCall};
pub use capabilities::{HostCallStats, LogMode};
#[cfg(feature = "engine")]
pub use engine::{EngineOptions, EpochDeadlines, MemoryCreator, Policy};
#[cfg(feature = "engine")]
pub use host::{Evaluation, EvaluationError, Host, HostOptions};
pub use replay::{Replay, ReplayError};
pub use session::{CallbackRequestType, Exchange, Response, Session};
