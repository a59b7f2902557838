//! Host-only release tool for the policy: what `kwctl annotate` does, for machines without kwctl
//! (without claiming to be kwctl), and a drift check over the release metadata, whose
//! artifacthub-pkg.yml must be what `kwctl scaffold artifacthub` writes ([`artifacthub`] models
//! it; only kwctl writes the file).
//!
//! Nothing here is part of policy.wasm.

pub mod artifacthub;
pub mod check;
pub mod metadata;
pub mod wasm;
