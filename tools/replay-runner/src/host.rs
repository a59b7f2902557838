//! A waPC host for one instance of a policy module, built like policy-evaluator's waPC stack (the
//! `wapc` crate over `wasmtime-provider`, WASI preview 1 linked in). The instance is created once
//! (from a module compiled once, [`Policy`]); `validate_settings` and `validate` can then be
//! called any number of times, each call answering the guest's host calls through the
//! [`Dispatcher`] and counting them.
//!
//! This module is the layer above [`crate::engine`]: it gives [`Policy`] its `instantiate`
//! (a [`Host`] around a rehydrated engine provider), and the engine knows nothing of hosts.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::admission::{
    AdmissionRequest, AdmissionResponse, PolicySettings, PolicyValidationResponse,
    SettingsValidationResponse, validate_payload,
};
use crate::answers::{Answerer, NoAnswers};
use crate::calls::ContextAwareAccess;
use crate::capabilities::{Dispatcher, HostCallStats, LogMode};
use crate::engine::{EngineOptions, Policy};
use crate::metadata::Metadata;
use crate::session::Session;

/// How to build a [`Host`] from a module.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Which Kubernetes resources the guest may read.
    pub access: Option<ContextAwareAccess>,
    /// What to do with the guest's log events.
    pub log_mode: LogMode,
    /// How the module is compiled and run (the wasmtime cache, for one).
    pub engine: EngineOptions,
}

/// One `validate` that ran to completion.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// What kwctl prints.
    pub response: AdmissionResponse,
    /// The guest's own answer, as bytes.
    pub raw_response: Vec<u8>,
    /// Host calls made during this evaluation.
    pub stats: HostCallStats,
    /// Host calls that could not be answered faithfully (see [`crate::capabilities`]); the CLI
    /// fails the run when this is not empty.
    pub violations: Vec<String>,
}

/// A `validate` whose guest call failed (trap, panic, `__guest_error`) or answered garbage.
#[derive(Debug, Clone)]
pub struct EvaluationError {
    pub message: String,
    /// What kwctl would have printed instead (it exits 0 with this).
    pub kwctl_response: AdmissionResponse,
    pub stats: HostCallStats,
    pub violations: Vec<String>,
}

impl std::fmt::Display for EvaluationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvaluationError {}

pub struct Host {
    wapc: wapc::WapcHost,
    dispatcher: Arc<Mutex<Dispatcher>>,
    metadata: Option<Metadata>,
    totals: HostCallStats,
    evaluations: u64,
}

impl Policy {
    /// A fresh instance, as policy-server makes one per request: rehydrated, then initialised
    /// (instantiated, `wapc_init` run) by the waPC host. Its host calls go to [`crate::NoAnswers`]
    /// until [`Host::set_answerer`].
    pub fn instantiate(&self, access: ContextAwareAccess, log_mode: LogMode) -> Result<Host> {
        Host::new(
            self.rehydrate()?,
            access,
            log_mode,
            self.metadata().cloned(),
        )
    }
}

fn lock(d: &Mutex<Dispatcher>) -> MutexGuard<'_, Dispatcher> {
    d.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Host {
    /// Loads a policy file (binary wasm, or WAT text) and instantiates it.
    pub fn from_file(path: &Path, options: HostOptions) -> Result<Host> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("Cannot read policy module {}", path.display()))?;
        Self::from_bytes(&bytes, options)
            .with_context(|| format!("Cannot load policy module {}", path.display()))
    }

    /// Compiles and instantiates a module. Without `options.access`, access follows the module's
    /// metadata like `kwctl run --allow-context-aware` ([`ContextAwareAccess::AllowAll`] for a
    /// module without metadata). To instantiate a module more than once, compile it once with
    /// [`Policy::compile`].
    pub fn from_bytes(module: &[u8], options: HostOptions) -> Result<Host> {
        let policy = Policy::compile(module, &options.engine)?;
        Self::instantiate(&policy, options)
    }

    fn instantiate(policy: &Policy, options: HostOptions) -> Result<Host> {
        let access = options
            .access
            .unwrap_or_else(|| access_from_metadata(policy.metadata()));
        policy.instantiate(access, options.log_mode)
    }

    /// A host around an engine provider (see [`Policy::instantiate`]): creating the waPC host
    /// initialises the guest.
    fn new(
        provider: Box<dyn wapc::WebAssemblyEngineProvider>,
        access: ContextAwareAccess,
        log_mode: LogMode,
        metadata: Option<Metadata>,
    ) -> Result<Host> {
        let dispatcher = Arc::new(Mutex::new(Dispatcher::new(
            access,
            Box::new(NoAnswers),
            log_mode,
        )));
        let callback_dispatcher = dispatcher.clone();
        let wapc = wapc::WapcHost::new(
            provider,
            Some(Box::new(
                move |_id, binding: &str, namespace: &str, operation: &str, payload: &[u8]| {
                    lock(&callback_dispatcher)
                        .host_call(binding, namespace, operation, payload)
                        .map_err(|e| e.into())
                },
            )),
        )
        .map_err(|e| anyhow::anyhow!("cannot create the waPC host: {e}"))?;
        Ok(Host {
            wapc,
            dispatcher,
            metadata,
            totals: HostCallStats::default(),
            evaluations: 0,
        })
    }

    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// Replaces the source of answers to Kubernetes calls.
    pub fn set_answerer(&mut self, answerer: Box<dyn Answerer>) {
        lock(&self.dispatcher).answerer = answerer;
    }

    pub fn set_access(&mut self, access: ContextAwareAccess) {
        lock(&self.dispatcher).access = access;
    }

    pub fn access(&self) -> ContextAwareAccess {
        lock(&self.dispatcher).access.clone()
    }

    /// The session recorded so far, when the answerer is a [`crate::answers::Recorder`].
    pub fn recorded_session(&self) -> Option<Session> {
        lock(&self.dispatcher).answerer.recorded_session()
    }

    /// The answerer's end-of-run warnings (e.g. exchanges never replayed).
    pub fn answerer_warnings(&self) -> Vec<String> {
        lock(&self.dispatcher).answerer.warnings()
    }

    /// Host calls over all evaluations so far.
    pub fn total_stats(&self) -> HostCallStats {
        self.totals
    }

    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// A raw waPC call (`operation`, `payload`), host calls answered as for `validate`.
    pub fn call(
        &mut self,
        operation: &str,
        payload: &[u8],
    ) -> (
        Result<Vec<u8>, wapc::errors::Error>,
        HostCallStats,
        Vec<String>,
    ) {
        {
            let mut d = lock(&self.dispatcher);
            d.stats = HostCallStats::default();
            d.violations.clear();
            d.answerer.begin_evaluation();
        }
        let result = self.wapc.call(operation, payload);
        let (stats, violations) = {
            let mut d = lock(&self.dispatcher);
            (
                std::mem::take(&mut d.stats),
                std::mem::take(&mut d.violations),
            )
        };
        self.totals.add(&stats);
        (result, stats, violations)
    }

    /// The guest's `validate_settings`, answered like policy-evaluator's waPC runtime does
    /// (a failing call or an unreadable answer is an invalid-settings answer).
    pub fn validate_settings(&mut self, settings: &PolicySettings) -> SettingsValidationResponse {
        let payload = serde_json::to_vec(settings).expect("settings always serialize");
        let (result, _, violations) = self.call("validate_settings", &payload);
        let response = match result {
            Ok(bytes) => serde_json::from_slice::<SettingsValidationResponse>(&bytes)
                .unwrap_or_else(|e| SettingsValidationResponse {
                    valid: false,
                    message: Some(format!(
                        "error: the policy answered validate_settings with something that is not a SettingsValidationResponse ({e}): {}",
                        String::from_utf8_lossy(&bytes)
                    )),
                }),
            Err(e) => SettingsValidationResponse {
                valid: false,
                // policy-evaluator's wording (it formats the waPC error with `{:?}`).
                message: Some(format!("Error invoking settings validation callback: {e:?}")),
            },
        };
        if violations.is_empty() || !response.valid {
            response
        } else {
            SettingsValidationResponse {
                valid: false,
                message: Some(format!(
                    "validate_settings made host calls replay-runner could not answer: {}",
                    violations.join("; ")
                )),
            }
        }
    }

    /// The guest's `validate` on `request`, with `settings`.
    pub fn validate(
        &mut self,
        request: &AdmissionRequest,
        settings: &PolicySettings,
    ) -> Result<Evaluation, Box<EvaluationError>> {
        let payload = validate_payload(request, settings);
        self.validate_payload(request, &payload)
    }

    /// `validate` with a payload already built by [`validate_payload`] (saves re-serializing
    /// in a benchmark loop).
    pub fn validate_payload(
        &mut self,
        request: &AdmissionRequest,
        payload: &[u8],
    ) -> Result<Evaluation, Box<EvaluationError>> {
        self.evaluations += 1;
        let uid = request.uid.clone();
        let (result, stats, violations) = self.call("validate", payload);
        let fail = |message: String, kwctl_detail: String, stats, violations| {
            Box::new(EvaluationError {
                message,
                kwctl_response: AdmissionResponse::reject_internal_server_error(
                    uid.clone(),
                    kwctl_detail,
                ),
                stats,
                violations,
            })
        };
        let bytes = match result {
            Ok(bytes) => bytes,
            Err(e) => {
                return Err(fail(
                    format!("the policy's validate call failed: {e}"),
                    e.to_string(),
                    stats,
                    violations,
                ));
            }
        };
        let policy_response: PolicyValidationResponse = match serde_json::from_slice(&bytes) {
            Ok(r) => r,
            Err(e) => {
                return Err(fail(
                    format!(
                        "the policy answered validate with something that is not a ValidationResponse ({e}): {}",
                        String::from_utf8_lossy(&bytes)
                    ),
                    format!("invalid response from the policy: {e}"),
                    stats,
                    violations,
                ));
            }
        };
        let object: Option<&Value> = request.object.as_ref();
        match AdmissionResponse::from_policy_validation_response(
            uid.clone(),
            object,
            &policy_response,
        ) {
            Ok(response) => Ok(Evaluation {
                response,
                raw_response: bytes,
                stats,
                violations,
            }),
            Err(e) => Err(fail(
                format!("cannot build the admission response: {e}"),
                e.to_string(),
                stats,
                violations,
            )),
        }
    }
}

/// kwctl `--allow-context-aware`: the metadata's `contextAwareResources`; a module without
/// metadata gets [`ContextAwareAccess::AllowAll`] here (kwctl would allow nothing).
pub fn access_from_metadata(metadata: Option<&Metadata>) -> ContextAwareAccess {
    match metadata {
        Some(m) => ContextAwareAccess::AllowList(m.context_aware_resources.clone()),
        None => ContextAwareAccess::AllowAll,
    }
}
