//! Requests and settings before any lookup.

use serde_json::json;

use crate::common::*;

#[test]
fn settings_that_do_not_parse_are_invalid_not_an_error() {
    let r = check_settings(br#"{"siblingFailure": "ignore"}"#);
    assert!(!r.valid);
    assert!(
        r.message
            .unwrap()
            .contains("unknown variant `ignore`, expected `deny` or `warn`")
    );
    let r = check_settings(br#"{"exemptKinds": ["Info"]}"#);
    assert!(r.valid && r.message.is_none());
}

#[test]
fn requests_that_are_not_checked() {
    let k8s = foo_pool(Vec::new());
    for op in ["DELETE", "CONNECT"] {
        let v = validate_payload(
            &payload(
                op,
                "VMInstance",
                "tenant-foo",
                "vm1",
                json!({"instanceType": "u1.4xlarge"}),
                None,
                json!({}),
            ),
            &k8s,
        );
        assert!(v.allowed, "{op}");
    }
    assert!(k8s.calls().is_empty(), "no lookups for DELETE or CONNECT");
    let v = validate_payload(
        &payload(
            "PATCH",
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({}),
            None,
            json!({}),
        ),
        &k8s,
    );
    assert_eq!(message(&v), "unsupported admission operation \"PATCH\"");
    let v = validate_payload(
        &payload(
            "UPDATE",
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({}),
            None,
            json!({}),
        ),
        &k8s,
    );
    assert_eq!(
        message(&v),
        "VMInstance tenant-foo/vm1: an UPDATE without oldObject cannot be checked for growth"
    );
    let v = validate_payload(b"{\"request\": 3}", &k8s);
    assert!(
        message(&v).starts_with("the admission request cannot be read"),
        "{v:?}"
    );
}
