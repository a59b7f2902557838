//! The ledger command's tests, in one test binary (each links the policy, kube and host-sim):
//! - `inputs`: a cluster-state file, a kubectl dump (JSON and YAML) give the same ledger;
//! - `output`: the table's figures for the example, `--output json`, colours, `--holders`;
//! - `what_if`: `--what-if` gives the policy's verdict (scenarios, manifests, exit codes);
//! - `live`: the live reader against a stand-in API server (read-only, pagination, 403).

mod common;
mod inputs;
mod live;
mod output;
mod what_if;
