//! The policy under measurement on the replay-runner's waPC host (`replay_runner::Policy`, the
//! `wapc` + `wasmtime-provider` stack of policy-evaluator): compiled once, instantiated as
//! policy-server instantiates it, its host calls answered by the bench's model of
//! policy-server's host ([`crate::host`]), every call and every byte counted by the host.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use replay_runner::{Answerer, ContextAwareAccess, EngineOptions, EpochDeadlines, Host, LogMode};

/// Epoch deadlines far beyond any run: policy-server runs policies with epoch interruption
/// on (its policy timeout), so the compiled code carries the same epoch checks; nothing ever
/// ticks the epoch here.
const DEADLINES: EpochDeadlines = EpochDeadlines {
    wapc_init: 1 << 40,
    wapc_func: 1 << 40,
};

/// The compiled policy.
pub struct Policy {
    policy: replay_runner::Policy,
    pub compile: Duration,
}

/// One instance of the policy, ready for `validate` calls.
pub struct Instance {
    host: Host,
}

/// What one `validate` cost in host calls, as the waPC host counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calls {
    /// Every `__host_call` the guest made.
    pub host_calls: usize,
    /// Bytes of the answers it was given.
    pub answer_bytes: usize,
}

impl Policy {
    /// Compiles `wasm` as policy-server runs it: wasmtime's own memory (copy-on-write
    /// initialisation) and epoch interruption. `perfmap`: write `/tmp/perf-PID.map` so that
    /// `perf` can name the guest's functions (those of a policy built with `strip = false`).
    pub fn load(wasm: &[u8], perfmap: bool) -> Result<Policy> {
        let options = EngineOptions {
            epoch_deadlines: Some(DEADLINES),
            perfmap,
            ..EngineOptions::default()
        };
        let policy = replay_runner::Policy::compile(wasm, &options)
            .map_err(|e| anyhow!("compiling the policy: {e:#}"))?;
        Ok(Policy {
            compile: policy.compile_time(),
            policy,
        })
    }

    /// A fresh instance, as policy-server makes one (`rehydrate`, then waPC initialisation:
    /// instantiate and run `wapc_init`), its host calls answered by `answerer`.
    pub fn instantiate(&self, answerer: Box<dyn Answerer>) -> Result<Instance> {
        let mut host = self
            .policy
            .instantiate(ContextAwareAccess::AllowAll, LogMode::Ignore)
            .map_err(|e| anyhow!("instantiating the policy: {e:#}"))?;
        host.set_answerer(answerer);
        Ok(Instance { host })
    }
}

impl Instance {
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
}
