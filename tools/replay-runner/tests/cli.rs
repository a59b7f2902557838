//! End-to-end tests of the `replay-runner` binary on WAT test guests (see `test_guest`),
//! compiled to real wasm modules.

mod test_guest;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        f.write("request.json", &request().to_string());
        f.write(
            "review.json",
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request()}).to_string(),
        );
        f.write("cluster.yaml", CLUSTER);
        f
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn write(&self, name: &str, text: &str) -> String {
        std::fs::write(self.path(name), text).unwrap();
        self.p(name)
    }

    fn guest(&self, name: &str, guest: &TestGuest) -> String {
        let wasm = wat::parse_str(guest.wat()).expect("test guest WAT compiles");
        std::fs::write(self.path(name), wasm).unwrap();
        self.p(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }
}

fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.arg("run")
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("REPLAY_RUNNER_VERBOSE");
    cmd.env(
        "REPLAY_RUNNER_CACHE_DIR",
        std::env::temp_dir().join("replay-runner-test-cache"),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
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

#[test]
fn accepts_and_prints_the_kwctl_response_for_review_and_bare_request() {
    let f = Fixture::new();
    let policy = f.guest("p.wasm", &TestGuest::default());
    let expected = r#"{"uid":"1299d386-525b-4032-98ae-1949f69f9cfc","allowed":true,"auditAnnotations":null,"warnings":null}"#;
    for req in ["review.json", "request.json"] {
        let o = run(&["--request-path", &f.p(req), &policy]);
        assert_ok(&o);
        assert_eq!(stdout(&o), expected);
    }
}

#[test]
fn rejects_a_request_file_that_is_not_an_admission_request() {
    let f = Fixture::new();
    let policy = f.guest("p.wasm", &TestGuest::default());
    let pod = f.write(
        "pod.json",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}"#,
    );
    let o = run(&["--request-path", &pod, &policy]);
    assert_fails(
        &o,
        &[
            "neither an AdmissionReview nor an admission request",
            "cannot build AdmissionRequest object from given input",
        ],
    );

    let review = f.write(
        "r.json",
        r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
    );
    assert_fails(
        &run(&["-r", &review, &policy]),
        &["invalid AdmissionReview object"],
    );

    let list = f.write("l.json", "[1,2]");
    assert_fails(&run(&["-r", &list, &policy]), &["Invalid request object"]);

    let yaml = f.write("y.json", "kind: AdmissionReview\n");
    assert_fails(&run(&["-r", &yaml, &policy]), &["not JSON"]);
}

#[test]
fn reports_missing_files_clearly() {
    let f = Fixture::new();
    let policy = f.guest("p.wasm", &TestGuest::default());
    let missing = f.p("nope.json");
    assert_fails(
        &run(&["-r", &missing, &policy]),
        &["Error opening request file", "nope.json"],
    );
    assert_fails(
        &run(&["-r", &f.p("request.json"), &f.p("nope.wasm")]),
        &["Cannot read policy module", "nope.wasm"],
    );
    assert_fails(
        &run(&[
            "-r",
            &f.p("request.json"),
            "--settings-path",
            &f.p("nope.yaml"),
            &policy,
        ]),
        &["Cannot open settings file", "nope.yaml"],
    );
    assert_fails(
        &run(&[
            "-r",
            &f.p("request.json"),
            "--replay-host-capabilities-interactions",
            &f.p("nope.yml"),
            &policy,
        ]),
        &[
            "Cannot open host capabilities interactions file",
            "nope.yml",
        ],
    );
    assert_fails(
        &run(&[
            "-r",
            &f.p("request.json"),
            "--cluster-state",
            &f.p("nope.yaml"),
            &policy,
        ]),
        &["Cannot open cluster state file", "nope.yaml"],
    );
    let garbage = f.write("garbage.wasm", "not a module");
    assert_fails(
        &run(&["-r", &f.p("request.json"), &garbage]),
        &["Cannot load policy module"],
    );
}

#[test]
fn bad_flags_fail() {
    let f = Fixture::new();
    let policy = f.guest("p.wasm", &TestGuest::default());
    let o = run(&["-r", &f.p("request.json"), "--no-such-flag", &policy]);
    assert!(!o.status.success());
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--record-host-capabilities-interactions",
        &f.p("s.yml"),
        &policy,
    ]);
    assert!(!o.status.success(), "recording needs --cluster-state");
    assert!(stderr(&o).contains("--cluster-state"), "{}", stderr(&o));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--replay-host-capabilities-interactions",
        &f.p("s.yml"),
        "--cluster-state",
        &f.p("cluster.yaml"),
        &policy,
    ]);
    assert!(
        !o.status.success(),
        "replay and cluster state are exclusive"
    );
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--settings-json",
        "{}",
        "--settings-path",
        &f.p("x"),
        &policy,
    ]);
    assert!(!o.status.success());
    let o = run(&["-r", &f.p("request.json"), "registry://ghcr.io/x/y:1"]);
    assert_fails(&o, &["only runs local policy files"]);
}

#[test]
fn reports_invalid_settings_like_kwctl() {
    let f = Fixture::new();
    let policy = f.guest("p.wasm", &TestGuest::with_calls(vec![kafka_list()]));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--settings-json",
        r#"{"invalid":true}"#,
        &policy,
    ]);
    assert_fails(
        &o,
        &["Provided settings are not valid: settings rejected by the test guest"],
    );

    let yaml = f.write("settings.yaml", "invalid: true\n");
    let o = run(&["-r", &f.p("request.json"), "-s", &yaml, &policy]);
    assert_fails(&o, &["Provided settings are not valid"]);

    let ok = f.write("ok.yaml", "fine: true\nnested: {a: [1, 2]}\n");
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "-s",
        &ok,
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        &policy,
    ]);
    assert_ok(&o);

    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--settings-json",
        "{not json",
        &policy,
    ]);
    assert_fails(&o, &["Cannot parse settings JSON"]);
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--settings-json",
        "[1]",
        &policy,
    ]);
    assert_fails(&o, &["not an object"]);
}

#[test]
fn context_aware_calls_need_the_flag() {
    let f = Fixture::new();
    let policy = f.guest("p.wasm", &TestGuest::with_calls(vec![kafka_list()]));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--cluster-state",
        &f.p("cluster.yaml"),
        &policy,
    ]);
    assert_fails(
        &o,
        &[
            "Policy has not been granted access to Kubernetes helm.toolkit.fluxcd.io/v2/HelmRelease resources",
            "--allow-context-aware",
        ],
    );
    // With the flag but nothing to answer from.
    let o = run(&["-r", &f.p("request.json"), "--allow-context-aware", &policy]);
    assert_fails(&o, &["no answers were given"]);
}

#[test]
fn annotated_policy_is_limited_to_its_context_aware_resources() {
    let f = Fixture::new();
    let guest = TestGuest::with_calls(vec![kafka_list()]);
    let wasm = wat::parse_str(guest.wat()).unwrap();
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
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        &f.p("other.wasm"),
    ]);
    assert_fails(
        &o,
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
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        &f.p("ok.wasm"),
    ]);
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
    let policy = f.guest("p.wasm", &TestGuest::with_calls(calls));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        &policy,
    ]);
    let response = assert_ok(&o);
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
    let policy = f.guest("p.wasm", &TestGuest::with_calls(vec![get]));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        "--record-host-capabilities-interactions",
        &f.p("s.yml"),
        &policy,
    ]);
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
    let o2 = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--replay-host-capabilities-interactions",
        &f.p("s.yml"),
        &policy,
    ]);
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
    let policy = f.guest("p.wasm", &TestGuest::with_calls(calls));
    let record = |out: &str| {
        run(&[
            "-r",
            &f.p("review.json"),
            "--allow-context-aware",
            "--cluster-state",
            &f.p("cluster.yaml"),
            "--record-host-capabilities-interactions",
            &f.p(out),
            &policy,
        ])
    };
    let live = record("s1.yml");
    assert_ok(&live);
    let session = f.read("s1.yml");
    assert!(session.starts_with("- type: Exchange\n  request: |\n    !KubernetesListResourceAll\n    api_version: helm.toolkit.fluxcd.io/v2\n    kind: HelmRelease\n    label_selector: apps.cozystack.io/application.kind=Kafka\n    field_selector: null\n  response:\n    type: Success\n    payload: '{\"apiVersion\":\"helm.toolkit.fluxcd.io/v2\""), "{session}");
    assert_eq!(session.matches("- type: Exchange").count(), 2);

    // Deterministic: the same run writes the same bytes.
    assert_ok(&record("s2.yml"));
    assert_eq!(f.read("s2.yml"), session);

    // Replaying gives the same response, and the answers the guest saw are the same bytes.
    let replayed = run(&[
        "-r",
        &f.p("review.json"),
        "--allow-context-aware",
        "--replay-host-capabilities-interactions",
        &f.p("s1.yml"),
        &policy,
    ]);
    assert_ok(&replayed);
    assert_eq!(stdout(&replayed), stdout(&live));
    assert!(stderr(&replayed).is_empty() || !stderr(&replayed).contains("not been replayed"));

    // The session parses as kwctl's format and serializes back to the same bytes.
    let parsed = replay_runner::Session::from_yaml(&session).unwrap();
    assert_eq!(parsed.to_yaml(), session);
}

#[test]
fn rejects_a_session_mismatch_naming_both_requests() {
    let f = Fixture::new();
    let recorder = f.guest("rec.wasm", &TestGuest::with_calls(vec![kafka_list()]));
    assert_ok(&run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        "--record-host-capabilities-interactions",
        &f.p("s.yml"),
        &recorder,
    ]));
    let other = f.guest(
        "other.wasm",
        &TestGuest::with_calls(vec![GuestHostCall::list_all(
            "helm.toolkit.fluxcd.io/v2",
            "HelmRelease",
            Some("apps.cozystack.io/application.kind=Etcd"),
        )]),
    );
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--replay-host-capabilities-interactions",
        &f.p("s.yml"),
        &other,
    ]);
    assert_fails(
        &o,
        &[
            "Replay error: unexpected request. Was expecting KubernetesListResourceAll { api_version: \"helm.toolkit.fluxcd.io/v2\", kind: \"HelmRelease\", label_selector: Some(\"apps.cozystack.io/application.kind=Kafka\")",
            "got KubernetesListResourceAll { api_version: \"helm.toolkit.fluxcd.io/v2\", kind: \"HelmRelease\", label_selector: Some(\"apps.cozystack.io/application.kind=Etcd\")",
        ],
    );
}

#[test]
fn rejects_an_extra_call_and_warns_about_unused_exchanges() {
    let f = Fixture::new();
    let recorder = f.guest("rec.wasm", &TestGuest::with_calls(vec![kafka_list()]));
    assert_ok(&run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        "--record-host-capabilities-interactions",
        &f.p("s.yml"),
        &recorder,
    ]));
    let twice = f.guest(
        "twice.wasm",
        &TestGuest::with_calls(vec![kafka_list(), kafka_list()]),
    );
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--replay-host-capabilities-interactions",
        &f.p("s.yml"),
        &twice,
    ]);
    assert_fails(
        &o,
        &[
            "the list of recorded responses is empty",
            "session does not contain",
            "label_selector: Some(\"apps.cozystack.io/application.kind=Kafka\")",
        ],
    );

    let none = f.guest("none.wasm", &TestGuest::default());
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--replay-host-capabilities-interactions",
        &f.p("s.yml"),
        &none,
    ]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("Some of the recorded exchanges have not been replayed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn policy_errors_fail_the_run() {
    let f = Fixture::new();
    let trap = f.guest(
        "trap.wasm",
        &TestGuest {
            trap_in_validate: true,
            ..Default::default()
        },
    );
    let o = run(&["-r", &f.p("request.json"), &trap]);
    assert_fails(
        &o,
        &[
            "policy evaluation failed",
            "kwctl would print {\"uid\":\"1299d386-525b-4032-98ae-1949f69f9cfc\",\"allowed\":false,\"status\":{\"message\":\"internal server error:",
        ],
    );

    let err = f.guest(
        "err.wasm",
        &TestGuest {
            guest_error: Some("boom from the guest".into()),
            ..Default::default()
        },
    );
    let o = run(&["-r", &f.p("request.json"), &err]);
    assert_fails(&o, &["policy evaluation failed", "boom from the guest"]);
}

#[test]
fn unsupported_host_calls_and_selectors_fail_the_run() {
    let f = Fixture::new();
    let oci = GuestHostCall {
        binding: "kubewarden".into(),
        namespace: "oci".into(),
        operation: "v1/manifest_digest".into(),
        payload: br#""busybox""#.to_vec(),
    };
    let policy = f.guest("oci.wasm", &TestGuest::with_calls(vec![oci]));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        &policy,
    ]);
    assert_fails(
        &o,
        &["binding \"kubewarden\", namespace \"oci\", operation \"v1/manifest_digest\""],
    );

    let bad_field = GuestHostCall::kubernetes(
        "list_resources_all",
        &json!({"api_version": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "label_selector": null, "field_selector": "spec.chart=x", "field_masks": null}),
    );
    let policy = f.guest("field.wasm", &TestGuest::with_calls(vec![bad_field]));
    let o = run(&[
        "-r",
        &f.p("request.json"),
        "--allow-context-aware",
        "--cluster-state",
        &f.p("cluster.yaml"),
        &policy,
    ]);
    assert_fails(&o, &["field label not supported: spec.chart"]);
}

#[test]
fn guest_logs_are_accepted_and_shown_when_verbose() {
    let f = Fixture::new();
    let policy = f.guest(
        "log.wasm",
        &TestGuest {
            log_message: Some("hello from the guest".into()),
            ..Default::default()
        },
    );
    let quiet = run(&["-r", &f.p("request.json"), &policy]);
    assert_ok(&quiet);
    assert!(!stderr(&quiet).contains("hello"), "{}", stderr(&quiet));
    let loud = run_env(
        &["-r", &f.p("request.json"), &policy],
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
    let policy = f.guest(
        "mut.wasm",
        &TestGuest {
            mutated_object: Some(r#"{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"Kafka","metadata":{"name":"k1","namespace":"tenant-a","labels":{"a":"b"}}}"#.into()),
            ..Default::default()
        },
    );
    let o = run(&["-r", &f.p("request.json"), &policy]);
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
    let mut args = vec![
        "-r".to_string(),
        example.join("request.json").display().to_string(),
    ];
    if example.join("settings.json").exists() {
        args.extend([
            "-s".to_string(),
            example.join("settings.json").display().to_string(),
        ]);
    }
    args.push("--allow-context-aware".into());
    let (request_args, policy) = (args, wasm.display().to_string());
    let arg_refs = |extra: &[String]| -> Vec<String> {
        let mut v = request_args.clone();
        v.extend_from_slice(extra);
        v.push(policy.clone());
        v
    };
    let live = arg_refs(&[
        "--cluster-state".into(),
        example.join("cluster.yaml").display().to_string(),
        "--record-host-capabilities-interactions".into(),
        f.p("session.yml"),
    ]);
    let live = run(&live.iter().map(String::as_str).collect::<Vec<_>>());
    let live_response = assert_ok(&live);
    assert!(live_response["uid"].is_string());
    let replay = arg_refs(&[
        "--replay-host-capabilities-interactions".into(),
        f.p("session.yml"),
    ]);
    let replay = run(&replay.iter().map(String::as_str).collect::<Vec<_>>());
    assert_ok(&replay);
    assert_eq!(stdout(&replay), stdout(&live));
    assert!(
        !stderr(&replay).contains("not been replayed"),
        "{}",
        stderr(&replay)
    );
}
