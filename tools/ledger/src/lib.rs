//! The pool ledger's command: `tenant-reservation ledger` and the kubectl plugin
//! `kubectl cozystack-reservations`. Every pool and key of a cluster (budget, carved out, reserved,
//! available, over budget, overcommitted, largest holders), drawn by the policy crate's own
//! [`tenant_reservation_policy::ledger`] natively, and `--what-if`: the policy's own verdict on
//! one write.
//!
//! - [`state`]: a cluster-state file or a `kubectl get -o json` dump, as the host answers it;
//! - [`live`]: a live cluster through the user's kubeconfig, read-only (LIST only);
//! - [`tenant`]: one tenant's pools from what its Cozystack roles can read;
//! - [`proxy`]: the proxy kubectl would use to reach it;
//! - [`settings`]: the policy settings (a file, a ClusterAdmissionPolicy, or the shipped ones);
//! - [`coverage`]: the application kinds the deployed policy's rules never send to it;
//! - [`table`]: the ledger for people;
//! - [`what_if`]: one write decided by the policy on the same cluster;
//! - [`compare`]: the same cluster judged two ways, pool by pool and application by application;
//! - [`cli`]: the flags, and the run that ties them together.

pub mod cli;
pub mod compare;
pub mod coverage;
pub mod live;
pub mod proxy;
pub mod settings;
pub mod state;
pub mod table;
pub mod tenant;
pub mod what_if;
