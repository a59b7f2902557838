//! The policy's host calls: how many, in what order, with which field masks, and what a
//! misbehaving host gets.

use rstest::rstest;
use serde_json::{Value, json};

use crate::common::*;

fn lookup_tenant(namespace: &str, release: &str) -> Lookup {
    Lookup::Tenant {
        namespace: namespace.into(),
        release: release.into(),
    }
}

/// 40 tenants beside foo, each with 25 applications: the rest of a cluster.
fn the_rest_of_a_cluster() -> Vec<Value> {
    let mut objects = Vec::new();
    for t in 0..40 {
        let name = format!("other{t}");
        objects.push(tenant(
            "tenant-root",
            &name,
            json!({"cpu": "8", "memory": "16Gi"}),
        ));
        for i in 0..25 {
            objects.push(application(
                "VMInstance",
                &format!("tenant-{name}"),
                &format!("vm{i}"),
                json!({"instanceType": "u1.small"}),
            ));
        }
    }
    objects
}

#[test]
fn host_calls_follow_the_pool_not_its_size_nor_the_cluster() {
    let small = foo_pool(Vec::new());
    create(&small, "Postgres", "tenant-foo", "pg", json!({}));
    let mut many: Vec<Value> = (0..200)
        .map(|i| {
            application(
                "VMInstance",
                "tenant-foo",
                &format!("vm-x{i}"),
                json!({"instanceType": "u1.medium"}),
            )
        })
        .collect();
    many.extend(the_rest_of_a_cluster());
    let large = foo_pool(many);
    let verdict = create(&large, "Postgres", "tenant-foo", "pg", json!({}));
    assert!(!verdict.allowed, "200 more VMs fill the pool: {verdict:?}");
    assert_eq!(small.calls(), large.calls());
    assert_eq!(
        large.calls(),
        [
            Lookup::Definitions,
            // The tenants above the namespace, up to tenant-root.
            lookup_tenant("tenant-root", "tenant-foo"),
            lookup_tenant("tenant-root", "tenant-root"),
            // The subject's kind, evaluated first: every schema in one list (each list is a
            // reflector in policy-server).
            Lookup::Schemas,
            // foo's pool: its one namespace.
            Lookup::Applications {
                namespace: "tenant-foo".into()
            },
            // The instance types the pool's VMs use: every one in one list.
            Lookup::InstanceTypes,
        ]
    );
    // The HelmReleases are pruned to what the definitions' reservations read.
    assert_eq!(small.masks_asked(), large.masks_asked());
    let masks = large.masks_asked()[4].clone();
    for read in [
        "spec.values.instanceType",
        "spec.values.resources",
        "spec.values.resourcesPreset",
        "spec.values.nodeGroups",
        "spec.values.kafka.replicas",
        "spec.values.resourceQuotas",
        "metadata.labels",
    ] {
        assert!(masks.contains(read), "{read} not in {masks:?}");
    }
    assert!(!masks.contains("spec.values"), "{masks:?}");
    // A tenant above is read as the applications are (its quota and the modules its values
    // switch on), a definition without its schema.
    assert_eq!(large.masks_asked()[1], masks);
    assert!(masks.contains("spec.values.etcd"), "{masks:?}");
    assert!(!large.masks_asked()[0].contains("spec.application.openAPISchema"));
}

#[test]
fn a_pool_is_read_namespace_by_namespace_down_to_its_carve_outs() {
    // tenant-root -> a (bounds cpu, memory) -> { b (unbounded) -> c (bounds memory), d (bounds
    // cpu and memory) }: a's memory pool is a, a-b; a-b-c and a-d are carved out of it.
    let k8s = cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "a", json!({"cpu": "8", "memory": "16Gi"})),
        tenant("tenant-a", "b", json!({})),
        tenant("tenant-a-b", "c", json!({"memory": "4Gi"})),
        tenant("tenant-a", "d", json!({"cpu": "2", "memory": "4Gi"})),
        application("VMDisk", "tenant-a-b-c", "disk", json!({"storage": "1Gi"})),
    ]);
    let v = create(
        &k8s,
        "Postgres",
        "tenant-a-b",
        "pg",
        json!({"size": "0", "resources": {"memory": "1Gi", "cpu": "100m"}, "replicas": 1}),
    );
    assert!(v.allowed, "{v:?}");
    let listed: Vec<String> = k8s
        .calls()
        .into_iter()
        .filter_map(|l| match l {
            Lookup::Applications { namespace } => Some(namespace),
            _ => None,
        })
        .collect();
    // b bounds neither key: read; d bounds both: carved out, unread; c bounds memory only but
    // no more than that: read for cpu.
    assert_eq!(listed, ["tenant-a", "tenant-a-b", "tenant-a-b-c"]);
}

#[test]
fn field_masks_never_change_a_verdict() {
    let k8s = cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant(
            "tenant-root",
            "foo",
            json!({"cpu": "64", "memory": "256Gi", "storage": "2Ti",
            "gpuclass.cozystack.io/devices": "2"}),
        ),
        tenant("tenant-foo", "dev", json!({})),
        tenant(
            "tenant-foo",
            "team",
            json!({"cpu": "4", "memory": 8589934592u64}),
        ),
        application(
            "VMInstance",
            "tenant-foo",
            "vm1",
            json!({"instanceType": "u1.large",
            "systemDisk": {"image": "ubuntu", "storage": "20Gi"}, "cloudInit": "#cloud-config"}),
        ),
        application(
            "VMInstance",
            "tenant-foo-dev",
            "gpu",
            json!({"instanceType": "",
            "resources": {"cpu": "2", "memory": "4Gi"}, "gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
        ),
        application(
            "Postgres",
            "tenant-foo",
            "pg",
            json!({"replicas": 3, "resourcesPreset": "u1.medium",
            "size": "50Gi", "users": {"app": {"password": "x"}}}),
        ),
        application(
            "Kubernetes",
            "tenant-foo-dev",
            "k8s",
            json!({"nodeGroups": {
            "md0": {"maxReplicas": 4, "instanceType": "u1.xlarge", "diskSize": "40Gi"},
            "md1": {"maxReplicas": 2, "instanceType": "", "resources": {"cpu": "4", "memory": "8Gi"}}},
            "controlPlane": {"replicas": 3, "apiServer": {"resourcesPreset": "large"}}}),
        ),
        application(
            "Kafka",
            "tenant-foo",
            "kafka",
            json!({"kafka": {"replicas": 5, "size": "100Gi"},
            "zookeeper": {"replicas": 3}}),
        ),
        application(
            "ClickHouse",
            "tenant-foo-team",
            "ch",
            json!({"shards": 2, "replicas": 2,
            "clickhouseKeeper": {"enabled": true}}),
        ),
        // Siblings whose values are malformed: the same problems must surface either way.
        application(
            "VMInstance",
            "tenant-foo",
            "bad-resources",
            json!({"instanceType": "", "resources": "big"}),
        ),
        application(
            "Kubernetes",
            "tenant-foo",
            "bad-groups",
            json!({"nodeGroups": [{"maxReplicas": "many"}]}),
        ),
        application(
            "Postgres",
            "tenant-foo",
            "bad-replicas",
            json!({"replicas": [1]}),
        ),
        application("NATS", "tenant-foo", "nats", json!({"jetstream": "yes"})),
    ]);
    let requests = [
        payload(
            "CREATE",
            "VMInstance",
            "tenant-foo",
            "new",
            json!({"instanceType": "u1.2xlarge"}),
            None,
            json!({}),
        ),
        payload(
            "CREATE",
            "VMInstance",
            "tenant-foo-dev",
            "new",
            json!({"instanceType": "u1.2xlarge"}),
            None,
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "CREATE",
            "Postgres",
            "tenant-foo",
            "huge",
            json!({"replicas": 40, "resourcesPreset": "2xlarge"}),
            None,
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "UPDATE",
            "Kubernetes",
            "tenant-foo-dev",
            "k8s",
            json!({"nodeGroups": {"md0": {"maxReplicas": 40}}}),
            Some(json!({})),
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "CREATE",
            "VMInstance",
            "tenant-foo-team",
            "gpu2",
            json!({"gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
            None,
            json!({"siblingFailure": "warn", "gpuDeviceClasses": {"nvidia.com/AD102GL_L40S": "l40s"}}),
        ),
        payload(
            "UPDATE",
            "Tenant",
            "tenant-foo",
            "team",
            json!({"resourceQuotas": {"cpu": "40"}}),
            Some(json!({"resourceQuotas": {"cpu": "4"}})),
            json!({"siblingFailure": "warn"}),
        ),
        payload(
            "CREATE",
            "Tenant",
            "tenant-foo",
            "team2",
            json!({"resourceQuotas": {"cpu": "4"}}),
            None,
            json!({}),
        ),
    ];
    let unmasked = k8s.unmasked();
    let mut refused_or_warned = 0;
    for request in &requests {
        let masked = validate_payload(request, &k8s);
        let whole = validate_payload(request, &unmasked);
        assert_eq!(masked, whole, "{}", String::from_utf8_lossy(request));
        refused_or_warned += usize::from(!masked.allowed || !masked.warnings.is_empty());
    }
    assert_eq!(
        refused_or_warned,
        requests.len(),
        "the requests exercise rejections and warnings"
    );
    // The unmasked host was asked the same and ignored the masks.
    assert_eq!(unmasked.masks_asked(), k8s.masks_asked());
    assert_eq!(unmasked.calls(), k8s.calls());
}

#[test]
fn a_host_answer_that_is_not_a_list_is_refused() {
    let k8s = foo_pool(Vec::new()).answering(Source::Applications, Ok(b"[1,2]".to_vec()));
    let v = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert!(message(&v).starts_with("VMDisk tenant-foo/d: cannot read the applications: the HelmRelease list from the cluster is not a valid list"), "{v:?}");
    let k8s = foo_pool(Vec::new()).answering(Source::Definitions, Err("connection refused".into()));
    let v = create(&k8s, "VMDisk", "tenant-foo", "d", json!({}));
    assert_eq!(
        message(&v),
        "VMDisk tenant-foo/d: cannot read the ApplicationDefinitions: connection refused"
    );
}

#[test]
fn the_instance_types_are_read_once_and_not_for_a_name_no_object_can_have() {
    let k8s = foo_pool(Vec::new());
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm-bad",
        json!({"instanceType": "u1.medium,metadata.name=u1.small"}),
    );
    assert!(!v.allowed, "{v:?}");
    let message = v.message.unwrap_or_default();
    assert!(
        message.contains(r#"instance type "u1.medium,metadata.name=u1.small" does not exist"#),
        "{message}"
    );
    let instance_types = |k8s: &Fixture| -> Vec<Lookup> {
        k8s.calls()
            .into_iter()
            .filter(|l| matches!(l, Lookup::InstanceTypes))
            .collect()
    };
    // Not read for a name no object can have (such a name was never put in a selector).
    assert_eq!(instance_types(&k8s), []);
    k8s.forget_calls();
    let v = create(
        &k8s,
        "VMInstance",
        "tenant-foo",
        "vm3",
        json!({"instanceType": "u1.medium"}),
    );
    assert!(v.allowed, "{v:?}");
    // The subject and the pool's two VMs (one at the default): the list read once.
    assert_eq!(instance_types(&k8s), [Lookup::InstanceTypes]);
}

/// tenant-root -> foo (bounds storage at `budget` Gi) holding one 1Gi disk, with unbounded
/// sub-tenants of one 1Gi disk each and a carve-out bounded at 1Gi holding 1Gi: foo's pool
/// spans `namespaces` namespaces, reserves 1Gi in each and has 1Gi carved out.
fn foo_of_namespaces(namespaces: usize, budget: usize) -> Fixture {
    let disk = |ns: &str, name: &str, size: &str| {
        application("VMDisk", ns, name, json!({"storage": size}))
    };
    let mut objects = vec![
        tenant("tenant-root", "root", json!({})),
        tenant(
            "tenant-root",
            "foo",
            json!({"storage": format!("{budget}Gi")}),
        ),
        disk("tenant-foo", "d", "1Gi"),
        tenant("tenant-foo", "carve", json!({"storage": "1Gi"})),
        disk("tenant-foo-carve", "d", "1Gi"),
    ];
    for i in 1..namespaces {
        objects.push(tenant("tenant-foo", &format!("s{i}"), json!({})));
        objects.push(disk(&format!("tenant-foo-s{i}"), "d", "1Gi"));
    }
    objects.extend(the_rest_of_a_cluster());
    cluster(objects)
}

/// A pool of up to NAMESPACE_LISTS namespaces is listed namespace by namespace, its cost
/// following the pool; one of more is read from one list of every application as soon as the
/// walk sees that it needs more (here: once foo's namespace is listed), before it lists the
/// rest one by one: one reflector in the engine instead of one per namespace. Either way the
/// verdict and the sums are the same.
#[rstest]
#[case::within_the_cap(tenant_reservation_policy::NAMESPACE_LISTS, false)]
#[case::past_the_cap(tenant_reservation_policy::NAMESPACE_LISTS + 4, true)]
fn a_pool_is_listed_by_namespace_up_to_the_cap(#[case] namespaces: usize, #[case] broad: bool) {
    // The pool's disks, the carve-out's 1Gi and the new 1Gi: one more Gi than the budget.
    let full = foo_of_namespaces(namespaces, namespaces + 1);
    let refused = create(
        &full,
        "VMDisk",
        "tenant-foo-s3",
        "new",
        json!({"storage": "1Gi"}),
    );
    assert!(!refused.allowed, "{refused:?}");
    let want = format!("reserved {namespaces}Gi by {namespaces} applications");
    assert!(message(&refused).contains(&want), "{refused:?}");
    let room = foo_of_namespaces(namespaces, namespaces + 2);
    let allowed = create(
        &room,
        "VMDisk",
        "tenant-foo-s3",
        "new",
        json!({"storage": "1Gi"}),
    );
    assert!(allowed.allowed, "{allowed:?}");
    assert_eq!(full.calls(), room.calls());
    let listed: Vec<Lookup> = room
        .calls()
        .into_iter()
        .filter(|l| matches!(l, Lookup::Applications { .. } | Lookup::AllApplications))
        .collect();
    let one_by_one = listed
        .iter()
        .filter(|l| matches!(l, Lookup::Applications { .. }))
        .count();
    if broad {
        assert_eq!(one_by_one, 1, "{listed:?}");
        assert_eq!(listed.last(), Some(&Lookup::AllApplications));
        assert_eq!(listed.len(), 2);
    } else {
        assert_eq!(one_by_one, namespaces, "{listed:?}");
        assert!(!listed.contains(&Lookup::AllApplications));
    }
    // The carve-out's disk is not the pool's, though the broad list holds it.
    assert!(!listed.contains(&Lookup::Applications {
        namespace: "tenant-foo-carve".into()
    }));
}

const POLICY_SERVER: &str = "system:serviceaccount:kubewarden:tenant-reservation-policy-server";

fn as_policy_server() -> Value {
    json!({"policyServerUser": POLICY_SERVER})
}

#[test]
fn policy_servers_permissions_are_checked_once_per_resource_before_its_first_list() {
    let k8s = foo_pool(Vec::new());
    let spec = json!({"instanceType": "u1.medium"});
    let plain = create(&k8s, "VMInstance", "tenant-foo", "vm9", spec.clone());
    assert!(k8s.checks().is_empty(), "no check without policyServerUser");
    let lists = k8s.calls();
    k8s.forget_calls();
    let checked = with_settings(
        &k8s,
        as_policy_server(),
        "VMInstance",
        "tenant-foo",
        "vm9",
        spec,
    );
    assert_eq!(
        (checked.allowed, &checked.message),
        (plain.allowed, &plain.message)
    );
    assert_eq!(k8s.calls(), lists, "the same lists, in the same order");
    let user = |p: &str| (POLICY_SERVER.to_string(), p.to_string());
    assert_eq!(
        k8s.checks(),
        [
            user("list applicationdefinitions.cozystack.io"),
            user("list helmreleases.helm.toolkit.fluxcd.io"),
            user("list virtualmachineclusterinstancetypes.instancetype.kubevirt.io"),
        ]
    );
}

#[rstest]
#[case::list_denied(
    foo_pool(Vec::new()).denying("list helmreleases", ""),
    "VMInstance tenant-foo/vm9: cannot read the tenants: policy-server's user system:serviceaccount:kubewarden:tenant-reservation-policy-server may not list helmreleases.helm.toolkit.fluxcd.io, so its lists cannot sync; grant it list and watch (deploy/policyserver.yaml)"
)]
#[case::denied_with_a_reason(
    foo_pool(Vec::new()).denying("list applicationdefinitions", "no RBAC policy matched"),
    "policy-server's user system:serviceaccount:kubewarden:tenant-reservation-policy-server may not list applicationdefinitions.cozystack.io (no RBAC policy matched), so its lists cannot sync"
)]
#[case::check_fails(
    foo_pool(Vec::new()).failing_checks("subjectaccessreviews.authorization.k8s.io is forbidden"),
    "cannot check whether policy-server's user system:serviceaccount:kubewarden:tenant-reservation-policy-server may list applicationdefinitions.cozystack.io: subjectaccessreviews.authorization.k8s.io is forbidden"
)]
fn a_missing_permission_is_refused_by_name_before_any_list(
    #[case] k8s: Fixture,
    #[case] want: &str,
) {
    // Even a write that fits: without the permission the pool cannot be kept fresh.
    let v = with_settings(
        &k8s,
        as_policy_server(),
        "VMInstance",
        "tenant-foo",
        "vm9",
        json!({"instanceType": "u1.small"}),
    );
    assert!(!v.allowed, "{v:?}");
    assert!(
        message(&v).contains(want),
        "{:?} lacks {want:?}",
        message(&v)
    );
    let last = k8s.checks().pop().expect("a check was made").1;
    let refused = last.split_once(' ').expect("verb resource").1;
    assert!(
        k8s.calls().iter().all(|l| {
            let (group, resource) = l.group_resource();
            format!("{resource}.{group}") != refused
        }),
        "{refused} was listed after its check failed: {:?}",
        k8s.calls()
    );
}
