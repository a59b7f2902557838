//! End-to-end tests of the `replay-runner` binary on WAT test guests (see `test_guest`),
//! compiled to real wasm modules.

mod test_guest;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rstest::rstest;

use serde_json::{Value, json};
use test_guest::{GuestHostCall, TestGuest};

const BIN: &str = env!("CARGO_BIN_EXE_replay-runner");

const CLUSTER: &str = r#"
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kafka-b
  namespace: tenant-b
  labels: {apps.cozystack.io/application.kind: Kafka}
spec: {values: {kafka: {replicas: 3}}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: kafka-a
  namespace: tenant-a
  labels: {apps.cozystack.io/application.kind: Kafka, env: prod}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: etcd
  namespace: tenant-a
  labels: {apps.cozystack.io/application.kind: Etcd}
---
apiVersion: cozystack.io/v1alpha1
kind: ApplicationDefinition
metadata: {name: kafka}
spec: {application: {kind: Kafka}}
"#;

fn request() -> Value {
    json!({
        "uid": "1299d386-525b-4032-98ae-1949f69f9cfc",
        "kind": {"group": "apps.cozystack.io", "version": "v1alpha1", "kind": "Kafka"},
        "resource": {"group": "apps.cozystack.io", "version": "v1alpha1", "resource": "kafkas"},
        "name": "k1",
        "namespace": "tenant-a",
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": {"apiVersion": "apps.cozystack.io/v1alpha1", "kind": "Kafka", "metadata": {"name": "k1", "namespace": "tenant-a"}}
    })
}

/// Arguments before the policy for a live run: context aware, answered from `cluster.yaml`.
const LIVE: &[&str] = &[
    "-r",
    "@request.json",
    "--allow-context-aware",
    "--cluster-state",
    "@cluster.yaml",
];

/// Arguments before the policy for a run replaying the session `s.yml`.
const REPLAY: &[&str] = &[
    "-r",
    "@request.json",
    "--allow-context-aware",
    "--replay-host-capabilities-interactions",
    "@s.yml",
];

/// A temporary directory with the request (bare and as a review), the cluster state and a few
/// broken inputs.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        let bare = request().to_string();
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request()}).to_string();
        for (name, text) in [
            ("request.json", bare.as_str()),
            ("review.json", review.as_str()),
            ("cluster.yaml", CLUSTER),
            (
                "pod.json",
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}"#,
            ),
            (
                "r.json",
                r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
            ),
            ("l.json", "[1,2]"),
            ("y.json", "kind: AdmissionReview\n"),
            ("garbage.wasm", "not a module"),
            ("settings.yaml", "invalid: true\n"),
            ("ok.yaml", "fine: true\nnested: {a: [1, 2]}\n"),
        ] {
            std::fs::write(f.path(name), text).unwrap();
        }
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Writes `guest` compiled to `name`.
    fn guest(&self, name: &str, guest: &TestGuest) {
        let wasm = wat::parse_str(guest.wat()).expect("test guest WAT compiles");
        std::fs::write(self.path(name), wasm).unwrap();
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }

    /// Runs the binary on `args`, where `@name` stands for this fixture's file `name`.
    fn run(&self, args: &[&str]) -> Output {
        self.run_env(args, &[])
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let args = args.iter().map(|a| {
            a.strip_prefix('@')
                .map_or_else(|| a.to_string(), |n| self.p(n))
        });
        Command::new(BIN)
            .arg("run")
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("REPLAY_RUNNER_VERBOSE")
            .env(
                "REPLAY_RUNNER_CACHE_DIR",
                std::env::temp_dir().join("replay-runner-test-cache"),
            )
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    /// Runs `policy` with `head` before it.
    fn run_with(&self, head: &[&str], policy: &str) -> Output {
        self.run(&[head, &[policy]].concat())
    }

    /// Records the session `s.yml` of a live run of `policy`.
    fn record(&self, policy: &str) -> Output {
        let record = ["--record-host-capabilities-interactions", "@s.yml"];
        self.run(&[LIVE, &record, &[policy]].concat())
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim_end().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[track_caller]
fn assert_ok(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "expected success, got {:?}\nstdout: {}\nstderr: {}",
        o.status,
        stdout(o),
        stderr(o)
    );
    serde_json::from_str(&stdout(o)).expect("stdout is one JSON response")
}

#[track_caller]
fn assert_fails(o: &Output, needles: &[&str]) {
    assert!(
        !o.status.success(),
        "expected failure, got success\nstdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    assert!(
        o.stdout.is_empty(),
        "nothing on stdout on failure, got {}",
        stdout(o)
    );
    let err = stderr(o);
    for n in needles {
        assert!(err.contains(n), "stderr should contain {n:?}:\n{err}");
    }
}

/// The host answers the guest echoed into its warnings, parsed.
fn answers(response: &Value) -> Vec<Value> {
    response["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| serde_json::from_str(w.as_str().unwrap()).unwrap())
        .collect()
}

fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap_or(""),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn kafka_list() -> GuestHostCall {
    GuestHostCall::list_all(
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        Some("apps.cozystack.io/application.kind=Kafka"),
    )
}

fn kafka_guest() -> TestGuest {
    TestGuest::with_calls(vec![kafka_list()])
}

fn guest_error(message: &str) -> TestGuest {
    TestGuest {
        guest_error: Some(message.into()),
        ..Default::default()
    }
}

fn oci_guest() -> TestGuest {
    TestGuest::with_calls(vec![GuestHostCall {
        binding: "kubewarden".into(),
        namespace: "oci".into(),
        operation: "v1/manifest_digest".into(),
        payload: br#""busybox""#.to_vec(),
    }])
}

fn field_selector_guest(field_selector: &str) -> TestGuest {
    TestGuest::with_calls(vec![GuestHostCall::kubernetes(
        "list_resources_all",
        &json!({"api_version": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "label_selector": null, "field_selector": field_selector, "field_masks": null}),
    )])
}

#[rstest]
#[case::review("review.json")]
#[case::bare_request("request.json")]
fn accepts_and_prints_the_kwctl_response(#[case] request: &str) {
    let f = Fixture::new();
    f.guest("p.wasm", &TestGuest::default());
    let o = f.run(&["--request-path", &format!("@{request}"), "@p.wasm"]);
    assert_ok(&o);
    assert_eq!(
        stdout(&o),
        r#"{"uid":"1299d386-525b-4032-98ae-1949f69f9cfc","allowed":true,"auditAnnotations":null,"warnings":null}"#
    );
}

/// Runs that fail: nothing on stdout and each needle on stderr. `guest` is written to `p.wasm`;
/// `@name` is the fixture's file `name`.
#[rstest]
// Requests that are not admission requests.
#[case::pod(TestGuest::default(), &["--request-path", "@pod.json", "@p.wasm"], &["neither an AdmissionReview nor an admission request", "cannot build AdmissionRequest object from given input"])]
#[case::empty_review(TestGuest::default(), &["-r", "@r.json", "@p.wasm"], &["invalid AdmissionReview object"])]
#[case::list(TestGuest::default(), &["-r", "@l.json", "@p.wasm"], &["Invalid request object"])]
#[case::yaml(TestGuest::default(), &["-r", "@y.json", "@p.wasm"], &["not JSON"])]
// Missing files.
#[case::missing_request(TestGuest::default(), &["-r", "@nope.json", "@p.wasm"], &["Error opening request file", "nope.json"])]
#[case::missing_policy(TestGuest::default(), &["-r", "@request.json", "@nope.wasm"], &["Cannot read policy module", "nope.wasm"])]
#[case::missing_settings(TestGuest::default(), &["-r", "@request.json", "--settings-path", "@nope.yaml", "@p.wasm"], &["Cannot open settings file", "nope.yaml"])]
#[case::missing_session(TestGuest::default(), &["-r", "@request.json", "--replay-host-capabilities-interactions", "@nope.yml", "@p.wasm"], &["Cannot open host capabilities interactions file", "nope.yml"])]
#[case::missing_cluster_state(TestGuest::default(), &["-r", "@request.json", "--cluster-state", "@nope.yaml", "@p.wasm"], &["Cannot open cluster state file", "nope.yaml"])]
#[case::garbage_module(TestGuest::default(), &["-r", "@request.json", "@garbage.wasm"], &["Cannot load policy module"])]
// Bad flags.
#[case::unknown_flag(TestGuest::default(), &["-r", "@request.json", "--no-such-flag", "@p.wasm"], &[])]
#[case::record_without_cluster_state(TestGuest::default(), &["-r", "@request.json", "--record-host-capabilities-interactions", "@s.yml", "@p.wasm"], &["--cluster-state"])]
#[case::replay_and_cluster_state(TestGuest::default(), &["-r", "@request.json", "--replay-host-capabilities-interactions", "@s.yml", "--cluster-state", "@cluster.yaml", "@p.wasm"], &[])]
#[case::settings_json_and_path(TestGuest::default(), &["-r", "@request.json", "--settings-json", "{}", "--settings-path", "@x", "@p.wasm"], &[])]
#[case::registry_policy(TestGuest::default(), &["-r", "@request.json", "registry://ghcr.io/x/y:1"], &["only runs local policy files"])]
// Invalid settings, reported like kwctl.
#[case::settings_json_rejected(kafka_guest(), &["-r", "@request.json", "--settings-json", r#"{"invalid":true}"#, "@p.wasm"], &["Provided settings are not valid: settings rejected by the test guest"])]
#[case::settings_file_rejected(kafka_guest(), &["-r", "@request.json", "-s", "@settings.yaml", "@p.wasm"], &["Provided settings are not valid"])]
#[case::settings_json_broken(kafka_guest(), &["-r", "@request.json", "--settings-json", "{not json", "@p.wasm"], &["Cannot parse settings JSON"])]
#[case::settings_json_not_object(kafka_guest(), &["-r", "@request.json", "--settings-json", "[1]", "@p.wasm"], &["not an object"])]
// Context-aware calls need the flag, and something to answer from.
#[case::context_aware_without_flag(kafka_guest(), &["-r", "@request.json", "--cluster-state", "@cluster.yaml", "@p.wasm"], &["Policy has not been granted access to Kubernetes helm.toolkit.fluxcd.io/v2/HelmRelease resources", "--allow-context-aware"])]
#[case::context_aware_without_answers(kafka_guest(), &["-r", "@request.json", "--allow-context-aware", "@p.wasm"], &["no answers were given"])]
// Policy errors.
#[case::trap(TestGuest { trap_in_validate: true, ..Default::default() }, &["-r", "@request.json", "@p.wasm"], &["policy evaluation failed", "kwctl would print {\"uid\":\"1299d386-525b-4032-98ae-1949f69f9cfc\",\"allowed\":false,\"status\":{\"message\":\"internal server error:"])]
#[case::guest_error(guest_error("boom from the guest"), &["-r", "@request.json", "@p.wasm"], &["policy evaluation failed", "boom from the guest"])]
// Unsupported host calls and selectors.
#[case::oci_call(oci_guest(), &[LIVE, &["@p.wasm"]].concat(), &["binding \"kubewarden\", namespace \"oci\", operation \"v1/manifest_digest\""])]
#[case::field_selector(field_selector_guest("spec.chart=x"), &[LIVE, &["@p.wasm"]].concat(), &["field label not supported: spec.chart"])]
fn fails(#[case] guest: TestGuest, #[case] args: &[&str], #[case] needles: &[&str]) {
    let f = Fixture::new();
    f.guest("p.wasm", &guest);
    assert_fails(&f.run(args), needles);
}

#[test]
fn accepts_valid_settings_from_a_file() {
    let f = Fixture::new();
    f.guest("p.wasm", &kafka_guest());
    assert_ok(&f.run_with(&[LIVE, &["-s", "@ok.yaml"]].concat(), "@p.wasm"));
}

#[test]
fn annotated_policy_is_limited_to_its_context_aware_resources() {
    let f = Fixture::new();
    let wasm = wat::parse_str(kafka_guest().wat()).unwrap();
    let annotate = |resources: Value| {
        let meta = json!({"protocolVersion": "v1", "rules": [], "mutating": false, "contextAwareResources": resources});
        let meta = serde_json::to_vec(&meta).unwrap();
        let name = b"io.kubewarden.metadata";
        let mut section = vec![name.len() as u8];
        section.extend_from_slice(name);
        section.extend_from_slice(&meta);
        let mut out = wasm.clone();
        out.push(0);
        let mut n = section.len();
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
        out.extend(section);
        out
    };
    std::fs::write(
        f.path("other.wasm"),
        annotate(json!([{"apiVersion": "cozystack.io/v1alpha1", "kind": "ApplicationDefinition"}])),
    )
    .unwrap();
    assert_fails(
        &f.run_with(LIVE, "@other.wasm"),
        &[
            "Policy has not been granted access to Kubernetes helm.toolkit.fluxcd.io/v2/HelmRelease",
            "contextAwareResources",
        ],
    );

    std::fs::write(
        f.path("ok.wasm"),
        annotate(json!([{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease"}])),
    )
    .unwrap();
    let o = f.run_with(LIVE, "@ok.wasm");
    assert_ok(&o);
    assert!(!stderr(&o).contains("not annotated"), "{}", stderr(&o));
}

#[test]
fn serves_cluster_state_lists_with_selectors() {
    let f = Fixture::new();
    let calls = vec![
        kafka_list(),
        GuestHostCall::list_all(
            "helm.toolkit.fluxcd.io/v2",
            "HelmRelease",
            Some("apps.cozystack.io/application.kind in (Kafka,Etcd),env!=prod"),
        ),
        GuestHostCall::list_all("helm.toolkit.fluxcd.io/v2", "HelmRelease", Some("!env")),
        GuestHostCall::kubernetes(
            "list_resources_by_namespace",
            &json!({"api_version": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "namespace": "tenant-b", "label_selector": null, "field_selector": "metadata.name!=etcd", "field_masks": ["spec.values.kafka.replicas"]}),
        ),
        GuestHostCall::list_all("cozystack.io/v1alpha1", "ApplicationDefinition", None),
    ];
    f.guest("p.wasm", &TestGuest::with_calls(calls));
    let response = assert_ok(&f.run_with(LIVE, "@p.wasm"));
    assert_eq!(response["allowed"], true);
    let a = answers(&response);
    assert_eq!(a.len(), 5);
    assert_eq!(a[0]["kind"], "HelmReleaseList");
    assert_eq!(a[0]["apiVersion"], "helm.toolkit.fluxcd.io/v2");
    assert_eq!(a[0]["metadata"]["resourceVersion"], "1");
    assert_eq!(item_names(&a[0]), ["tenant-a/kafka-a", "tenant-b/kafka-b"]);
    assert_eq!(item_names(&a[1]), ["tenant-a/etcd", "tenant-b/kafka-b"]);
    assert_eq!(item_names(&a[2]), ["tenant-a/etcd", "tenant-b/kafka-b"]);
    // Field masks prune all but apiVersion, kind and metadata; listed objects lose
    // managedFields and the last-applied annotation, as on Kubewarden's host.
    assert_eq!(
        a[3]["items"],
        json!([{
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "kafka-b", "namespace": "tenant-b", "labels": {"apps.cozystack.io/application.kind": "Kafka"}, "annotations": {}, "managedFields": []},
            "spec": {"values": {"kafka": {"replicas": 3}}}
        }])
    );
    assert_eq!(item_names(&a[4]), ["/kafka"]);
    assert_eq!(a[4]["kind"], "ApplicationDefinitionList");
}

#[test]
fn get_resource_not_found_is_a_host_error_the_policy_sees() {
    let f = Fixture::new();
    let get = GuestHostCall::kubernetes(
        "get_resource",
        &json!({"api_version": "v1", "kind": "Namespace", "name": "tenant-x", "namespace": null, "disable_cache": false, "field_masks": null}),
    );
    f.guest("p.wasm", &TestGuest::with_calls(vec![get]));
    let o = f.record("@p.wasm");
    let response = assert_ok(&o);
    assert_eq!(response["allowed"], false);
    assert_eq!(
        response["status"]["message"],
        "Callback evaluation failure: Cannot find v1/Namespace named 'tenant-x' inside of namespace 'None'"
    );
    assert_eq!(
        f.read("s.yml"),
        "- type: Exchange\n  request: |\n    !KubernetesGetResource\n    api_version: v1\n    kind: Namespace\n    name: tenant-x\n    namespace: null\n    disable_cache: false\n  response:\n    type: Error\n    message: Cannot find v1/Namespace named 'tenant-x' inside of namespace 'None'\n"
    );
    // The recorded error replays to the same response.
    let o2 = f.run_with(REPLAY, "@p.wasm");
    assert_ok(&o2);
    assert_eq!(stdout(&o2), stdout(&o));
}

#[test]
fn records_a_session_that_replays_identically() {
    let f = Fixture::new();
    let calls = vec![
        kafka_list(),
        GuestHostCall::list_all("cozystack.io/v1alpha1", "ApplicationDefinition", None),
    ];
    f.guest("p.wasm", &TestGuest::with_calls(calls));
    let record = |out: &str| {
        f.run(&[
            "-r",
            "@review.json",
            "--allow-context-aware",
            "--cluster-state",
            "@cluster.yaml",
            "--record-host-capabilities-interactions",
            out,
            "@p.wasm",
        ])
    };
    let live = record("@s1.yml");
    assert_ok(&live);
    let session = f.read("s1.yml");
    assert!(session.starts_with("- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n    api_version: helm.toolkit.fluxcd.io/v2\n    kind: HelmRelease\n    label_selector: apps.cozystack.io/application.kind=Kafka\n    field_selector: null\n  response:\n    type: Success\n    payload: '{\"apiVersion\":\"helm.toolkit.fluxcd.io/v2\""), "{session}");
    assert_eq!(session.matches("- type: Exchange").count(), 2);

    // Deterministic: the same run writes the same bytes.
    assert_ok(&record("@s2.yml"));
    assert_eq!(f.read("s2.yml"), session);

    // Replaying gives the same response, and the answers the guest saw are the same bytes.
    let replayed = f.run(&[
        "-r",
        "@review.json",
        "--allow-context-aware",
        "--replay-host-capabilities-interactions",
        "@s1.yml",
        "@p.wasm",
    ]);
    assert_ok(&replayed);
    assert_eq!(stdout(&replayed), stdout(&live));
    assert!(stderr(&replayed).is_empty() || !stderr(&replayed).contains("not been replayed"));

    // The session parses as kwctl's format and serializes back to the same bytes.
    let parsed = replay_runner::Session::from_yaml(&session).unwrap();
    assert_eq!(parsed.to_yaml(), session);
}

/// A session recorded with one Kafka list does not answer other calls, naming both requests.
#[rstest]
#[case::other_request(TestGuest::with_calls(vec![GuestHostCall::list_all("helm.toolkit.fluxcd.io/v2", "HelmRelease", Some("apps.cozystack.io/application.kind=Etcd"))]), &["Replay error: unexpected request. Was expecting KubernetesListResourceAll { api_version: \"helm.toolkit.fluxcd.io/v2\", kind: \"HelmRelease\", label_selector: Some(\"apps.cozystack.io/application.kind=Kafka\")", "got KubernetesListResourceAll { api_version: \"helm.toolkit.fluxcd.io/v2\", kind: \"HelmRelease\", label_selector: Some(\"apps.cozystack.io/application.kind=Etcd\")"])]
#[case::extra_call(TestGuest::with_calls(vec![kafka_list(), kafka_list()]), &["the list of recorded responses is empty", "session does not contain", "label_selector: Some(\"apps.cozystack.io/application.kind=Kafka\")"])]
fn rejects_a_session_mismatch(#[case] guest: TestGuest, #[case] needles: &[&str]) {
    let f = Fixture::new();
    f.guest("rec.wasm", &kafka_guest());
    assert_ok(&f.record("@rec.wasm"));
    f.guest("p.wasm", &guest);
    assert_fails(&f.run_with(REPLAY, "@p.wasm"), needles);
}

#[test]
fn warns_about_unused_exchanges() {
    let f = Fixture::new();
    f.guest("rec.wasm", &kafka_guest());
    assert_ok(&f.record("@rec.wasm"));
    f.guest("none.wasm", &TestGuest::default());
    let o = f.run_with(REPLAY, "@none.wasm");
    assert_ok(&o);
    assert!(
        stderr(&o).contains("Some of the recorded exchanges have not been replayed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn guest_logs_are_accepted_and_shown_when_verbose() {
    let f = Fixture::new();
    let guest = TestGuest {
        log_message: Some("hello from the guest".into()),
        ..Default::default()
    };
    f.guest("p.wasm", &guest);
    let quiet = f.run(&["-r", "@request.json", "@p.wasm"]);
    assert_ok(&quiet);
    assert!(!stderr(&quiet).contains("hello"), "{}", stderr(&quiet));
    let loud = f.run_env(
        &["-r", "@request.json", "@p.wasm"],
        &[("REPLAY_RUNNER_VERBOSE", "1")],
    );
    assert_ok(&loud);
    assert!(
        stderr(&loud).contains("[policy INFO] hello from the guest"),
        "{}",
        stderr(&loud)
    );
}

#[test]
fn mutations_are_printed_as_a_json_patch() {
    let f = Fixture::new();
    let guest = TestGuest {
        mutated_object: Some(r#"{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"Kafka","metadata":{"name":"k1","namespace":"tenant-a","labels":{"a":"b"}}}"#.into()),
        ..Default::default()
    };
    f.guest("p.wasm", &guest);
    let o = f.run(&["-r", "@request.json", "@p.wasm"]);
    let response = assert_ok(&o);
    assert_eq!(response["patchType"], "JSONPatch");
    assert!(stdout(&o).starts_with(r#"{"uid":"1299d386-525b-4032-98ae-1949f69f9cfc","allowed":true,"patchType":"JSONPatch","patch":""#), "{}", stdout(&o));
}

/// The project's own policy (`cargo build --release --target wasm32-wasip1` in the repository
/// root), run on its example scenario: once from the cluster state while recording, then
/// from the recorded session; both runs must agree.
#[test]
fn runs_the_real_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let wasm = std::env::var_os("REPLAY_RUNNER_TEST_POLICY")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            root.join("target/wasm32-wasip1/release/tenant_reservation_policy.wasm")
        });
    if !wasm.exists() {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip1",
                "--manifest-path",
            ])
            .arg(root.join("Cargo.toml"))
            .status()
            .unwrap();
        assert!(status.success(), "building the policy failed");
    }
    let example = root.join("test_data/example");
    let f = Fixture::new();
    let path = |p: PathBuf| p.display().to_string();
    let mut head = vec!["-r".to_string(), path(example.join("request.json"))];
    if example.join("settings.json").exists() {
        head.extend(["-s".to_string(), path(example.join("settings.json"))]);
    }
    head.push("--allow-context-aware".into());
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let (cluster, policy) = (path(example.join("cluster.yaml")), path(wasm));
    let record = [
        "--cluster-state",
        &cluster,
        "--record-host-capabilities-interactions",
        "@s.yml",
    ];
    let live = f.run_with(&[&head[..], &record].concat(), &policy);
    let live_response = assert_ok(&live);
    assert!(live_response["uid"].is_string());
    let replay = ["--replay-host-capabilities-interactions", "@s.yml"];
    let replay = f.run_with(&[&head[..], &replay].concat(), &policy);
    assert_ok(&replay);
    assert_eq!(stdout(&replay), stdout(&live));
    assert!(
        !stderr(&replay).contains("not been replayed"),
        "{}",
        stderr(&replay)
    );
}
