//! The live reader against a stand-in API server on 127.0.0.1 (no cluster runs here): a
//! kubeconfig in a temporary directory points at it over HTTP with a bearer token.

use std::collections::BTreeSet;

use serde_json::Value;
use tenant_reservation_policy::cluster::{Kubernetes, Lookup, fixed_masks};

use crate::common::mock_api::MockApi;
use crate::common::*;
use crate::inputs::ledger_of;
use ledger::cli::{LedgerArgs, Output};
use ledger::{live, state};

const TOKEN: &str = "ledger-test-token";

struct Cluster {
    api: MockApi,
    kubeconfig: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// The example served page by page (`page` items per response).
fn serve(forbidden: &[&str], page: usize) -> Cluster {
    let api = MockApi::serve(
        state::load(&example().join("cluster.yaml")).unwrap(),
        forbidden,
        page,
    );
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(&kubeconfig, api.kubeconfig(TOKEN)).unwrap();
    Cluster {
        api,
        kubeconfig,
        _dir: dir,
    }
}

fn connection(cluster: &Cluster) -> live::Connection {
    live::Connection {
        kubeconfig: Some(cluster.kubeconfig.clone()),
        ..live::Connection::default()
    }
}

fn live_args(cluster: &Cluster) -> LedgerArgs {
    LedgerArgs {
        kubeconfig: Some(cluster.kubeconfig.clone()),
        settings: Some(example().join("settings.json")),
        ..LedgerArgs::default()
    }
}

#[test]
fn the_live_ledger_is_the_state_files_and_only_reads() {
    let cluster = serve(&[], 2);
    let settings = ledger::settings::parse(
        &ledger::settings::load(Some(&example().join("settings.json"))).unwrap(),
    )
    .unwrap();
    let k8s = live::Live::connect(&connection(&cluster)).unwrap();
    let from_live = tenant_reservation_policy::ledger::ledger(&settings, &k8s, 3).unwrap();
    assert_eq!(from_live, ledger_of(&example().join("cluster.yaml")));

    let seen = cluster.api.seen();
    assert!(!seen.is_empty());
    // Read-only: every request a GET, a LIST of one of the three resources, with the token.
    for request in &seen {
        assert_eq!(request.method, "GET", "{request:?}");
        assert_eq!(
            request.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}"))
        );
        assert!(
            [
                "/apis/cozystack.io/v1alpha1/applicationdefinitions?",
                "/apis/helm.toolkit.fluxcd.io/v2/helmreleases?",
                "/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes?"
            ]
            .iter()
            .any(|p| request.target.starts_with(p)),
            "{request:?}"
        );
    }
    // Two items a page: the HelmReleases (seven) took four pages, the later ones continued.
    let releases: Vec<_> = seen
        .iter()
        .filter(|r| r.target.contains("/helmreleases?"))
        .collect();
    assert_eq!(releases.len(), 4, "{releases:?}");
    assert!(
        releases[0]
            .target
            .contains("labelSelector=apps.cozystack.io%2Fapplication.kind")
    );
    assert!(releases[1..].iter().all(|r| r.target.contains("continue=")));
}

#[test]
fn the_command_and_the_plugin_read_the_live_cluster() {
    let cluster = serve(&[], 500);
    let state = ran(&LedgerArgs {
        output: Output::Json,
        ..on_state(
            &example().join("cluster.yaml"),
            &example().join("settings.json"),
        )
    });
    let live = ran(&LedgerArgs {
        output: Output::Json,
        ..live_args(&cluster)
    });
    assert_eq!(live.code, 0, "{}", live.err);
    assert_eq!(live.out, state.out);
    let plugin = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-cozystack_reservations"))
        .env("KUBECONFIG", &cluster.kubeconfig)
        .args(["--output", "json", "--settings"])
        .arg(example().join("settings.json"))
        .output()
        .unwrap();
    assert_eq!(
        plugin.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plugin.stderr)
    );
    assert_eq!(String::from_utf8(plugin.stdout).unwrap(), state.out);
}

/// A namespaced lookup with selectors lists that namespace only, selectors passed on; the
/// answer is the host's (field masks applied).
#[test]
fn namespaced_lookups_pass_their_selectors_and_masks_apply() {
    let cluster = serve(&[], 500);
    let k8s = live::Live::connect(&connection(&cluster)).unwrap();
    let lookup = Lookup::Tenant {
        namespace: "tenant-root".into(),
        release: "tenant-foo".into(),
    };
    // A tenant above is read in the applications' masks: the fixed ones and the value paths.
    let mut masks = fixed_masks(&lookup);
    masks.insert("spec.values.resourceQuotas".into());
    let answer: Value = serde_json::from_slice(&k8s.list(&lookup, &masks).unwrap()).unwrap();
    let items = answer["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"]["name"], "tenant-foo");
    assert_eq!(
        items[0]["spec"]["values"]["resourceQuotas"]["memory"],
        "32Gi"
    );
    assert!(
        items[0]["spec"].get("chart").is_none(),
        "masked: {:#}",
        items[0]
    );
    let target = &cluster.api.seen()[0].target;
    assert!(
        target.starts_with("/apis/helm.toolkit.fluxcd.io/v2/namespaces/tenant-root/helmreleases?"),
        "{target}"
    );
    assert!(
        target.contains("fieldSelector=metadata.name%3Dtenant-foo"),
        "{target}"
    );

    // The same answer the cluster-state file gives.
    let from_state = state::Stored(state::load(&example().join("cluster.yaml")).unwrap());
    let expected: Value =
        serde_json::from_slice(&from_state.list(&lookup, &masks).unwrap()).unwrap();
    assert_eq!(answer["items"], expected["items"]);
    // A cluster-scoped list: every instance type.
    let all = Lookup::InstanceTypes;
    let listed: Value = serde_json::from_slice(&k8s.list(&all, &BTreeSet::new()).unwrap()).unwrap();
    let items = listed["items"].as_array().unwrap();
    assert!(items.len() > 1, "{listed}");
    let medium: Vec<_> = items
        .iter()
        .filter(|i| i["metadata"]["name"] == "u1.medium")
        .collect();
    assert_eq!(medium.len(), 1, "{listed}");
}

#[test]
fn a_forbidden_list_names_the_resource() {
    let cluster = serve(&["helmreleases"], 500);
    fails_with(
        &live_args(&cluster),
        ": the user may not list helm.toolkit.fluxcd.io/v2 HelmRelease: 403 Forbidden: helmreleases.helm.toolkit.fluxcd.io is forbidden: User \"reader\" cannot list resource \"helmreleases\"",
    );
}

#[test]
fn an_unauthenticated_user_and_a_missing_context_are_clear_errors() {
    let cluster = serve(&[], 500);
    let in_context = |context: &str| LedgerArgs {
        context: Some(context.into()),
        ..live_args(&cluster)
    };
    fails_with(
        &in_context("other"),
        ": the user is not authenticated to list cozystack.io/v1alpha1 ApplicationDefinition: 401 Unauthorized",
    );
    fails_with(&in_context("nowhere"), "nowhere");
}

/// `--what-if` on the live cluster: the stored version is found there (an UPDATE), the
/// verdict is the one the cluster-state file gives, and still nothing but GETs.
#[test]
fn what_if_on_the_live_cluster() {
    let cluster = serve(&[], 500);
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("vm1.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps.cozystack.io/v1alpha1\nkind: VMInstance\nmetadata: {name: vm1, namespace: tenant-foo}\nspec: {instanceType: u1.2xlarge}\n",
    )
    .unwrap();
    let with = |args: LedgerArgs| LedgerArgs {
        what_if: Some(manifest.clone()),
        output: Output::Json,
        ..args
    };
    let live = ran(&with(live_args(&cluster)));
    let from_state = ran(&with(on_state(
        &example().join("cluster.yaml"),
        &example().join("settings.json"),
    )));
    assert_eq!(live.code, 1, "{}", live.err);
    assert_eq!(live.out, from_state.out);
    let answer: Value = serde_json::from_str(&live.out).unwrap();
    assert_eq!(answer["operation"], "UPDATE");
    assert!(cluster.api.seen().iter().all(|r| r.method == "GET"));
}
