//! A policy module compiled once ([`Policy`]), from which any number of hosts are
//! instantiated (`Policy::instantiate`, in [`crate::host`], the layer above this one), as
//! policy-server does (it keeps a `WasmtimeEngineProviderPre` per policy and
//! rehydrates it). The engine is built like the `WasmtimeEngineProviderBuilder` of
//! wasmtime-provider builds it (the same `Config`, the same cache set-up), plus what a
//! benchmark needs: epoch interruption, a custom memory creator, a perf map, the compile time.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use wasmtime_provider::wasmtime::{
    Cache, CacheConfig, Config, Engine, Module, ProfilingStrategy, Strategy,
};
use wasmtime_provider::{WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

pub use wasmtime_provider::EpochDeadlines;
/// The wasmtime this host runs (for a [`MemoryCreator`] and its `LinearMemory`).
pub use wasmtime_provider::wasmtime;
pub use wasmtime_provider::wasmtime::MemoryCreator;

use crate::metadata::{Metadata, read_metadata};

/// How the module is compiled and run. The default is how the replay-runner runs it: wasmtime's
/// default configuration, no cache.
#[derive(Clone, Default)]
pub struct EngineOptions {
    /// Where wasmtime caches compiled modules (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Epoch interruption with these deadlines, as policy-server runs policies (its policy
    /// timeout): the compiled code carries the epoch checks. Nothing here ticks the epoch.
    pub epoch_deadlines: Option<EpochDeadlines>,
    /// Linear memories made by this creator instead of wasmtime's own (copy-on-write
    /// initialisation is then off: it needs wasmtime's memories).
    pub memory_creator: Option<Arc<dyn MemoryCreator>>,
    /// Write `/tmp/perf-PID.map`, so that `perf` can name the guest's functions.
    pub perfmap: bool,
}

impl fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineOptions")
            .field("cache_dir", &self.cache_dir)
            .field("epoch_deadlines", &self.epoch_deadlines)
            .field("memory_creator", &self.memory_creator.is_some())
            .field("perfmap", &self.perfmap)
            .finish()
    }
}

impl EngineOptions {
    fn config(&self) -> Config {
        let mut config = Config::default();
        if self.epoch_deadlines.is_some() {
            config.epoch_interruption(true);
        }
        if let Some(dir) = &self.cache_dir {
            // What WasmtimeEngineProviderBuilder::enable_cache(Some(dir)) sets up; a cache that
            // cannot be set up is no cache (the builder only logs it).
            config.strategy(Strategy::Cranelift);
            let mut cache = CacheConfig::new();
            cache.with_directory(dir);
            config.cache(Cache::new(cache).ok());
        }
        if let Some(creator) = &self.memory_creator {
            config
                .with_host_memory(creator.clone())
                .memory_init_cow(false);
        }
        if self.perfmap {
            config.profiler(ProfilingStrategy::PerfMap);
        }
        config
    }
}

/// A compiled policy module.
pub struct Policy {
    pre: WasmtimeEngineProviderPre,
    epoch_deadlines: Option<EpochDeadlines>,
    metadata: Option<Metadata>,
    compile_time: Duration,
}

impl Policy {
    /// Loads a policy file (binary wasm, or WAT text).
    pub fn from_file(path: &Path, options: &EngineOptions) -> Result<Policy> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("Cannot read policy module {}", path.display()))?;
        Self::compile(&bytes, options)
            .with_context(|| format!("Cannot load policy module {}", path.display()))
    }

    /// Reads the module's metadata and compiles it.
    pub fn compile(module: &[u8], options: &EngineOptions) -> Result<Policy> {
        let metadata = read_metadata(module)?;
        let engine_error = |e: &dyn fmt::Display| anyhow!("cannot build the wasmtime engine: {e}");
        let engine = Engine::new(&options.config()).map_err(|e| engine_error(&e))?;
        let start = Instant::now();
        let module = Module::new(&engine, module).map_err(|e| engine_error(&e))?;
        let compile_time = start.elapsed();
        let pre = WasmtimeEngineProviderBuilder::new()
            .engine(engine)
            .module(module)
            .build_pre()
            .map_err(|e| engine_error(&e))?;
        Ok(Policy {
            pre,
            epoch_deadlines: options.epoch_deadlines,
            metadata,
            compile_time,
        })
    }

    /// The module's `io.kubewarden.metadata`, `None` when it is not annotated.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// How long wasmtime took to compile the module (`Module::new`; short when cached).
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// A fresh engine provider for one instance, as policy-server makes one per request:
    /// rehydrated from the compiled module, not yet initialised (the waPC host does that, see
    /// `Policy::instantiate` in [`crate::host`]).
    pub(crate) fn rehydrate(&self) -> Result<Box<dyn wapc::WebAssemblyEngineProvider>> {
        let provider = self
            .pre
            .rehydrate(self.epoch_deadlines)
            .map_err(|e| anyhow!("cannot build the wasmtime engine: {e}"))?;
        Ok(Box::new(provider))
    }
}
