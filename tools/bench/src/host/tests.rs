use super::*;
use host_sim::ObjectStore;
use serde_json::json;
use tenant_reservation_policy::cluster::fixed_masks;

fn api() -> Arc<ApiServer> {
    let mut objects = vec![
        test_kit::tenant("tenant-root", "a", json!({"cpu": "4"})),
        test_kit::tenant("tenant-root", "b", json!({})),
        test_kit::application("Postgres", "tenant-a", "db", json!({"size": "1Gi"})),
        test_kit::application("Postgres", "tenant-b", "db", json!({"size": "2Gi"})),
    ];
    objects[2]["status"] = json!({"history": ["a long status the masks drop"]});
    objects.extend(test_kit::definitions());
    Arc::new(ApiServer::new(objects).unwrap())
}

#[test]
fn one_reflector_per_key_opened_once_masks_applied_when_opened() {
    let mut host = HostModel::new(api());
    let apps = test_kit::list_query(&Lookup::Applications {
        namespace: "tenant-a".into(),
    });
    let masks: BTreeSet<String> = ["metadata.name".into(), "spec.values.size".into()].into();
    host.begin_request();
    let first = host.serve(&apps, Some(&masks)).unwrap();
    assert_eq!(host.request.opened, 1);
    assert!(host.request.list_bytes > first.len());
    let again = host.serve(&apps, Some(&masks)).unwrap();
    assert_eq!(first, again);
    assert_eq!(host.request.opened, 1);
    assert_eq!(host.request.calls, 2);
    // Another mask set is another reflector, as is another namespace.
    host.serve(&apps, None).unwrap();
    let b = test_kit::list_query(&Lookup::Applications {
        namespace: "tenant-b".into(),
    });
    host.serve(&b, Some(&masks)).unwrap();
    assert_eq!(host.reflectors().count, 3);
    assert_eq!(host.reflectors().by_source[&Some(Source::Applications)], 3);

    let list: Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(list["kind"], "HelmReleaseList");
    assert_eq!(list["metadata"], json!({}));
    let items = list["items"].as_array().unwrap();
    // Only tenant-a's own: the Postgres and no Tenant (the Tenants live in tenant-root).
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item["spec"], json!({"values": {"size": "1Gi"}}));
    assert!(item.get("status").is_none());
    assert_eq!(item["metadata"]["managedFields"], json!([]));
    assert_eq!(item["metadata"]["namespace"], "tenant-a");
}

#[test]
fn answers_are_host_sims_items_and_selectors_are_the_api_servers() {
    let api = api();
    let store = ObjectStore::new(
        api.namespaces
            .values()
            .flat_map(|s| s.objects().cloned())
            .chain(api.cluster_scoped.objects().cloned())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mut host = HostModel::new(api);
    for lookup in [
        Lookup::Definitions,
        Lookup::Schemas,
        Lookup::Tenant {
            namespace: "tenant-root".into(),
            release: "tenant-a".into(),
        },
        Lookup::Applications {
            namespace: "tenant-root".into(),
        },
    ] {
        let query = test_kit::list_query(&lookup);
        let masks = fixed_masks(&lookup);
        let served: Value =
            serde_json::from_slice(&host.serve(&query, Some(&masks)).unwrap()).unwrap();
        let expected = store.list(&query, Some(&masks)).unwrap();
        assert_eq!(served["items"], expected["items"], "{lookup:?}");
    }
    let tenants = host.reflectors();
    assert_eq!(tenants.count, 4);
    assert_eq!(tenants.by_source[&Some(Source::Tenant)], 1);
    assert_eq!(tenants.by_source[&Some(Source::Schema)], 1);
}

#[test]
fn the_request_fingerprint_follows_the_calls() {
    let mut host = HostModel::new(api());
    let defs = test_kit::list_query(&Lookup::Definitions);
    let masks = fixed_masks(&Lookup::Definitions);
    let run = |host: &mut HostModel, twice: bool| {
        host.begin_request();
        host.serve(&defs, Some(&masks)).unwrap();
        if twice {
            host.serve(&defs, Some(&masks)).unwrap();
        }
        host.request.fingerprint
    };
    let one = run(&mut host, false);
    assert_eq!(one, run(&mut host, false));
    assert_ne!(one, run(&mut host, true));
}
