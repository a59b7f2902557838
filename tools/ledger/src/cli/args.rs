//! The flags. They follow kubectl's: `--kubeconfig`, `--context`, `-n`/`--namespace`,
//! `-A`/`--all-namespaces`, `-o table|wide|json|yaml`, `--as`, `--as-group`,
//! `--request-timeout`, `--chunk-size`; proxies come from `HTTPS_PROXY`/`NO_PROXY` (or the
//! kubeconfig's `proxy-url`) as kubectl takes them.

use std::path::PathBuf;
use std::time::Duration;

use crate::live::CHUNK_SIZE;

#[derive(clap::Args, Debug, Clone)]
pub struct LedgerArgs {
    /// A cluster-state YAML (as the tests' test_data/**/cluster.yaml): multi-document, Lists
    /// expanded.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dump", "kubeconfig", "context"])]
    pub state: Option<PathBuf>,
    /// A dump from `kubectl get applicationdefinitions,helmreleases,virtualmachineclusterinstancetypes
    /// -A -o json` (or -o yaml).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["kubeconfig", "context"])]
    pub dump: Option<PathBuf>,
    /// The kubeconfig of the live cluster (default: $KUBECONFIG, else ~/.kube/config). The
    /// live cluster is read when neither --state nor --dump is given; read-only (LIST).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Username to impersonate for the reads.
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// Group to impersonate (repeat for several); needs --as.
    #[arg(long = "as-group", value_name = "GROUP")]
    pub as_group: Vec<String>,
    /// How long one request to the API server may take (`30s`, `1m`, `1h`; a bare number is
    /// seconds; 0 waits as long as the server does).
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = request_timeout)]
    pub request_timeout: Duration,
    /// Items per LIST page; 0 lists each resource in one response.
    #[arg(long, value_name = "N", default_value_t = CHUNK_SIZE)]
    pub chunk_size: u32,
    /// Only the pool that holds this namespace.
    #[arg(long, short = 'n', value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Every pool of the cluster (the default).
    #[arg(long, short = 'A', conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Policy settings: JSON or YAML, or a ClusterAdmissionPolicy manifest (its spec.settings).
    /// Default: those of the ClusterAdmissionPolicy deployed in the cluster that runs this
    /// policy, else those shipped with this plugin; the output says which.
    #[arg(long, value_name = "FILE", conflicts_with = "policy")]
    pub settings: Option<PathBuf>,
    /// The deployed ClusterAdmissionPolicy whose settings to use, when several run this policy.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// `table` for people, `wide` adds each pool's namespaces, `json` and `yaml` for scripts.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// How many of the largest holders to show per pool and key (`all` for every one).
    #[arg(long, value_name = "N|all", default_value = "3", value_parser = holders)]
    pub holders: usize,
    /// Whether this write fits: an AdmissionReview, or a bare application (or HelmRelease)
    /// manifest, a CREATE, or an UPDATE of the one stored under its name. Exit code 0: it
    /// fits, 1: the policy refuses it, 2: error.
    #[arg(long, value_name = "FILE", conflicts_with = "compare")]
    pub what_if: Option<PathBuf>,
    /// Compare what runs now with FILE: settings (or a ClusterAdmissionPolicy manifest) to
    /// judge the same cluster under, or the `-o json --holders all` ledger of another version
    /// of this plugin, taken as what runs now. Pool by pool and application by application.
    #[arg(long, value_name = "FILE")]
    pub compare: Option<PathBuf>,
    /// Every pool's summary as the pool-summary controller keeps it (PoolReservation objects,
    /// renewed now, docs/pool-summary.md): a List in `-o json`, else in YAML. Apply it with
    /// `kubectl apply --server-side`, then again with `--subresource=status`.
    #[arg(long, conflicts_with_all = ["what_if", "compare", "namespace"])]
    pub summaries: bool,
    /// Exit with 3 when a pool shown is over its budget (after --compare: under FILE).
    #[arg(long)]
    pub fail_over_budget: bool,
    /// Whose view: `cluster` reads every pool (list on HelmReleases, ApplicationDefinitions
    /// and instance types cluster-wide); `tenant` reads the pools of the tenant namespace `-n`
    /// (else the context's) with what Cozystack's tenant roles grant; `auto` is `cluster` when
    /// the user may list HelmReleases cluster-wide, else `tenant`.
    #[arg(long, value_enum, default_value_t = View::Auto)]
    pub view: View,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum View {
    #[default]
    Auto,
    Cluster,
    Tenant,
}

/// The flags' defaults, as clap gives them (`--holders 3`), for callers that build the flags.
impl Default for LedgerArgs {
    fn default() -> Self {
        LedgerArgs {
            state: None,
            dump: None,
            kubeconfig: None,
            context: None,
            as_user: None,
            as_group: Vec::new(),
            request_timeout: Duration::ZERO,
            chunk_size: CHUNK_SIZE,
            namespace: None,
            all_namespaces: false,
            settings: None,
            policy: None,
            output: Output::Table,
            holders: DEFAULT_HOLDERS,
            what_if: None,
            compare: None,
            summaries: false,
            fail_over_budget: false,
            view: View::Auto,
        }
    }
}

/// How many holders a line shows unless told.
pub const DEFAULT_HOLDERS: usize = 3;

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Output {
    #[default]
    Table,
    Wide,
    Json,
    Yaml,
}

/// kubectl's `--request-timeout`: `0`, a bare number of seconds, or a number with `s`, `m`
/// or `h` (also combined: `1m30s`).
pub fn request_timeout(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration (30s, 1m, 1h; 0 for none)");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = 0u64;
    let mut digits = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' if !digits.is_empty() => {
                let n: u64 = digits.parse().map_err(|_| bad())?;
                let unit = match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                total = n
                    .checked_mul(unit)
                    .and_then(|s| total.checked_add(s))
                    .ok_or_else(bad)?;
                digits.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !digits.is_empty() || text.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// `--holders`: a count, or `all`.
fn holders(text: &str) -> Result<usize, String> {
    match text {
        "all" => Ok(usize::MAX),
        _ => text
            .parse()
            .map_err(|_| format!("{text:?} is not a number of holders (or `all`)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_timeouts_read_as_kubectl_reads_them() {
        let s = Duration::from_secs;
        for (text, expected) in [
            ("0", s(0)),
            ("30", s(30)),
            ("30s", s(30)),
            ("2m", s(120)),
            ("1h", s(3600)),
            ("1m30s", s(90)),
        ] {
            assert_eq!(request_timeout(text), Ok(expected), "{text}");
        }
        for text in ["", "s", "1x", "1.5s", "-1", "1m3"] {
            assert!(request_timeout(text).is_err(), "{text}");
        }
        assert_eq!(holders("all"), Ok(usize::MAX));
        assert_eq!(holders("2"), Ok(2));
        assert!(holders("many").is_err());
    }
}
