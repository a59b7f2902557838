//! The policy under measurement on the replay-runner's waPC host (`replay_runner::Policy`, the
//! `wapc` + `wasmtime-provider` stack of policy-evaluator): compiled once, instantiated as
//! policy-server instantiates it, its `list_resources_all` calls answered by `host_sim` from
//! the generated cluster, every call and every byte counted by the host.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use host_sim::AnswerCache;
use replay_runner::{
    Answer, Answerer, ClusterAnswers, ContextAwareAccess, EngineOptions, EpochDeadlines, Host,
    KubernetesCall, LogMode, MemoryCreator,
};

use crate::memory::{MemoryStats, TrackingCreator};

/// Epoch deadlines far beyond any run: policy-server runs policies with epoch interruption
/// on (its policy timeout), so the compiled code carries the same epoch checks; nothing ever
/// ticks the epoch here.
const DEADLINES: EpochDeadlines = EpochDeadlines {
    wapc_init: 1 << 40,
    wapc_func: 1 << 40,
};

/// The answers one request was served, in order (what the floor deserialises).
type ServedLog = Arc<Mutex<Vec<Arc<Vec<u8>>>>>;

fn lock(log: &ServedLog) -> MutexGuard<'_, Vec<Arc<Vec<u8>>>> {
    log.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cluster's answers, remembering what each evaluation was served.
struct Served {
    answers: ClusterAnswers,
    log: ServedLog,
}

impl Answerer for Served {
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        match self.answers.answer_bytes(call) {
            Ok(bytes) => {
                lock(&self.log).push(bytes.clone());
                Answer::Success(bytes.to_vec())
            }
            Err(answer) => answer,
        }
    }

    fn begin_evaluation(&mut self) {
        lock(&self.log).clear();
    }
}

/// The compiled policy and what instantiates it.
pub struct Policy {
    policy: replay_runner::Policy,
    creator: Option<Arc<TrackingCreator>>,
    pub compile: Duration,
}

/// One instance of the policy, ready for `validate` calls.
pub struct Instance {
    host: Host,
    served: ServedLog,
    /// Its linear memory, when the policy was loaded with memory tracking.
    pub memory: Option<Arc<MemoryStats>>,
}

/// What one `validate` cost in host calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calls {
    /// Every `__host_call` the guest made.
    pub host_calls: usize,
    /// Bytes of the answers it was given.
    pub answer_bytes: usize,
}

impl Policy {
    /// Compiles `wasm`. Without `track_memory`, as policy-server runs it: wasmtime's own
    /// memory (copy-on-write initialisation) and epoch interruption. With it, through
    /// [`TrackingCreator`], so that instances report their memory size.
    /// `perfmap`: write `/tmp/perf-PID.map` so that `perf` can name the guest's functions
    /// (those of a policy built with `strip = false`).
    pub fn load(wasm: &[u8], track_memory: bool, perfmap: bool) -> Result<Policy> {
        let creator = track_memory.then(|| Arc::new(TrackingCreator::default()));
        let options = EngineOptions {
            // Copy-on-write initialisation needs wasmtime's own mmap memories. Without it,
            // instantiation runs compiled code before wasmtime-provider sets the epoch
            // deadline, which traps (`interrupt`): so no epoch interruption with tracking.
            epoch_deadlines: creator.is_none().then_some(DEADLINES),
            memory_creator: creator.clone().map(|c| -> Arc<dyn MemoryCreator> { c }),
            perfmap,
            ..EngineOptions::default()
        };
        let policy = replay_runner::Policy::compile(wasm, &options)
            .map_err(|e| anyhow!("compiling the policy: {e:#}"))?;
        Ok(Policy {
            compile: policy.compile_time(),
            policy,
            creator,
        })
    }

    /// A fresh instance, as policy-server makes one per request (`rehydrate`, then waPC
    /// initialisation: instantiate and run `wapc_init`).
    pub fn instantiate(&self) -> Result<Instance> {
        let host = self
            .policy
            .instantiate(ContextAwareAccess::AllowAll, LogMode::Ignore)
            .map_err(|e| anyhow!("instantiating the policy: {e:#}"))?;
        let memory = self.creator.as_ref().and_then(|c| c.last());
        Ok(Instance {
            host,
            served: ServedLog::default(),
            memory,
        })
    }
}

impl Instance {
    /// Serves the cluster of `answers` from now on.
    pub fn serve(&mut self, answers: Arc<AnswerCache>) {
        self.host.set_answerer(Box::new(Served {
            answers: ClusterAnswers::shared(answers),
            log: self.served.clone(),
        }));
    }

    /// One `validate` call: the guest's response document and its host calls. Fails if a host
    /// call could not be answered.
    pub fn validate(&mut self, payload: &[u8]) -> Result<(Vec<u8>, Calls)> {
        let (result, stats, violations) = self.host.call("validate", payload);
        if !violations.is_empty() || stats.failed_calls > 0 {
            bail!(
                "host calls the bench could not answer ({} failed): {violations:?}",
                stats.failed_calls
            );
        }
        let response = result.map_err(|e| anyhow!("validate: {e}"))?;
        let calls = Calls {
            host_calls: (stats.kubernetes_calls + stats.log_calls + stats.other_calls) as usize,
            answer_bytes: stats.response_bytes as usize,
        };
        Ok((response, calls))
    }

    /// The answers the last `validate` was served, in order.
    pub fn last_answers(&self) -> Vec<Arc<Vec<u8>>> {
        lock(&self.served).clone()
    }
}
