//! The flags of `tenant-reservation ledger` (and `kubectl cozystack-reservations`), and the run.
//!
//! The flags follow kubectl's: `--kubeconfig`, `--context`, `-n`/`--namespace`,
//! `-A`/`--all-namespaces`, `-o table|wide|json|yaml`, `--as`, `--as-group`,
//! `--request-timeout`, `--chunk-size`; proxies come from `HTTPS_PROXY`/`NO_PROXY` (or the
//! kubeconfig's `proxy-url`) as kubectl takes them.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use tenant_reservation_policy::cluster::{APPLICATION_DEFINITION, Kubernetes};
use tenant_reservation_policy::ledger::{Ledger, ledger};

use crate::compare::{self, Comparison};
use crate::live::{CHUNK_SIZE, Connection, Live};
use crate::settings::{self, Source};
use crate::tenant::{self, TenantView};
use crate::{coverage, state, table, what_if};

/// Exit codes: the ledger was drawn, or the write fits.
pub const OK: u8 = 0;
/// `--what-if`: the policy refuses the write.
pub const REFUSED: u8 = 1;
/// Bad input, an unreadable cluster, invalid settings.
pub const ERROR: u8 = 2;
/// `--fail-over-budget`: a pool shown is over its budget.
pub const OVER_BUDGET: u8 = 3;

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

/// Runs the ledger (or the what-if, or the comparison), writing the result to `out` and
/// problems to `err`; returns the exit code.
pub fn run(args: &LedgerArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match draw(args, out, err) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "error: {e:#}");
            ERROR
        }
    }
}

fn draw(args: &LedgerArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let cluster = open(args, err)?;
    let (settings_value, source) = choose_settings(args, &cluster)?;
    if !matches!(source, Source::File(_)) {
        writeln!(err, "settings: {source}")?;
    }
    if let Cluster::Tenant(_, view) = &cluster {
        writeln!(
            err,
            "view: tenant {}, as its Cozystack roles read it (its applications and sub-tenants, its ResourceQuota {}, the instance types)",
            view.namespace,
            tenant::QUOTA
        )?;
        for note in view.notes() {
            writeln!(err, "note: {note}")?;
        }
    }
    let namespace = cluster.namespace(args);
    let k8s = cluster.kubernetes();
    if let Some(path) = &args.what_if {
        let document = read_document(path)?;
        let decision = what_if::decide(&document, &settings_value, k8s)?;
        emit(
            out,
            args.output,
            |_| decision.render(),
            || decision.to_json(),
        )?;
        return Ok(if decision.verdict.allowed {
            OK
        } else {
            REFUSED
        });
    }
    let settings = settings::parse(&settings_value)?;
    if let Some(path) = &args.compare {
        let comparison = compare_with(path, &settings, &source, k8s, namespace.as_deref())?;
        emit(
            out,
            args.output,
            |_| comparison.render(),
            || comparison.to_json(),
        )?;
        for warning in &comparison.warnings {
            writeln!(err, "warning: {warning}")?;
        }
        return over_budget_exit(args, comparison.over_budget_after(), err);
    }
    let mut ledger = ledger(&settings, k8s, args.holders)?;
    if let (Source::Deployed { policy, .. }, Cluster::Live(live)) = (&source, &cluster) {
        ledger.warnings.extend(uncovered_kinds(live, policy));
    }
    if let Some(namespace) = &namespace {
        only_the_pool_of(&mut ledger, namespace, &cluster)?;
    }
    emit(
        out,
        args.output,
        |wide| table::render(&ledger, wide),
        || with_view(with_source(ledger.to_json(), &source), &cluster),
    )?;
    for warning in table::warnings(&ledger) {
        writeln!(err, "warning: {warning}")?;
    }
    let over: Vec<String> = ledger
        .pools
        .iter()
        .filter(|line| line.over_budget.is_some())
        .map(|line| format!("{} {}", line.standing.pool, line.standing.key))
        .collect();
    over_budget_exit(args, over, err)
}

/// Writes a result as `-o` asks: `human(wide)` for table and wide, `json()` for JSON and YAML.
fn emit(
    out: &mut dyn Write,
    output: Output,
    human: impl FnOnce(bool) -> String,
    json: impl FnOnce() -> Value,
) -> Result<()> {
    match output {
        Output::Table => write!(out, "{}", human(false))?,
        Output::Wide => write!(out, "{}", human(true))?,
        Output::Json => writeln!(out, "{:#}", json())?,
        Output::Yaml => write!(out, "{}", serde_yaml::to_string(&json())?)?,
    }
    Ok(())
}

/// Exit code 3 under `--fail-over-budget` when `over` (pool and key) is not empty.
fn over_budget_exit(args: &LedgerArgs, over: Vec<String>, err: &mut dyn Write) -> Result<u8> {
    if args.fail_over_budget && !over.is_empty() {
        writeln!(err, "over budget: {}", over.join(", "))?;
        return Ok(OVER_BUDGET);
    }
    Ok(OK)
}

/// The JSON ledger with whose view it is, when it is a tenant's.
fn with_view(mut json: Value, cluster: &Cluster) -> Value {
    if let Cluster::Tenant(_, view) = cluster {
        json["view"] = serde_json::json!({ "tenant": view.namespace, "notes": view.notes() });
    }
    json
}

/// The JSON ledger with where its settings came from.
fn with_source(mut json: Value, source: &Source) -> Value {
    json["settings"] = Value::String(source.to_string());
    json
}

/// Keeps the lines of the pool that holds `namespace` (its own namespace or a member's).
fn only_the_pool_of(ledger: &mut Ledger, namespace: &str, cluster: &Cluster) -> Result<()> {
    ledger
        .pools
        .retain(|line| compare::holds(&line.standing.pool, &line.namespaces, namespace));
    if matches!(cluster, Cluster::Tenant(..)) {
        // A tenant that bounds nothing has no pool of its own; the view's notes say so.
        return Ok(());
    }
    compare::held_somewhere(!ledger.pools.is_empty(), namespace)
}

/// The comparison `--compare FILE` asks for.
fn compare_with(
    path: &std::path::Path,
    settings: &tenant_reservation_policy::settings::Settings,
    source: &Source,
    k8s: &dyn Kubernetes,
    namespace: Option<&str>,
) -> Result<Comparison> {
    let document = read_document(path)?;
    let now = ledger(settings, k8s, usize::MAX)?;
    let file_label = path.display().to_string();
    let mut comparison = if compare::is_ledger(&document) {
        // Another version's ledger is what runs now; this version is what would run.
        compare::compare(
            &format!("the ledger {file_label}"),
            &document,
            &format!("this plugin ({}) with {source}", env!("CARGO_PKG_VERSION")),
            &with_source(now.to_json(), source),
        )?
    } else {
        let then_value = settings::from_document(document)
            .with_context(|| format!("settings file {file_label}"))?;
        let then_settings =
            settings::parse(&then_value).with_context(|| format!("settings file {file_label}"))?;
        let then = ledger(&then_settings, k8s, usize::MAX)?;
        compare::compare(
            &source.to_string(),
            &now.to_json(),
            &format!("the settings file {file_label}"),
            &then.to_json(),
        )?
    };
    if let Some(namespace) = namespace {
        comparison.only_namespace(namespace)?;
    }
    Ok(comparison)
}

/// The cluster the flags name.
pub enum Cluster {
    File(state::Stored),
    Live(Live),
    /// One tenant's pools, read live with what its roles grant.
    Tenant(Live, TenantView),
}

impl Cluster {
    pub fn kubernetes(&self) -> &dyn Kubernetes {
        match self {
            Cluster::File(stored) => stored,
            Cluster::Live(live) => live,
            Cluster::Tenant(_, view) => &view.cluster,
        }
    }

    fn live(&self) -> Option<&Live> {
        match self {
            Cluster::File(_) => None,
            Cluster::Live(live) | Cluster::Tenant(live, _) => Some(live),
        }
    }

    /// The namespace whose pools are shown: `-n`, or the tenant's in a tenant's view.
    fn namespace(&self, args: &LedgerArgs) -> Option<String> {
        match self {
            Cluster::Tenant(_, view) => Some(view.namespace.clone()),
            _ => args.namespace.clone(),
        }
    }
}

fn open(args: &LedgerArgs, err: &mut dyn Write) -> Result<Cluster> {
    match args.state.as_ref().or(args.dump.as_ref()) {
        Some(path) => {
            let store = state::load(path)?;
            for warning in state::missing(&store) {
                writeln!(err, "warning: {}: {warning}", path.display())?;
            }
            Ok(Cluster::File(state::Stored(store)))
        }
        None => {
            let live = Live::connect(&Connection {
                kubeconfig: args.kubeconfig.clone(),
                context: args.context.clone(),
                as_user: args.as_user.clone(),
                as_groups: args.as_group.clone(),
                request_timeout: (!args.request_timeout.is_zero()).then_some(args.request_timeout),
                chunk_size: args.chunk_size,
            })?;
            view(args, live, err)
        }
    }
}

/// The tenant namespace a tenant's view would read: `-n`, else the context's namespace when a
/// tenant owns it.
fn tenant_namespace(args: &LedgerArgs, live: &Live) -> Option<String> {
    match &args.namespace {
        Some(namespace) => Some(namespace.clone()),
        None => live
            .default_namespace()
            .filter(|ns| tenant_reservation_policy::owner_of(ns).is_some())
            .map(str::to_string),
    }
}

/// The view `--view` asks for: under `auto`, the cluster's when the user may list
/// HelmReleases in every namespace (as `kubectl auth can-i` asks), else the tenant's.
fn view(args: &LedgerArgs, live: Live, err: &mut dyn Write) -> Result<Cluster> {
    let namespace = tenant_namespace(args, &live);
    let tenant = match args.view {
        View::Cluster => false,
        View::Tenant => true,
        // A tenant's view needs a tenant: without one, the cluster's view fails with what it
        // lacks, and says how a tenant's user reads theirs.
        View::Auto if namespace.is_none() => false,
        View::Auto => {
            let may = live
                .may_cluster_wide("list", "helm.toolkit.fluxcd.io", "helmreleases")
                .map_err(|e| {
                    anyhow::anyhow!("{}: cannot ask what the user may list: {e}", live.server())
                })?;
            !may
        }
    };
    if !tenant {
        return Ok(Cluster::Live(live));
    }
    if args.what_if.is_some() || args.compare.is_some() {
        bail!(
            "--what-if and --compare judge the whole cluster, which a tenant's view cannot read (--view cluster, with the RBAC of examples/plugin/rbac.yaml)"
        );
    }
    let Some(namespace) = namespace else {
        bail!("the tenant view reads one tenant: give its namespace with -n");
    };
    if args.view == View::Auto {
        writeln!(
            err,
            "view: the user may not list helmreleases cluster-wide (--view cluster to read every pool anyway)"
        )?;
    }
    let view = tenant::read(&live, &namespace)?;
    Ok(Cluster::Tenant(live, view))
}

/// The application kinds of the live cluster that `policy`'s rules never send to it.
fn uncovered_kinds(live: &Live, policy: &Value) -> Vec<String> {
    let (api_version, kind) = APPLICATION_DEFINITION;
    match live.list_objects((api_version, kind, "applicationdefinitions"), None) {
        Ok(definitions) => coverage::uncovered(policy, &definitions),
        Err(e) => vec![format!(
            "cannot list applicationdefinitions.cozystack.io to check the policy's rules: {e}"
        )],
    }
}

/// The settings the flags name, and where they come from: `--settings`, else the deployed
/// ClusterAdmissionPolicy, else the shipped ones.
fn choose_settings(args: &LedgerArgs, cluster: &Cluster) -> Result<(Value, Source)> {
    if let Some(path) = &args.settings {
        return Ok((
            settings::load(Some(path))?,
            Source::File(path.display().to_string()),
        ));
    }
    let Some(live) = cluster.live() else {
        if let Some(name) = &args.policy {
            bail!("--policy {name} reads a live cluster; with --state or --dump give --settings");
        }
        return Ok((
            settings::shipped()?,
            Source::Shipped("the cluster is read from a file".into()),
        ));
    };
    let policies = match live.cluster_admission_policies() {
        Ok(policies) => policies,
        // Without Kubewarden's CRD, or without the right to read policies, the shipped
        // settings are the best guess; unless the user named a policy.
        Err(e) if matches!(e.code(), Some(403 | 404)) && args.policy.is_none() => {
            let why = format!(
                "cannot list clusteradmissionpolicies.policies.kubewarden.io: {e}; give --settings to judge with the deployed ones"
            );
            return Ok((settings::shipped()?, Source::Shipped(why)));
        }
        Err(e) => bail!(
            "{}: cannot list clusteradmissionpolicies.policies.kubewarden.io: {e}",
            live.server()
        ),
    };
    match settings::deployed(&policies, args.policy.as_deref())? {
        Some(deployed) => Ok((
            deployed.settings,
            Source::Deployed {
                name: deployed.name,
                policy: deployed.policy,
            },
        )),
        None => Ok((
            settings::shipped()?,
            Source::Shipped("no ClusterAdmissionPolicy in the cluster runs this policy".into()),
        )),
    }
}

/// A JSON or YAML document.
fn read_document(path: &std::path::Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("{} is not JSON or YAML", path.display()))?;
    serde_json::to_value(doc).with_context(|| format!("{} is not JSON-compatible", path.display()))
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
