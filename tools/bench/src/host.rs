//! A minimal Kubewarden host over the real waPC stack (`wapc` + `wasmtime-provider`, as
//! policy-evaluator uses them): `list_resources_all` answered from precomputed bytes, every
//! call and every byte counted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use wapc::WapcHost;
use wasmtime_provider::wasmtime::{Config, Engine, Module, ProfilingStrategy};
use wasmtime_provider::{EpochDeadlines, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

use crate::memory::{MemoryStats, TrackingCreator};
use crate::workload::{Answers, QUERIES};

/// Epoch deadlines far beyond any run: policy-server runs policies with epoch interruption
/// on (its policy timeout), so the compiled code carries the same epoch checks; nothing ever
/// ticks the epoch here.
const DEADLINES: EpochDeadlines = EpochDeadlines {
    wapc_init: 1 << 40,
    wapc_func: 1 << 40,
};

/// The answers being served and what the guest asked for since the last reset.
#[derive(Default)]
pub struct Served {
    answers: RwLock<Option<Arc<Answers>>>,
    calls: AtomicUsize,
    bytes: AtomicUsize,
    unexpected: RwLock<Vec<String>>,
    /// The answers served since the last reset, in order.
    last: RwLock<Vec<Arc<Vec<u8>>>>,
}

impl Served {
    pub fn serve(&self, answers: Arc<Answers>) {
        *self.answers.write().unwrap() = Some(answers);
    }

    pub fn reset(&self) {
        self.calls.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
        self.last.write().unwrap().clear();
    }

    /// The answers served since the last reset (what the floor deserialises).
    pub fn last_answers(&self) -> Vec<Arc<Vec<u8>>> {
        self.last.read().unwrap().clone()
    }

    /// `(host calls, answer bytes)` since the last reset.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.calls.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// Host calls the bench could not answer (a wrong query, mask or selector).
    pub fn unexpected(&self) -> Vec<String> {
        self.unexpected.read().unwrap().clone()
    }

    fn answer(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>> {
        if (binding, namespace, operation) != ("kubewarden", "kubernetes", "list_resources_all") {
            bail!("unexpected host call {binding}/{namespace}/{operation}");
        }
        let request: Value =
            serde_json::from_slice(payload).context("list_resources_all payload")?;
        let query = QUERIES
            .into_iter()
            .find(|q| request["api_version"] == q.api_version() && request["kind"] == q.kind())
            .ok_or_else(|| anyhow!("no answer for list_resources_all {request}"))?;
        // Answered for the masks asked (precomputed once per set of masks); the selector
        // must be the one the answers were generated for.
        if request["label_selector"].as_str() != query.label_selector()
            || !request["field_selector"].is_null()
        {
            bail!("list_resources_all {request}: not the selector the answers were generated for");
        }
        let masks: Option<Vec<&str>> = request["field_masks"]
            .as_array()
            .map(|m| m.iter().filter_map(Value::as_str).collect());
        let answers = self.answers.read().unwrap();
        let bytes = answers
            .as_ref()
            .ok_or_else(|| anyhow!("no answers loaded"))?
            .get(query, masks.as_deref());
        self.last.write().unwrap().push(bytes.clone());
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes.len(), Ordering::Relaxed);
        Ok(bytes.to_vec())
    }
}

/// The compiled policy and what instantiates it.
pub struct Policy {
    pre: WasmtimeEngineProviderPre,
    creator: Option<Arc<TrackingCreator>>,
    pub compile: Duration,
}

/// One instance of the policy, ready for `validate` calls.
pub struct Instance {
    pub host: WapcHost,
    pub served: Arc<Served>,
    /// Its linear memory, when the policy was loaded with memory tracking.
    pub memory: Option<Arc<MemoryStats>>,
}

impl Policy {
    /// Compiles `wasm`. Without `track_memory`, as policy-server runs it: wasmtime's own
    /// memory (copy-on-write initialisation) and epoch interruption. With it, through
    /// [`TrackingCreator`], so that instances report their memory size.
    /// `perfmap`: write `/tmp/perf-PID.map` so that `perf` can name the guest's functions
    /// (those of a policy built with `strip = false`).
    pub fn load(wasm: &[u8], track_memory: bool, perfmap: bool) -> Result<Policy> {
        let mut config = Config::new();
        if perfmap {
            config.profiler(ProfilingStrategy::PerfMap);
        }
        let creator = track_memory.then(|| Arc::new(TrackingCreator::default()));
        match &creator {
            // Copy-on-write initialisation needs wasmtime's own mmap memories. Without it,
            // instantiation runs compiled code before wasmtime-provider sets the epoch
            // deadline, which traps (`interrupt`): so no epoch interruption here.
            Some(c) => {
                config.with_host_memory(c.clone()).memory_init_cow(false);
            }
            None => {
                config.epoch_interruption(true);
            }
        }
        let engine = Engine::new(&config).map_err(|e| anyhow!("wasmtime engine: {e}"))?;
        let start = Instant::now();
        let module =
            Module::new(&engine, wasm).map_err(|e| anyhow!("compiling the policy: {e}"))?;
        let compile = start.elapsed();
        let pre = WasmtimeEngineProviderBuilder::new()
            .engine(engine)
            .module(module)
            .build_pre()
            .map_err(|e| anyhow!("preparing the policy: {e}"))?;
        Ok(Policy {
            pre,
            creator,
            compile,
        })
    }

    /// A fresh instance, as policy-server makes one per request (`rehydrate`, then waPC
    /// initialisation: instantiate and run `wapc_init`).
    pub fn instantiate(&self) -> Result<Instance> {
        let served = Arc::new(Served::default());
        let callback_served = served.clone();
        let provider = self
            .pre
            .rehydrate(self.creator.is_none().then_some(DEADLINES))
            .map_err(|e| anyhow!("rehydrating the policy: {e}"))?;
        let host = WapcHost::new(
            Box::new(provider),
            Some(Box::new(
                move |_id, binding, namespace, operation, payload| {
                    callback_served
                        .answer(binding, namespace, operation, payload)
                        .map_err(|e| {
                            callback_served
                                .unexpected
                                .write()
                                .unwrap()
                                .push(e.to_string());
                            e.into()
                        })
                },
            )),
        )
        .map_err(|e| anyhow!("instantiating the policy: {e}"))?;
        let memory = self.creator.as_ref().and_then(|c| c.last());
        Ok(Instance {
            host,
            served,
            memory,
        })
    }
}

impl Instance {
    /// One `validate` call: the guest's response document.
    pub fn validate(&self, payload: &[u8]) -> Result<Vec<u8>> {
        self.host
            .call("validate", payload)
            .map_err(|e| anyhow!("validate: {e}"))
    }
}
