//! `tenant-reservation rules`: the resources list that covers every ApplicationDefinition, and
//! the plurals the policy's rules or the audit scanner's ClusterRole leave out (what
//! scripts/generate-rules.sh prints).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use tenant_reservation_policy::cluster::APPLICATION_DEFINITION;

use super::{OK, REFUSED, exit_code};
use crate::{coverage, state};

#[derive(clap::Args, Debug, Clone)]
pub struct RulesArgs {
    /// The ApplicationDefinitions: `kubectl get applicationdefinitions -o json` (or -o yaml),
    /// or a directory whose *.yaml files hold them.
    #[arg(long, value_name = "FILE|DIR")]
    pub definitions: PathBuf,
    /// The ClusterAdmissionPolicy whose spec.rules must name every plural.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "deploy/clusteradmissionpolicy.yaml"
    )]
    pub policy: PathBuf,
    /// The file holding the audit scanner's ClusterRole, which must let it list every plural.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "deploy/audit-scanner-rbac.yaml"
    )]
    pub role: PathBuf,
}

/// Prints the resources list to `out` and, on `err`, each place that leaves a plural out.
/// Exit code 0: every definition is covered; 1: one is not; 2: error.
pub fn run_rules(args: &RulesArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let found = rules(args, out, err);
    exit_code(found, err)
}

fn rules(args: &RulesArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let definitions = definitions(&args.definitions)?;
    let policy = one_of_kind(&args.policy, "ClusterAdmissionPolicy")?;
    let role = one_of_kind(&args.role, "ClusterRole")?;
    let found = coverage::rules(&definitions, &policy, &role);
    write!(out, "{}", found.render())?;
    let places = [
        (
            format!("{} rules", args.policy.display()),
            &found.not_in_policy,
        ),
        (
            format!("{} ClusterRole", args.role.display()),
            &found.not_in_role,
        ),
    ];
    let mut code = OK;
    for (place, left_out) in places {
        if !left_out.is_empty() {
            writeln!(
                err,
                "not in {place}: {} (never sent to the policy: reserves nothing)",
                left_out.join(", ")
            )?;
            code = REFUSED;
        }
    }
    Ok(code)
}

/// The objects of a file (the ledger's reader: multi-document YAML or JSON, Lists expanded).
fn objects(path: &Path) -> Result<Vec<Value>> {
    Ok(state::load(path)?.objects().cloned().collect())
}

/// The ApplicationDefinitions of a file, or of a directory's *.yaml files.
fn definitions(path: &Path) -> Result<Vec<Value>> {
    let mut files = vec![path.to_path_buf()];
    if path.is_dir() {
        files = std::fs::read_dir(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        files.retain(|f| f.extension().is_some_and(|e| e == "yaml"));
    }
    let (_, kind) = APPLICATION_DEFINITION;
    let mut all = Vec::new();
    for file in files {
        all.extend(objects(&file)?.into_iter().filter(|d| d["kind"] == kind));
    }
    Ok(all)
}

/// The one object of `kind` a file holds.
fn one_of_kind(path: &Path, kind: &str) -> Result<Value> {
    let mut found = objects(path)?.into_iter().filter(|d| d["kind"] == kind);
    match (found.next(), found.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => bail!("{} holds no {kind}", path.display()),
        (Some(_), Some(_)) => bail!("{} holds more than one {kind}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path)
    }

    fn args(definitions: PathBuf, policy: PathBuf) -> RulesArgs {
        RulesArgs {
            definitions,
            policy,
            role: repository("deploy/audit-scanner-rbac.yaml"),
        }
    }

    fn run(args: &RulesArgs) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_rules(args, &mut out, &mut err);
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (code, text(out), text(err))
    }

    #[test]
    fn the_shipped_rules_and_role_cover_every_in_tree_definition() {
        let (code, out, err) = run(&args(
            repository("test_data/reference/applicationdefinitions"),
            repository("deploy/clusteradmissionpolicy.yaml"),
        ));
        assert_eq!((code, err.as_str()), (OK, ""));
        assert_eq!(out.lines().count(), 1 + 31, "{out}");
        assert!(out.contains("\n  - postgreses\n"), "{out}");
    }

    #[test]
    fn a_list_file_with_a_plural_the_policy_leaves_out_exits_1_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("definitions.json");
        let definition = |plural: &str| {
            serde_json::json!({"apiVersion": "cozystack.io/v1alpha1", "kind": "ApplicationDefinition",
                "metadata": {"name": plural}, "spec": {"application": {"plural": plural}}})
        };
        let items = serde_json::json!({"apiVersion": "v1", "kind": "List",
            "items": [definition("postgreses"), definition("streams")]});
        std::fs::write(&list, items.to_string()).unwrap();
        let (code, out, err) = run(&args(
            list,
            repository("deploy/clusteradmissionpolicy.yaml"),
        ));
        assert_eq!(code, REFUSED, "{err}");
        assert_eq!(out, "resources:\n  - postgreses\n  - streams\n");
        assert!(
            err.contains("clusteradmissionpolicy.yaml rules: streams (never sent to the policy: reserves nothing)"),
            "{err}"
        );
        assert!(
            err.contains("audit-scanner-rbac.yaml ClusterRole: streams"),
            "{err}"
        );
    }

    #[test]
    fn a_file_without_the_policy_is_an_error() {
        let (code, _, err) = run(&args(
            repository("test_data/reference/applicationdefinitions"),
            repository("deploy/audit-scanner-rbac.yaml"),
        ));
        assert_eq!(code, crate::cli::ERROR);
        assert!(err.contains("holds no ClusterAdmissionPolicy"), "{err}");
    }
}
