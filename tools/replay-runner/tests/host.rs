//! The library API a benchmark uses: one `Host`, many evaluations, in-memory answers, counters.

mod test_guest;

use replay_runner::admission::{PolicySettings, parse_admission_request, validate_payload};
use replay_runner::answers::{ClusterAnswers, Recorder, ReplayAnswers};
use replay_runner::{
    Answer, ContextAwareAccess, EngineOptions, EpochDeadlines, Host, HostOptions, KubernetesCall,
    LogMode, Policy, Replay, Session,
};
use serde_json::json;
use test_guest::{GuestHostCall, TestGuest};

fn request() -> replay_runner::AdmissionRequest {
    parse_admission_request(&json!({
        "uid": "u",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "userInfo": {},
        "object": {"metadata": {"name": "p"}}
    }))
    .unwrap()
}

fn host(guest: &TestGuest) -> Host {
    // wasmtime reads WAT text directly.
    Host::from_bytes(
        guest.wat().as_bytes(),
        HostOptions {
            access: Some(ContextAwareAccess::AllowAll),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn evaluates_repeatedly_with_in_memory_answers_and_counts_calls_and_bytes() {
    let call = GuestHostCall::list_all("v1", "Namespace", None);
    let request_len = call.payload.len() as u64;
    let mut host = host(&TestGuest::with_calls(vec![call.clone(), call]));
    let answer = br#"{"apiVersion":"v1","items":[],"kind":"NamespaceList","metadata":{}}"#.to_vec();
    let served = answer.clone();
    host.set_answerer(Box::new(move |c: &KubernetesCall| {
        assert_eq!(c.api_version_kind(), ("v1", "Namespace"));
        Answer::Success(served.clone())
    }));
    let settings = PolicySettings::new();
    assert!(host.validate_settings(&settings).valid);
    let req = request();
    let payload = validate_payload(&req, &settings);
    for _ in 0..3 {
        let eval = host.validate_payload(&req, &payload).unwrap();
        assert!(eval.response.allowed);
        assert!(eval.violations.is_empty());
        assert_eq!(eval.stats.kubernetes_calls, 2);
        assert_eq!(eval.stats.request_bytes, 2 * request_len);
        assert_eq!(eval.stats.response_bytes, 2 * answer.len() as u64);
    }
    assert_eq!(host.evaluations(), 3);
    let totals = host.total_stats();
    // validate_settings made no host call.
    assert_eq!(totals.kubernetes_calls, 6);
    assert_eq!(totals.response_bytes, 6 * answer.len() as u64);
}

#[test]
fn replay_can_rewind_for_each_evaluation() {
    let call = GuestHostCall::list_all("cozystack.io/v1alpha1", "ApplicationDefinition", None);
    let mut recorder = host(&TestGuest::with_calls(vec![call.clone()]));
    let state = replay_runner::cluster::from_yaml(
        "apiVersion: cozystack.io/v1alpha1\nkind: ApplicationDefinition\nmetadata: {name: kafka}\n",
    )
    .unwrap();
    recorder.set_answerer(Box::new(Recorder::new(ClusterAnswers::new(state))));
    let live = recorder
        .validate(&request(), &PolicySettings::new())
        .unwrap();
    let session: Session = recorder.recorded_session().unwrap();
    assert_eq!(session.exchanges.len(), 1);

    let mut replayer = host(&TestGuest::with_calls(vec![call]));
    let mut answers = ReplayAnswers::new(Replay::new(&session).unwrap());
    answers.rewind_each_evaluation = true;
    replayer.set_answerer(Box::new(answers));
    for _ in 0..3 {
        let eval = replayer
            .validate(&request(), &PolicySettings::new())
            .unwrap();
        assert!(eval.violations.is_empty(), "{:?}", eval.violations);
        assert_eq!(eval.raw_response, live.raw_response);
    }
}

#[test]
fn violations_and_guest_failures_are_reported() {
    let call = GuestHostCall::list_all("v1", "Namespace", None);
    let mut denied = Host::from_bytes(
        TestGuest::with_calls(vec![call]).wat().as_bytes(),
        HostOptions {
            access: Some(ContextAwareAccess::Denied),
            ..Default::default()
        },
    )
    .unwrap();
    let eval = denied.validate(&request(), &PolicySettings::new()).unwrap();
    assert!(!eval.response.allowed);
    assert_eq!(eval.violations.len(), 1);
    assert_eq!(eval.stats.failed_calls, 1);

    let mut trapping = host(&TestGuest {
        trap_in_validate: true,
        ..Default::default()
    });
    let err = trapping
        .validate(&request(), &PolicySettings::new())
        .unwrap_err();
    assert!(
        err.message.contains("validate call failed"),
        "{}",
        err.message
    );
    assert_eq!(err.kwctl_response.status.as_ref().unwrap().code, Some(500));
    // The host is still usable afterwards.
    let mut settings = PolicySettings::new();
    settings.insert("invalid".into(), json!(true));
    let answer = trapping.validate_settings(&settings);
    assert!(!answer.valid);
}

#[test]
fn a_policy_compiled_once_instantiates_fresh_hosts() {
    let call = GuestHostCall::list_all("v1", "Namespace", None);
    let guest = TestGuest::with_calls(vec![call]);
    // Epoch interruption on, as policy-server runs policies; nothing ticks the epoch.
    let options = EngineOptions {
        epoch_deadlines: Some(EpochDeadlines {
            wapc_init: 1 << 40,
            wapc_func: 1 << 40,
        }),
        ..Default::default()
    };
    let policy = Policy::compile(guest.wat().as_bytes(), &options).unwrap();
    assert!(policy.compile_time() > std::time::Duration::ZERO);
    assert!(policy.metadata().is_none());
    let answer = br#"{"apiVersion":"v1","items":[],"kind":"NamespaceList","metadata":{}}"#;
    for _ in 0..2 {
        let mut host = policy
            .instantiate(ContextAwareAccess::AllowAll, LogMode::Ignore)
            .unwrap();
        // A fresh instance has no answers until given some.
        let eval = host.validate(&request(), &PolicySettings::new()).unwrap();
        assert_eq!(eval.violations.len(), 1, "{:?}", eval.violations);
        host.set_answerer(Box::new(|_: &KubernetesCall| {
            Answer::Success(answer.to_vec())
        }));
        let (result, stats, violations) = host.call(
            "validate",
            &validate_payload(&request(), &PolicySettings::new()),
        );
        assert!(result.is_ok() && violations.is_empty(), "{violations:?}");
        assert_eq!(
            (stats.kubernetes_calls, stats.response_bytes),
            (1, answer.len() as u64)
        );
        assert_eq!(host.total_stats().kubernetes_calls, 2);
    }
}
