//! What the networking kinds and tenant modules (group c) reserve, case by case as their charts render them.
use crate::common::*;
use rstest::rstest;
use serde_json::{Value, json};

/// Asserts the exact charge (every key), or the exact refusal.
fn check(kind: &str, spec: Value, want: Result<&[(&str, &str)], &str>) {
    match want {
        Ok(pairs) => assert_eq!(charge(kind, spec), Ok(res(pairs))),
        Err(reason) => assert_eq!(charge(kind, spec), Err(reason.to_string())),
    }
}

const ZERO_CPU: &str = "an explicit 0 renders a container without a cpu limit (it wins over any preset), which no budget can bound";
const ZERO_MEMORY: &str = "an explicit 0 renders a container without a memory limit (it wins over any preset), which no budget can bound";

// Ingress: per controller pod defaultingSanitize(resourcesPreset, resources) + the
// protobuf-exporter sidecar (100m/90Mi), times replicas; plus one default backend (10m/20Mi).
#[rstest]
#[case::nginx_ingress_yaml_67_89_defaults_two_t1_micro_controllers_with_exporter_and_backend(
    json!({}),
    Ok(&[("cpu", "1210m"), ("memory", "712Mi")][..])
)]
#[case::nginx_ingress_yaml_67_replicas_times_controller_and_exporter(
    json!({"replicas": 3}),
    Ok(&[("cpu", "1810m"), ("memory", "1058Mi")][..])
)]
#[case::nginx_ingress_yaml_89_resources_cpu_over_preset_memory(
    json!({"replicas": 3, "resources": {"cpu": "2"}}),
    Ok(&[("cpu", "6310m"), ("memory", "1058Mi")][..])
)]
#[case::nginx_ingress_yaml_89_resources_memory_over_preset_cpu(
    json!({"resources": {"memory": "1Gi"}}),
    Ok(&[("cpu", "1210m"), ("memory", "2248Mi")][..])
)]
#[case::nginx_ingress_yaml_89_legacy_preset_medium(
    json!({"replicas": 1, "resourcesPreset": "medium"}),
    Ok(&[("cpu", "1110m"), ("memory", "1134Mi")][..])
)]
#[case::system_values_yaml_95_103_default_backend_runs_at_zero_replicas(
    json!({"replicas": 0}),
    Ok(&[("cpu", "10m"), ("memory", "20Mi")][..])
)]
#[case::nginx_ingress_yaml_89_explicit_zero_cpu_is_refused(
    json!({"resources": {"cpu": 0}}),
    Err(&format!("spec.resources.cpu: {ZERO_CPU}")[..])
)]
fn ingress(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("Ingress", spec, want);
}

// TCPBalancer: Deployment <release>-haproxy, replicas x defaultingSanitize.
#[rstest]
#[case::deployment_yaml_10_37_defaults_two_t1_nano(
    json!({}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi")][..])
)]
#[case::deployment_yaml_10_replicas_times_preset_u1_large(
    json!({"replicas": 3, "resourcesPreset": "u1.large"}),
    Ok(&[("cpu", "12"), ("memory", "48Gi")][..])
)]
#[case::deployment_yaml_37_resources_memory_over_preset_cpu(
    json!({"resources": {"memory": "1Gi"}}),
    Ok(&[("cpu", "500m"), ("memory", "2Gi")][..])
)]
#[case::deployment_yaml_10_zero_replicas_run_nothing(json!({"replicas": 0}), Ok(&[][..]))]
#[case::deployment_yaml_37_explicit_zero_cpu_is_refused(
    json!({"resources": {"cpu": "0"}}),
    Err(&format!("spec.resources.cpu: {ZERO_CPU}")[..])
)]
fn tcp_balancer(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("TCPBalancer", spec, want);
}

// VPN: Deployment <release>-vpn, replicas x defaultingSanitize; emptyDir volumes only.
#[rstest]
#[case::deployment_yaml_7_46_defaults_two_t1_nano(
    json!({}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi")][..])
)]
#[case::deployment_yaml_46_explicit_resources_win_over_preset(
    json!({"replicas": 1, "resources": {"cpu": "1", "memory": "512Mi"}}),
    Ok(&[("cpu", "1"), ("memory", "512Mi")][..])
)]
#[case::deployment_yaml_46_preset_s1_micro(
    json!({"resourcesPreset": "s1.micro"}),
    Ok(&[("cpu", "1"), ("memory", "2Gi")][..])
)]
#[case::deployment_yaml_7_zero_replicas_run_nothing(
    json!({"replicas": 0, "users": {"a": {}}}),
    Ok(&[][..])
)]
#[case::deployment_yaml_46_explicit_zero_memory_is_refused(
    json!({"resources": {"memory": "0"}}),
    Err(&format!("spec.resources.memory: {ZERO_MEMORY}")[..])
)]
#[case::vpn_templates_service_yaml_12_external_ips_add_no_workload(
    json!({"externalIPs": ["10.0.0.1", "10.0.0.2"]}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi")][..])
)]
fn vpn(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("VPN", spec, want);
}

// HTTPCache: haproxy Deployment (haproxy.replicas pods), and nginx.replicas single-pod
// Deployments, each nginx + reloader (50m/50Mi) and its own PVC of `size`.
#[rstest]
#[case::haproxy_and_nginx_deployment_yaml_defaults(
    json!({}),
    Ok(&[("cpu", "1100m"), ("memory", "612Mi"), ("storage", "20Gi")][..])
)]
#[case::nginx_deployment_yaml_14_55_124_replicas_resources_and_size(
    json!({"size": "50Gi", "nginx": {"replicas": 3, "resources": {"cpu": "1", "memory": "2Gi"}}}),
    Ok(&[("cpu", "3650m"), ("memory", "6550Mi"), ("storage", "150Gi")][..])
)]
#[case::haproxy_deployment_yaml_10_36_replicas_and_preset(
    json!({"haproxy": {"replicas": 1, "resourcesPreset": "c1.large"}, "nginx": {"replicas": 0}}),
    Ok(&[("cpu", "4"), ("memory", "4Gi")][..])
)]
#[case::nginx_deployment_yaml_55_resources_memory_over_preset_cpu(
    json!({"nginx": {"replicas": 1, "resources": {"memory": "512Mi"}}}),
    Ok(&[("cpu", "800m"), ("memory", "818Mi"), ("storage", "10Gi")][..])
)]
#[case::haproxy_deployment_yaml_36_resources_cpu(
    json!({"haproxy": {"resources": {"cpu": "2"}}}),
    Ok(&[("cpu", "4600m"), ("memory", "612Mi"), ("storage", "20Gi")][..])
)]
#[case::haproxy_deployment_yaml_36_explicit_zero_cpu_is_refused(
    json!({"haproxy": {"resources": {"cpu": 0}}}),
    Err(&format!("spec.haproxy.resources.cpu: {ZERO_CPU}")[..])
)]
// `until -2` counts down ([0, -1]): two instances; the policy refuses the negative count.
#[case::nginx_deployment_yaml_14_negative_replicas_are_refused(
    json!({"nginx": {"replicas": -2}}),
    Err("spec.nginx.replicas: must not be negative, got -2")
)]
fn http_cache(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("HTTPCache", spec, want);
}

// ExternalDNS: the <release>-system release runs one external-dns container (replicas: 1
// hard-coded) sized by defaultingSanitize.
#[rstest]
#[case::external_dns_yaml_166_defaults_one_t1_nano(
    json!({"provider": "cloudflare"}),
    Ok(&[("cpu", "250m"), ("memory", "128Mi")][..])
)]
#[case::external_dns_yaml_166_resources_cpu_over_preset_memory(
    json!({"provider": "aws", "resources": {"cpu": "500m"}}),
    Ok(&[("cpu", "500m"), ("memory", "128Mi")][..])
)]
#[case::external_dns_yaml_166_preset_s1_small(
    json!({"provider": "google", "resourcesPreset": "s1.small"}),
    Ok(&[("cpu", "1"), ("memory", "2Gi")][..])
)]
// external-dns.yaml:1-3 fails the render without a provider: no special case, same charge.
#[case::external_dns_yaml_1_no_provider_fails_the_render_charged_anyway(
    json!({}),
    Ok(&[("cpu", "250m"), ("memory", "128Mi")][..])
)]
#[case::external_dns_yaml_166_explicit_zero_memory_is_refused(
    json!({"provider": "aws", "resources": {"memory": 0}}),
    Err(&format!("spec.resources.memory: {ZERO_MEMORY}")[..])
)]
#[case::external_dns_templates_external_dns_yaml_49_provider_credentials_render_env_only(
    json!({"provider": "cloudflare", "cloudflare": {"apiToken": "t", "proxied": true, "replicas": 40, "resources": {"limits": {"cpu": "64"}}}}),
    Ok(&[("cpu", "250m"), ("memory", "128Mi")][..])
)]
#[case::external_dns_templates_external_dns_yaml_43_domain_filters_and_163_extra_args_render_flags(
    json!({"provider": "godaddy", "godaddy": {"apiKey": "k", "apiSecret": "s"}, "domainFilters": ["example.org"], "extraArgs": ["--interval=5m"]}),
    Ok(&[("cpu", "250m"), ("memory", "128Mi")][..])
)]
fn external_dns(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("ExternalDNS", spec, want);
}

// Etcd: EtcdCluster `replicas` members, each one etcd container at sanitize(resources) and
// one PVC of `size`; the defrag CronJob is not charged.
#[rstest]
#[case::etcd_cluster_yaml_17_19_29_defaults_three_members(
    json!({}),
    Ok(&[("cpu", "3"), ("memory", "1536Mi"), ("storage", "12Gi")][..])
)]
#[case::etcd_cluster_yaml_29_empty_resources_keep_the_schema_defaults(
    json!({"resources": {}}),
    Ok(&[("cpu", "3"), ("memory", "1536Mi"), ("storage", "12Gi")][..])
)]
#[case::etcd_cluster_yaml_17_19_29_replicas_size_and_resources(
    json!({"replicas": 5, "size": "10Gi", "resources": {"cpu": "2", "memory": "2Gi"}}),
    Ok(&[("cpu", "10"), ("memory", "10Gi"), ("storage", "50Gi")][..])
)]
#[case::etcd_cluster_yaml_29_resources_cpu_keeps_default_memory(
    json!({"resources": {"cpu": "500m"}}),
    Ok(&[("cpu", "1500m"), ("memory", "1536Mi"), ("storage", "12Gi")][..])
)]
#[case::etcd_cluster_yaml_17_one_member(
    json!({"replicas": 1}),
    Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "4Gi")][..])
)]
// replicas 0 parks the last member: its pod goes, its PVC stays (etcd-operator v0.5.4).
#[case::etcd_cluster_yaml_17_zero_replicas_keep_the_parked_members_pvc(
    json!({"replicas": 0}),
    Ok(&[("storage", "4Gi")][..])
)]
#[case::etcd_cluster_yaml_30_explicit_zero_cpu_is_refused(
    json!({"resources": {"cpu": "0"}}),
    Err(&format!("spec.resources.cpu: {ZERO_CPU}")[..])
)]
fn etcd(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("Etcd", spec, want);
}

// Info: a Role, a RoleBinding and Secrets: nothing runs.
#[rstest]
#[case::dashboard_resourcemap_and_secrets_reserve_nothing(json!({}), Ok(&[][..]))]
fn info(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("Info", spec, want);
}

// Monitoring: the monitoring-system release (values passed verbatim). Per metrics storage:
// vminsert 2 x 500m/500Mi, vmselect 2 x 500m/1000Mi + 2Gi, vmstorage 2 x 1/1500Mi + storage;
// vmalert once 200m/500Mi; per logs storage: vlinsert and vlselect 2 x 1/1024Mi, vlstorage
// 2 x 1/2048Mi + storage; alertmanager 3 x 100m/256Mi; alerta 1 x limits; alerta-db and
// grafana-db 2 x 1/2048Mi + their size; grafana 2 x limits; vmagent 200m/500Mi.
#[rstest]
#[case::system_monitoring_templates_defaults(
    json!({}),
    Ok(&[("cpu", "21700m"), ("memory", "33224Mi"), ("storage", "108Gi")][..])
)]
#[case::vmcluster_vlogs_grafana_db_yaml_sizes_from_values(
    json!({
        "metricsStorages": [{"name": "a", "retentionPeriod": "1d", "deduplicationInterval": "15s", "storage": "50Gi"}],
        "logsStorages": [{"name": "generic", "retentionPeriod": "1", "storage": "20Gi", "storageClassName": "replicated"}],
        "grafana": {"resources": {"limits": {"cpu": "2", "memory": "4Gi"}}, "db": {"size": "5Gi"}}
    }),
    Ok(&[("cpu", "19700m"), ("memory", "33368Mi"), ("storage", "174Gi")][..])
)]
#[case::vmcluster_yaml_1_and_vmalert_yaml_1_no_metrics_storage_no_vmcluster_no_vmalert(
    json!({"metricsStorages": []}),
    Ok(&[("cpu", "13500m"), ("memory", "20724Mi"), ("storage", "60Gi")][..])
)]
#[case::vmcluster_yaml_1_vmalert_yaml_26_three_metrics_storages_one_vmalert(
    json!({"metricsStorages": [
        {"name": "a", "retentionPeriod": "1d", "deduplicationInterval": "15s", "storage": "10Gi"},
        {"name": "b", "retentionPeriod": "1d", "deduplicationInterval": "15s", "storage": "10Gi"},
        {"name": "c", "retentionPeriod": "1d", "deduplicationInterval": "15s", "storage": "30Gi"}
    ]}),
    Ok(&[("cpu", "25700m"), ("memory", "39224Mi"), ("storage", "172Gi")][..])
)]
#[case::vlogs_yaml_11_two_logs_storages(
    json!({"logsStorages": [
        {"name": "generic", "retentionPeriod": "1", "storage": "10Gi", "storageClassName": "replicated"},
        {"name": "audit", "retentionPeriod": "7", "storage": "15Gi", "storageClassName": "replicated"}
    ]}),
    Ok(&[("cpu", "27700m"), ("memory", "41416Mi"), ("storage", "138Gi")][..])
)]
// vlogs.yaml:8-10 fails the render on an empty list: no special case.
#[case::vlogs_yaml_8_empty_logs_storages_fail_the_render_charged_anyway(
    json!({"logsStorages": []}),
    Ok(&[("cpu", "15700m"), ("memory", "25032Mi"), ("storage", "88Gi")][..])
)]
#[case::alerta_yaml_81_limits_cpu_keeps_default_memory(
    json!({"alerta": {"resources": {"limits": {"cpu": "2"}}}}),
    Ok(&[("cpu", "22700m"), ("memory", "33224Mi"), ("storage", "108Gi")][..])
)]
// A null limit the monitoring values.yaml has a default for (values.yaml:124) is deleted by
// Helm's coalesce before the sys chart reads the map: the default is charged.
#[case::alerta_yaml_81_null_limits_cpu_keeps_the_values_default(
    json!({"alerta": {"resources": {"limits": {"cpu": null, "memory": "2Gi"}}}}),
    Ok(&[("cpu", "21700m"), ("memory", "34248Mi"), ("storage", "108Gi")][..])
)]
#[case::alerta_yaml_81_empty_limits_cpu_is_refused(
    json!({"alerta": {"resources": {"limits": {"cpu": ""}}}}),
    Err("spec.alerta.resources.limits.cpu: is empty: the container's cpu limit renders empty, which Kubernetes refuses (cozy-lib merges resources over the preset with Sprig's mergeOverwrite, which writes even an empty value, so the preset's cpu is not used)")
)]
#[case::alerta_db_yaml_21_storage_per_instance(
    json!({"alerta": {"storage": "25Gi"}}),
    Ok(&[("cpu", "21700m"), ("memory", "33224Mi"), ("storage", "138Gi")][..])
)]
#[case::grafana_yaml_181_explicit_zero_cpu_limit_is_refused(
    json!({"grafana": {"resources": {"limits": {"cpu": "0"}}}}),
    Err(&format!("spec.grafana.resources.limits.cpu: {ZERO_CPU}")[..])
)]
#[case::monitoring_templates_helmrelease_yaml_60_values_reach_monitoring_system_charged_by_the_block(
    json!({"metricsStorages": [{"name": "a", "retentionPeriod": "1d", "deduplicationInterval": "15s", "storage": "40Gi"}],
        "alerta": {"storage": "5Gi"}}),
    Ok(&[("cpu", "17700m"), ("memory", "27224Mi"), ("storage", "134Gi")][..])
)]
#[case::monitoring_templates_helmrelease_yaml_60_vmagent_and_oidc_maps_render_configuration_only(
    json!({"vmagent": {"externalLabels": {"cluster": "c"}, "remoteWrite": {"urls": ["http://x:8480"], "replicaCount": 20}},
        "oidc": {"mode": "CustomConfig", "customConfig": {"config": {"client_id": "g", "replicas": 10}}}}),
    Ok(&[("cpu", "21700m"), ("memory", "33224Mi"), ("storage", "108Gi")][..])
)]
fn monitoring(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("Monitoring", spec, want);
}

// Tenant: nothing in the Tenant's own namespace; its modules are implied applications of
// the namespace it owns (docs/charges.md, "Tenant"), charged by their own kinds' blocks.
#[rstest]
#[case::tenant_yaml_and_quota_yaml_reserve_nothing(json!({}), Ok(&[][..]))]
#[case::module_switches_reserve_nothing_in_the_tenant_itself(
    json!({"etcd": true, "ingress": true, "monitoring": true, "seaweedfs": true, "gateway": true, "computeplane": true, "resourceQuotas": {"cpu": "100"}}),
    Ok(&[][..])
)]
fn tenant(#[case] spec: Value, #[case] want: Result<&[(&str, &str)], &str>) {
    check("Tenant", spec, want);
}
