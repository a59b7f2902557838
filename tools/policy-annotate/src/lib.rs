//! Host-only release tool for the policy: what `kwctl annotate` and `kwctl scaffold artifacthub`
//! do, for machines without kwctl, and a drift check over the release metadata.
//!
//! Nothing here is part of policy.wasm.

pub mod artifacthub;
pub mod check;
pub mod metadata;
pub mod wasm;
