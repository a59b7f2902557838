//! A wasmtime [`MemoryCreator`] that behaves like wasmtime's own mmap-backed linear memory
//! (the same virtual reservation and guard region, so the compiled code and its elided bounds
//! checks are the same) but lets the bench read each guest memory's size: the
//! `WasmtimeEngineProvider` of the Kubewarden stack keeps its `Store` private, so the memory
//! export cannot be reached through it.
//!
//! Linear memory never shrinks, so a memory's size after a run is its peak during the run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use replay_runner::engine::wasmtime::{LinearMemory, MemoryCreator, MemoryType};

/// What one guest memory has done so far.
#[derive(Debug, Default)]
pub struct MemoryStats {
    /// Current (= peak) accessible size, bytes.
    pub size: AtomicUsize,
    /// Size at instantiation, bytes.
    pub initial: AtomicUsize,
}

impl MemoryStats {
    pub fn size(&self) -> usize {
        self.size.load(Ordering::Relaxed)
    }
    pub fn initial(&self) -> usize {
        self.initial.load(Ordering::Relaxed)
    }
}

/// Creates tracked memories and remembers them in creation order.
#[derive(Default)]
pub struct TrackingCreator {
    created: Mutex<Vec<Arc<MemoryStats>>>,
}

impl TrackingCreator {
    /// The most recently created memory (the policy module defines exactly one, so after an
    /// instantiation this is that instance's memory).
    pub fn last(&self) -> Option<Arc<MemoryStats>> {
        self.created.lock().unwrap().last().cloned()
    }
}

/// A 4 GiB reservation, wasmtime's default on 64-bit hosts, when wasmtime does not ask for one.
const DEFAULT_RESERVATION: usize = 4 << 30;

unsafe impl MemoryCreator for TrackingCreator {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> Result<Box<dyn LinearMemory>, String> {
        let reserved = reserved_size_in_bytes
            .unwrap_or_else(|| maximum.unwrap_or(DEFAULT_RESERVATION).max(minimum));
        let total = reserved
            .checked_add(guard_size_in_bytes)
            .ok_or("memory reservation overflows")?;
        // SAFETY: an anonymous private mapping with no address hint; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {total} bytes failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        let stats = Arc::new(MemoryStats::default());
        let mut memory = TrackedMemory {
            base: base.cast(),
            total,
            reserved,
            size: 0,
            stats: stats.clone(),
        };
        memory.commit(minimum).map_err(|e| e.to_string())?;
        stats.initial.store(minimum, Ordering::Relaxed);
        self.created.lock().unwrap().push(stats);
        Ok(Box::new(memory))
    }
}

struct TrackedMemory {
    base: *mut u8,
    /// Reservation plus guard region, as mapped.
    total: usize,
    reserved: usize,
    size: usize,
    stats: Arc<MemoryStats>,
}

// SAFETY: the mapping is owned by this value alone; wasmtime serialises access to it.
unsafe impl Send for TrackedMemory {}
unsafe impl Sync for TrackedMemory {}

impl TrackedMemory {
    /// Makes `[0, new_size)` readable and writable (fresh anonymous pages read as zero).
    fn commit(&mut self, new_size: usize) -> std::io::Result<()> {
        if new_size > self.reserved {
            return Err(std::io::Error::other(format!(
                "cannot grow to {new_size} bytes beyond a reservation of {}",
                self.reserved
            )));
        }
        if new_size > self.size {
            // SAFETY: the range lies within our own mapping; wasm sizes are page multiples.
            let rc = unsafe {
                libc::mprotect(
                    self.base.add(self.size).cast(),
                    new_size - self.size,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        self.size = new_size;
        self.stats.size.store(new_size, Ordering::Relaxed);
        Ok(())
    }
}

unsafe impl LinearMemory for TrackedMemory {
    fn byte_size(&self) -> usize {
        self.size
    }

    fn byte_capacity(&self) -> usize {
        self.reserved
    }

    fn grow_to(&mut self, new_size: usize) -> replay_runner::engine::wasmtime::Result<()> {
        Ok(self.commit(new_size)?)
    }

    fn as_ptr(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for TrackedMemory {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what new_memory mapped.
        unsafe {
            libc::munmap(self.base.cast(), self.total);
        }
    }
}
