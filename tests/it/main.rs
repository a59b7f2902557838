//! The integration tests, one binary: the policy through its public API only, against real
//! Cozystack definitions and clusters. [`common`] is the kit; each other module is one gate
//! or concern. Run one with `cargo test --test it <module>::`.

mod common;

mod application_gate;
mod bad_inputs;
mod charges_a;
mod charges_b;
mod charges_c;
mod cluster_states;
mod contract;
mod docs;
mod gpu_budgets;
mod host_calls;
mod install;
mod intake;
mod ledger;
mod pending_modules;
mod placement;
mod properties;
mod stock;
mod summary;
mod tenant_gate;
mod tenant_modules;
