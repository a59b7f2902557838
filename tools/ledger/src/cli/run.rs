//! The run: the ledger, `--what-if` or `--compare` on the cluster the flags name, written as
//! `-o` asks, and the exit code.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;
use tenant_reservation_policy::cluster::Kubernetes;
use tenant_reservation_policy::ledger::{Ledger, ledger};
use tenant_reservation_policy::settings::Settings;
use tenant_reservation_policy::summary::build::summaries;

use super::args::{LedgerArgs, Output};
use super::cluster::{Cluster, choose_settings, open, uncovered_kinds};
use super::{OK, OVER_BUDGET, REFUSED, exit_code};
use crate::compare::{self, Comparison};
use crate::settings::{self, Source};
use crate::{table, tenant, what_if};

/// Runs the ledger (or the what-if, or the comparison), writing the result to `out` and
/// problems to `err`; returns the exit code.
pub fn run(args: &LedgerArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let drawn = draw(args, out, err);
    exit_code(drawn, err)
}

fn draw(args: &LedgerArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let cluster = open(args, err)?;
    let (settings_value, source) = choose_settings(args, &cluster)?;
    if !matches!(source, Source::File(_)) {
        writeln!(err, "settings: {source}")?;
    }
    say_view(&cluster, err)?;
    if let Some(path) = &args.what_if {
        return what_if_run(path, &settings_value, &cluster, args.output, out);
    }
    let settings = settings::parse(&settings_value)?;
    let on = On {
        args,
        cluster: &cluster,
        source: &source,
        settings: &settings,
    };
    if let Some(path) = &args.compare {
        return compare_run(&on, path, out, err);
    }
    if args.summaries {
        return summaries_run(&on, out);
    }
    ledger_run(&on, out, err)
}

/// What the ledger and the comparison are drawn on: the flags, the cluster, the settings and
/// where they came from.
#[derive(Clone, Copy)]
struct On<'a> {
    args: &'a LedgerArgs,
    cluster: &'a Cluster,
    source: &'a Source,
    settings: &'a Settings,
}

/// In a tenant's view, whose it is and what it could not read.
fn say_view(cluster: &Cluster, err: &mut dyn Write) -> Result<()> {
    if let Cluster::Tenant(_, view) = cluster {
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
    Ok(())
}

/// `--what-if FILE`: the policy's verdict on one write; 0 when it fits, 1 when refused.
fn what_if_run(
    path: &Path,
    settings: &Value,
    cluster: &Cluster,
    output: Output,
    out: &mut dyn Write,
) -> Result<u8> {
    let document = read_document(path)?;
    let decision = what_if::decide(&document, settings, cluster.kubernetes())?;
    emit(out, output, |_| decision.render(), || decision.to_json())?;
    Ok(if decision.verdict.allowed {
        OK
    } else {
        REFUSED
    })
}

/// `--compare FILE`: the same cluster judged two ways.
fn compare_run(on: &On, path: &Path, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let args = on.args;
    let namespace = on.cluster.namespace(args);
    let comparison = compare_with(
        path,
        on.settings,
        on.source,
        on.cluster.kubernetes(),
        namespace.as_deref(),
    )?;
    emit(
        out,
        args.output,
        |_| comparison.render(),
        || comparison.to_json(),
    )?;
    for warning in &comparison.warnings {
        writeln!(err, "warning: {warning}")?;
    }
    over_budget_exit(args, comparison.over_budget_after(), err)
}

/// The ledger: every pool and key shown (or the pool of `-n`).
fn ledger_run(on: &On, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let On {
        args,
        cluster,
        source,
        settings,
    } = *on;
    let mut ledger = ledger(settings, cluster.kubernetes(), args.holders)?;
    if let (Source::Deployed { policy, .. }, Cluster::Live(live)) = (source, cluster) {
        ledger.warnings.extend(uncovered_kinds(live, policy));
    }
    if let Some(namespace) = &cluster.namespace(args) {
        only_the_pool_of(&mut ledger, namespace, cluster)?;
    }
    emit(
        out,
        args.output,
        |wide| table::render(&ledger, wide),
        || with_view(with_source(ledger.to_json(), source), cluster),
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

/// `--summaries`: every pool's `PoolReservation`, renewed now, as one List.
fn summaries_run(on: &On, out: &mut dyn Write) -> Result<u8> {
    let renewed = tenant_reservation_policy::summary::freshness::now();
    let objects = summaries(on.settings, on.cluster.kubernetes(), renewed)?;
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    match on.args.output {
        Output::Json => writeln!(out, "{list:#}")?,
        _ => write!(out, "{}", serde_yaml::to_string(&list)?)?,
    }
    Ok(OK)
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
    path: &Path,
    settings: &Settings,
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

/// A JSON or YAML document.
fn read_document(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("{} is not JSON or YAML", path.display()))?;
    serde_json::to_value(doc).with_context(|| format!("{} is not JSON-compatible", path.display()))
}
