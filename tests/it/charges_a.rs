//! What each kind of group A (VMs, disks, Kubernetes, platform modules) reserves: the exact charge its chart renders.
use crate::common::*;
use rstest::rstest;
use serde_json::{Value, json};

/// GPU device classes: the A10 of the VM charts, and the A400 of the gn1 instance types.
fn settings() -> Value {
    json!({"gpuDeviceClasses": {A10: "a10", "nvidia.com/A400": "a400"}})
}

/// `want` is the exact charge, or a text the refusal contains.
fn check(kind: &str, spec: Value, want: Result<Resources, &str>) {
    let got = charge_over(kind, spec.clone(), &settings());
    match want {
        Ok(want) => assert_eq!(got, Ok(want), "{kind} {spec}"),
        Err(text) => {
            let err = got.expect_err(text);
            assert!(err.contains(text), "{kind} {spec}: {err:?} lacks {text:?}");
        }
    }
}

const A10_CLASS: &str = "a10.gpuclass.cozystack.io/devices";
const A400_CLASS: &str = "a400.gpuclass.cozystack.io/devices";
const ALL_GPUS: &str = "gpuclass.cozystack.io/devices";

#[rstest]
#[case::vm_yaml_instancetype_schema_default_u1_medium(json!({}), Ok(res(&[("cpu", "1"), ("memory", "4Gi")])))]
#[case::vm_yaml_instancetype_u1_2xlarge(json!({"instanceType": "u1.2xlarge"}), Ok(res(&[("cpu", "8"), ("memory", "32Gi")])))]
#[case::vm_yaml_instancetype_gpus_counted_by_class(
    json!({"instanceType": "gn1.xlarge"}),
    Ok(res(&[("cpu", "4"), ("memory", "16Gi"), (A400_CLASS, "1"), (ALL_GPUS, "1")]))
)]
#[case::helpers_tpl_cpu_without_sockets_renders_nothing_beside_instancetype(
    json!({"instanceType": "u1.xlarge", "resources": {"cpu": "1"}}),
    Ok(res(&[("cpu", "4"), ("memory", "16Gi")]))
)]
#[case::vm_yaml_explicit_size_beside_instancetype_is_denied_by_kubevirt(
    json!({"instanceType": "u1.xlarge", "resources": {"cpu": 3, "sockets": 1, "memory": "64Gi"}}),
    Ok(res(&[("cpu", "4"), ("memory", "16Gi")]))
)]
#[case::helpers_tpl_domain_resources_cores_times_sockets(
    json!({"instanceType": "", "resources": {"cpu": 2, "sockets": 2, "memory": "8Gi"}}),
    Ok(res(&[("cpu", "4"), ("memory", "8Gi")]))
)]
#[case::helpers_tpl_int64_reads_digit_strings(
    json!({"instanceType": "", "resources": {"cpu": "3", "sockets": "2", "memory": "6Gi"}}),
    Ok(res(&[("cpu", "6"), ("memory", "6Gi")]))
)]
#[case::helpers_tpl_zero_cores_count_as_one(
    json!({"instanceType": "", "resources": {"cpu": "0", "sockets": 2, "memory": "2Gi"}}),
    Ok(res(&[("cpu", "2"), ("memory", "2Gi")]))
)]
#[case::helpers_tpl_zero_sockets_count_as_one(
    json!({"instanceType": "", "resources": {"cpu": 3, "sockets": "0", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "3"), ("memory", "2Gi")]))
)]
#[case::helpers_tpl_domain_resources_memory(
    json!({"instanceType": "", "resources": {"cpu": 1, "sockets": 1, "memory": "1536Mi"}}),
    Ok(res(&[("cpu", "1"), ("memory", "1536Mi")]))
)]
#[case::helpers_tpl_cpu_model_has_no_size(
    json!({"cpuModel": "host-passthrough"}),
    Ok(res(&[("cpu", "1"), ("memory", "4Gi")]))
)]
#[case::vm_yaml_gpus_one_device_per_entry(
    json!({"instanceType": "u1.large", "gpus": [{"name": A10}, {"name": A10}]}),
    Ok(res(&[("cpu", "2"), ("memory", "8Gi"), (A10_CLASS, "2"), (ALL_GPUS, "2")]))
)]
#[case::vm_yaml_gpus_render_only_the_device_name(
    json!({"gpus": [{"name": A10, "count": 4, "class": "other"}]}),
    Ok(res(&[("cpu", "1"), ("memory", "4Gi"), (A10_CLASS, "1"), (ALL_GPUS, "1")]))
)]
#[case::vm_yaml_gpus_unclassed_device(
    json!({"gpus": [{"name": "nvidia.com/AD102GL_L40S"}]}),
    Ok(res(&[("cpu", "1"), ("memory", "4Gi"), (ALL_GPUS, "1")]))
)]
#[case::vm_yaml_disks_only_reference_vmdisk_volumes(
    json!({"disks": [{"name": "system"}, {"name": "data", "bus": "sata"}]}),
    Ok(res(&[("cpu", "1"), ("memory", "4Gi")]))
)]
#[case::vm_yaml_run_strategy_halted_is_still_declared(
    json!({"runStrategy": "Halted"}),
    Ok(res(&[("cpu", "1"), ("memory", "4Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_millicores_render_zero_cores(
    json!({"instanceType": "", "resources": {"cpu": "1500m", "sockets": 1, "memory": "2Gi"}}),
    Ok(res(&[("cpu", "1"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_zero_decimal(
    json!({"instanceType": "", "resources": {"cpu": "2.0", "sockets": "2.00", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "4"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_octal(
    json!({"instanceType": "", "resources": {"cpu": "010", "sockets": 1, "memory": "2Gi"}}),
    Ok(res(&[("cpu", "8"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_plus_sign(
    json!({"instanceType": "", "resources": {"cpu": "+3", "sockets": 1, "memory": "2Gi"}}),
    Ok(res(&[("cpu", "3"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_bad_octal_renders_zero(
    json!({"instanceType": "", "resources": {"cpu": "08", "sockets": 2, "memory": "2Gi"}}),
    Ok(res(&[("cpu", "2"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_fraction_renders_zero(
    json!({"instanceType": "", "resources": {"cpu": "2.5", "sockets": 1, "memory": "2Gi"}}),
    Ok(res(&[("cpu", "1"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_83_sockets_octal(
    json!({"instanceType": "", "resources": {"cpu": 2, "sockets": "012", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "20"), ("memory", "2Gi")]))
)]
#[case::vm_instance_helpers_tpl_82_cpu_negative_refused(
    json!({"instanceType": "", "resources": {"cpu": "-2", "sockets": 1, "memory": "2Gi"}}),
    Err("spec.resources.cpu: must not be negative: the chart's int64 reads \"-2\" as -2")
)]
#[case::vm_instance_helpers_tpl_82_cpu_negative_octal_refused(
    json!({"instanceType": "", "resources": {"cpu": "-010", "sockets": 1, "memory": "2Gi"}}),
    Err("spec.resources.cpu: must not be negative: the chart's int64 reads \"-010\" as -8")
)]
#[case::helpers_tpl_int64_refuses_fractions(
    json!({"instanceType": "", "resources": {"cpu": 2, "sockets": 1.5, "memory": "2Gi"}}),
    Err("spec.resources.sockets: must be a whole number, got 1.5")
)]
#[case::vm_yaml_no_instancetype_needs_memory(
    json!({"instanceType": "", "resources": {"cpu": 2, "sockets": 1}}),
    Err("spec: no memory size: size.memory reads nothing")
)]
#[case::vm_yaml_unknown_instancetype_fails(
    json!({"instanceType": "u9.huge"}),
    Err("spec.instanceType: instance type \"u9.huge\" does not exist")
)]
fn vm_instance(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("VMInstance", spec, want);
}

/// `old`: an UPDATE from these values of the stored disk `d` (the foo pool, 100Gi of storage).
#[rstest]
#[case::dv_yaml_storage_schema_default(None, json!({}), Ok(res(&[("storage", "5Gi")])))]
#[case::dv_yaml_storage(None, json!({"storage": "1.5Ti"}), Ok(res(&[("storage", "1536Gi")])))]
#[case::vm_disk_templates_dv_yaml_31_source_upload_renders_an_empty_upload_source(
    None,
    json!({"storage": "10Gi", "source": {"upload": {"size": "10Ti", "image": "disk.qcow2"}}}),
    Ok(res(&[("storage", "10Gi")]))
)]
#[case::dv_yaml_source_has_no_size(
    None,
    json!({"storage": "50Gi", "source": {"http": {"url": "https://example.org/disk.qcow2"}}, "optical": false}),
    Ok(res(&[("storage", "50Gi")]))
)]
#[case::pvc_resize_hook_grows_the_volume(
    Some(json!({"storage": "10Gi"})),
    json!({"storage": "30Gi"}),
    Ok(res(&[("storage", "30Gi")]))
)]
#[case::dv_yaml_live_spec_keeps_a_larger_volume(
    Some(json!({"storage": "50Gi"})),
    json!({"storage": "10Gi"}),
    Err("VMDisk tenant-foo/d: storage cannot shrink from 50Gi to 10Gi: the chart keeps what it has provisioned, so the lower value would under-charge it")
)]
#[case::dv_yaml_unchanged_size_passes(
    Some(json!({"storage": "50Gi"})),
    json!({"storage": "50Gi", "storageClass": "local"}),
    Ok(res(&[("storage", "50Gi")]))
)]
fn vm_disk(#[case] old: Option<Value>, #[case] spec: Value, #[case] want: Result<Resources, &str>) {
    let Some(old) = old else {
        return check("VMDisk", spec, want);
    };
    let k8s = foo_pool(vec![application("VMDisk", "tenant-foo", "d", old.clone())]);
    let verdict = update(&k8s, "VMDisk", "tenant-foo", "d", old, spec.clone());
    match want {
        Ok(want) => {
            assert!(verdict.allowed, "{verdict:?}");
            assert_eq!(charge("VMDisk", spec), Ok(want));
        }
        Err(text) => {
            assert!(!verdict.allowed);
            assert_eq!(message(&verdict), text);
        }
    }
}

/// What a tenant might hand an addon's chart through `valuesOverride`: more pods, larger
/// limits, a volume. The addon is installed inside the tenant cluster (`spec.kubeConfig`), so
/// all of it runs on the worker VMs the `nodeGroups` term already charges.
fn tenant_cluster_values() -> Value {
    json!({"replicaCount": 50, "resources": {"limits": {"cpu": "64", "memory": "256Gi"}},
        "persistence": {"enabled": true, "size": "10Ti"}})
}

/// A node group of no VM, to see the rest alone.
fn no_workers() -> Value {
    json!({"w": {"maxReplicas": 0}})
}

/// Defaults: a control plane of 2 x (apiServer c1.medium 2/2Gi, three t1.micro 500m/256Mi,
/// talos-csr-signer 200m/128Mi) = 7400m/5888Mi, the management Deployments 4608m/4608Mi, and
/// the implicit md0 of 10 x u1.medium (1/4Gi) with 20Gi disks.
#[rstest]
#[case::cluster_yaml_defaults_with_the_implicit_md0(
    json!({}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::cluster_yaml_control_plane_and_management_deployments(
    json!({"nodeGroups": no_workers()}),
    Ok(res(&[("cpu", "12008m"), ("memory", "10496Mi")]))
)]
#[case::cluster_yaml_control_plane_replicas(
    json!({"controlPlane": {"replicas": 3}, "nodeGroups": no_workers()}),
    Ok(res(&[("cpu", "15708m"), ("memory", "13440Mi")]))
)]
#[case::csi_deploy_yaml_management_deployments_are_fixed(
    json!({"controlPlane": {"replicas": 0}, "nodeGroups": no_workers()}),
    Ok(res(&[("cpu", "4608m"), ("memory", "4608Mi")]))
)]
#[case::cluster_yaml_apiserver_resources_over_preset(
    json!({"controlPlane": {"apiServer": {"resources": {"cpu": 4}}}, "nodeGroups": no_workers()}),
    Ok(res(&[("cpu", "16008m"), ("memory", "10496Mi")]))
)]
#[case::cluster_yaml_apiserver_preset(
    json!({"controlPlane": {"apiServer": {"resourcesPreset": "c1.large"}}, "nodeGroups": no_workers()}),
    Ok(res(&[("cpu", "16008m"), ("memory", "14592Mi")]))
)]
#[case::cluster_yaml_controller_manager_scheduler_konnectivity(
    json!({"controlPlane": {
        "controllerManager": {"resourcesPreset": "t1.small"},
        "scheduler": {"resources": {"memory": "1Gi"}},
        "konnectivity": {"server": {"resources": {"cpu": "1", "memory": "1Gi"}}}
    }, "nodeGroups": no_workers()}),
    Ok(res(&[("cpu", "14008m"), ("memory", "14080Mi")]))
)]
#[case::cluster_yaml_node_group_instancetype_times_max_replicas(
    json!({"nodeGroups": {"w": {"minReplicas": 1, "maxReplicas": 3, "instanceType": "u1.large", "diskSize": "50Gi"}}}),
    Ok(res(&[("cpu", "18008m"), ("memory", "35072Mi"), ("storage", "150Gi")]))
)]
#[case::cluster_yaml_min_replicas_above_max_replicas(
    json!({"nodeGroups": {"w": {"minReplicas": 4, "maxReplicas": 2, "instanceType": "u1.small"}}}),
    Ok(res(&[("cpu", "16008m"), ("memory", "18688Mi"), ("storage", "80Gi")]))
)]
#[case::cluster_yaml_disk_size_default_20gi(
    json!({"nodeGroups": {"w": {"maxReplicas": 1, "instanceType": "u1.small", "diskSize": 0}}}),
    Ok(res(&[("cpu", "13008m"), ("memory", "12544Mi"), ("storage", "20Gi")]))
)]
#[case::helpers_tpl_declared_groups_replace_md0(
    json!({"nodeGroups": {
        "a": {"maxReplicas": 1, "instanceType": "u1.small"},
        "b": {"maxReplicas": 1, "instanceType": "u1.medium", "diskSize": "30Gi"}
    }}),
    Ok(res(&[("cpu", "14008m"), ("memory", "16640Mi"), ("storage", "50Gi")]))
)]
#[case::cluster_yaml_sized_by_resources_drops_instancetype(
    json!({"nodeGroups": {"w": {"maxReplicas": 2, "instanceType": "u1.xlarge", "resources": {"cpu": 3, "memory": "5Gi"}}}}),
    Ok(res(&[("cpu", "18008m"), ("memory", "20736Mi"), ("storage", "40Gi")]))
)]
#[case::cluster_yaml_no_instancetype_cpu_unset_is_one_vcpu(
    json!({"nodeGroups": {"w": {"maxReplicas": 1, "instanceType": "", "resources": {"memory": "4Gi"}}}}),
    Ok(res(&[("cpu", "13008m"), ("memory", "14592Mi"), ("storage", "20Gi")]))
)]
#[case::cluster_yaml_pod_cpu_limit_above_the_guest(
    json!({"nodeGroups": {"w": {"maxReplicas": 2, "instanceType": "", "resources": {"cpu": 4, "memory": "8Gi"}, "podCpuLimit": 6, "podCpuRequest": "1"}}}),
    Ok(res(&[("cpu", "24008m"), ("memory", "26880Mi"), ("storage", "40Gi")]))
)]
// cluster.yaml:152 `cores: {{ .group.resources.cpu }}`, unquoted: YAML 1.1 reads `010` as 8.
#[case::kubernetes_templates_cluster_yaml_152_cores_010_is_octal_8_per_vm(
    json!({"nodeGroups": {"w": {"maxReplicas": 2, "instanceType": "", "resources": {"cpu": "010", "memory": "2Gi"}}}}),
    Ok(res(&[("cpu", "28008m"), ("memory", "14592Mi"), ("storage", "40Gi")]))
)]
#[case::cluster_yaml_pod_cpu_limit_below_the_guest(
    json!({"nodeGroups": {"w": {"maxReplicas": 2, "instanceType": "", "resources": {"cpu": 4, "memory": "8Gi"}, "podCpuLimit": "1500m"}}}),
    Ok(res(&[("cpu", "20008m"), ("memory", "26880Mi"), ("storage", "40Gi")]))
)]
#[case::cluster_yaml_gpus_one_device_per_entry(
    json!({"nodeGroups": {"w": {"maxReplicas": 2, "instanceType": "u1.xlarge", "gpus": [{"name": A10, "count": 3}]}}}),
    Ok(res(&[("cpu", "20008m"), ("memory", "43264Mi"), ("storage", "40Gi"), (A10_CLASS, "2"), (ALL_GPUS, "2")]))
)]
#[case::cluster_yaml_instancetype_gpus(
    json!({"nodeGroups": {"w": {"maxReplicas": 1, "instanceType": "gn1.xlarge"}}}),
    Ok(res(&[("cpu", "16008m"), ("memory", "26880Mi"), ("storage", "20Gi"), (A400_CLASS, "1"), (ALL_GPUS, "1")]))
)]
#[case::kubernetes_templates_helmreleases_yaml_kubeconfig_addons_run_inside_the_tenant_cluster(
    json!({"addons": {"ingressNginx": {"enabled": true}, "monitoringAgents": {"enabled": true}, "gpuOperator": {"enabled": true}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_cert_manager_yaml_42_and_crds_yaml_46_values_override_passes(
    json!({"addons": {"certManager": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_cilium_yaml_81_values_override_passes(
    json!({"addons": {"cilium": {"valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_coredns_yaml_37_values_override_passes(
    json!({"addons": {"coredns": {"valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_gpu_operator_yaml_66_values_override_passes(
    json!({"addons": {"gpuOperator": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_hami_yaml_36_values_override_passes(
    json!({"addons": {"hami": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_ingress_nginx_yaml_54_values_override_passes(
    json!({"addons": {"ingressNginx": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_ouroboros_yaml_160_values_override_passes(
    json!({"addons": {"ouroboros": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_velero_yaml_33_values_override_passes(
    json!({"addons": {"velero": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_vertical_pod_autoscaler_yaml_58_values_override_passes(
    json!({"addons": {"verticalPodAutoscaler": {"valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_helmreleases_monitoring_agents_yaml_42_values_override_is_read_by_no_template(
    json!({"addons": {"monitoringAgents": {"enabled": true, "valuesOverride": tenant_cluster_values()}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_cluster_yaml_402_extra_args_are_apiserver_flags(
    json!({"controlPlane": {"apiServer": {"extraArgs": ["--max-requests-inflight=4000"]}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_cluster_yaml_511_extra_volumes_configmap_and_secret_hold_no_storage(
    json!({"controlPlane": {"apiServer": {"extraVolumes": [{"name": "a", "configMap": {"name": "a"}}, {"name": "s", "secret": {"secretName": "s"}}], "extraVolumeMounts": [{"name": "a", "mountPath": "/a"}]}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_cluster_yaml_285_extra_volumes_other_sources_fail_the_render(
    json!({"controlPlane": {"apiServer": {"extraVolumes": [{"name": "big", "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Ti"}}}}}}]}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::kubernetes_templates_talos_talos_reconcile_job_yaml_432_registry_mirrors_are_node_configuration(
    json!({"talos": {"registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}}}}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::cozy_lib_defaulting_sanitize_zero_is_no_limit(
    json!({"controlPlane": {"apiServer": {"resources": {"cpu": 0}}}}),
    Err("spec.controlPlane.apiServer.resources.cpu: an explicit 0 renders a container without a cpu limit")
)]
#[case::cluster_yaml_no_instancetype_needs_memory(
    json!({"nodeGroups": {"w": {"maxReplicas": 1, "instanceType": "", "resources": {"cpu": 2}}}}),
    Err("spec.nodeGroups.w: no memory size: size.memory reads nothing")
)]
fn kubernetes(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("Kubernetes", spec, want);
}

#[rstest]
#[case::nodegroup_yaml_schema_defaults(
    json!({"cluster": "k1"}),
    Ok(res(&[("cpu", "10"), ("memory", "40Gi"), ("storage", "200Gi")]))
)]
#[case::nodegroup_yaml_min_replicas_above_max_replicas(
    json!({"cluster": "k1", "minReplicas": 6, "maxReplicas": 2, "instanceType": "u1.small"}),
    Ok(res(&[("cpu", "6"), ("memory", "12Gi"), ("storage", "120Gi")]))
)]
#[case::nodegroup_yaml_disk_size(
    json!({"cluster": "k1", "maxReplicas": 3, "instanceType": "u1.small", "diskSize": "30Gi"}),
    Ok(res(&[("cpu", "3"), ("memory", "6Gi"), ("storage", "90Gi")]))
)]
#[case::nodegroup_yaml_disk_size_default_20gi(
    json!({"cluster": "k1", "maxReplicas": 3, "diskSize": 0}),
    Ok(res(&[("cpu", "3"), ("memory", "12Gi"), ("storage", "60Gi")]))
)]
#[case::nodegroup_yaml_sized_by_resources_drops_instancetype(
    json!({"cluster": "k1", "maxReplicas": 2, "instanceType": "u1.xlarge", "resources": {"cpu": "3", "memory": "5Gi"}}),
    Ok(res(&[("cpu", "6"), ("memory", "10Gi"), ("storage", "40Gi")]))
)]
#[case::nodegroup_yaml_no_instancetype_cpu_unset_is_one_vcpu(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"memory": "4Gi"}}),
    Ok(res(&[("cpu", "1"), ("memory", "4Gi"), ("storage", "20Gi")]))
)]
#[case::nodegroup_yaml_zero_cores_count_as_one(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "0", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "1"), ("memory", "2Gi"), ("storage", "20Gi")]))
)]
// nodegroup.yaml:133 renders `cores: {{ .group.resources.cpu }}` unquoted: Kubernetes reads
// the scalar as YAML 1.1 (sigs.k8s.io/yaml over go-yaml v2 resolve.go), then KubeVirt's
// integer `cores`.
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_010_is_octal_8(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "010", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "8"), ("memory", "2Gi"), ("storage", "20Gi")]))
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_08_is_the_float_8(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "08", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "8"), ("memory", "2Gi"), ("storage", "20Gi")]))
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_1e1_is_10(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "1e1", "memory": "2Gi"}}),
    Ok(res(&[("cpu", "10"), ("memory", "2Gi"), ("storage", "20Gi")]))
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_plus_4_and_4_0_are_4(
    json!({"cluster": "k1", "maxReplicas": 2, "instanceType": "", "resources": {"cpu": "+4", "memory": "2Gi"}, "podCpuLimit": "4.0"}),
    Ok(res(&[("cpu", "8"), ("memory", "4Gi"), ("storage", "40Gi")]))
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_010_under_a_higher_pod_cpu_limit(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "010", "memory": "2Gi"}, "podCpuLimit": "010"}),
    Ok(res(&[("cpu", "10"), ("memory", "2Gi"), ("storage", "20Gi")]))
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_1_5_is_refused(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "1.5", "memory": "2Gi"}}),
    Err("spec.resources.cpu: \"1.5\" is rendered unquoted into an integer field, where YAML 1.1 reads it as the float 1.5, not a whole number, so the object is refused")
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_json_1_5_is_refused(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": 1.5, "memory": "2Gi"}}),
    Err("spec.resources.cpu: \"1.5\" is rendered unquoted into an integer field, where YAML 1.1 reads it as the float 1.5, not a whole number, so the object is refused")
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_1500m_is_refused(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "1500m", "memory": "2Gi"}}),
    Err("spec.resources.cpu: \"1500m\" is rendered unquoted into an integer field, where YAML 1.1 reads it as a string, not a whole number, so the object is refused")
)]
#[case::kubernetes_nodes_templates_nodegroup_yaml_133_cores_negative_is_refused(
    json!({"cluster": "k1", "maxReplicas": 1, "instanceType": "", "resources": {"cpu": "-010", "memory": "2Gi"}}),
    Err("spec.resources.cpu: \"-010\" renders a negative integer (-8), which the field it fills refuses")
)]
#[case::nodegroup_yaml_pod_cpu_limit_above_the_guest(
    json!({"cluster": "k1", "maxReplicas": 2, "instanceType": "", "resources": {"cpu": 4, "memory": "8Gi"}, "podCpuLimit": 6, "podCpuRequest": "1"}),
    Ok(res(&[("cpu", "12"), ("memory", "16Gi"), ("storage", "40Gi")]))
)]
#[case::nodegroup_yaml_gpus_one_device_per_entry(
    json!({"cluster": "k1", "maxReplicas": 2, "instanceType": "u1.xlarge", "gpus": [{"name": A10}, {"name": A10}]}),
    Ok(res(&[("cpu", "8"), ("memory", "32Gi"), ("storage", "40Gi"), (A10_CLASS, "4"), (ALL_GPUS, "4")]))
)]
#[case::nodegroup_yaml_instancetype_gpus(
    json!({"cluster": "k1", "maxReplicas": 2, "instanceType": "gn1.xlarge"}),
    Ok(res(&[("cpu", "8"), ("memory", "32Gi"), ("storage", "40Gi"), (A400_CLASS, "2"), (ALL_GPUS, "2")]))
)]
#[case::nodegroup_yaml_no_instancetype_needs_memory(
    json!({"cluster": "k1", "instanceType": "", "resources": {"cpu": 2}}),
    Err("spec: no memory size: size.memory reads nothing")
)]
#[case::kubernetes_nodes_templates_talos_reconcile_job_yaml_333_registry_mirrors_are_node_configuration(
    json!({"cluster": "k1", "talos": {"registryMirrors": {"docker.io": {"endpoints": ["https://mirror.example"]}}}}),
    Ok(res(&[("cpu", "10"), ("memory", "40Gi"), ("storage", "200Gi")]))
)]
#[case::nodegroup_yaml_unknown_instancetype_fails(
    json!({"cluster": "k1", "instanceType": "u9.huge"}),
    Err("spec.instanceType: instance type \"u9.huge\" does not exist")
)]
fn kubernetes_nodes(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("KubernetesNodes", spec, want);
}

#[rstest]
#[case::cluster_yaml_tenant_module_defaults(
    json!({}),
    Ok(res(&[("cpu", "22008m"), ("memory", "51456Mi"), ("storage", "200Gi")]))
)]
#[case::computeplane_templates_cluster_yaml_100_node_groups_reach_the_kubernetes_chart_charged(
    json!({"nodeGroups": {"ing": {"minReplicas": 1, "maxReplicas": 2, "instanceType": "u1.large", "roles": ["ingress-nginx"]}}}),
    Ok(res(&[("cpu", "16008m"), ("memory", "26880Mi"), ("storage", "40Gi")]))
)]
#[case::cluster_yaml_min_replicas_above_max_replicas_and_disk_default(
    json!({"nodeGroups": {"ing": {"minReplicas": 3, "maxReplicas": 1, "instanceType": "u1.small", "diskSize": 0, "roles": ["ingress-nginx"]}}}),
    Ok(res(&[("cpu", "15008m"), ("memory", "16640Mi"), ("storage", "60Gi")]))
)]
#[case::computeplane_templates_cluster_yaml_100_unlisted_node_group_fields_pass_through_charged(
    json!({"nodeGroups": {"ing": {"maxReplicas": 1, "instanceType": "", "resources": {"cpu": 2, "memory": "4Gi"}, "podCpuLimit": 3, "podCpuRequest": "1", "roles": ["ingress-nginx"]}}}),
    Ok(res(&[("cpu", "15008m"), ("memory", "14592Mi"), ("storage", "20Gi")]))
)]
#[case::cluster_yaml_gpus_one_device_per_entry(
    json!({"nodeGroups": {"ing": {"maxReplicas": 1, "instanceType": "u1.xlarge", "gpus": [{"name": A10}], "roles": ["ingress-nginx"]}}}),
    Ok(res(&[("cpu", "16008m"), ("memory", "26880Mi"), ("storage", "20Gi"), (A10_CLASS, "1"), (ALL_GPUS, "1")]))
)]
fn compute_plane(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("ComputePlane", spec, want);
}

#[rstest]
#[case::matchbox_deployment_yaml_fixed_limits(json!({}), Ok(res(&[("cpu", "200m"), ("memory", "256Mi")])))]
#[case::bootbox_templates_matchbox_machines_yaml_21_31_35_ip_and_servers_render_dhcp_only(
    json!({"whitelistHTTP": false, "machines": [{"hostname": "m1", "arch": "x86_64", "leaseTime": 86400, "uefi": true,
        "ip": {"address": "10.8.2.2", "gateway": "10.8.2.1", "netmask": "255.255.255.0"},
        "nameServers": ["10.8.2.1"], "timeServers": ["10.8.2.1"]}]}),
    Ok(res(&[("cpu", "200m"), ("memory", "256Mi")]))
)]
fn boot_box(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("BootBox", spec, want);
}

#[rstest]
#[case::bucket_system_deployment_yaml_s3manager_ui(json!({}), Ok(res(&[("cpu", "500m"), ("memory", "512Mi")])))]
#[case::bucket_templates_helmrelease_yaml_25_users_are_access_keys_no_workload(
    json!({"users": {"alice": {}, "bob": {"readonly": true}}, "locking": true, "storagePool": "ssd"}),
    Ok(res(&[("cpu", "500m"), ("memory", "512Mi")]))
)]
fn bucket(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("Bucket", spec, want);
}

#[rstest]
#[case::vpc_yaml_renders_no_workload(json!({}), Ok(res(&[])))]
#[case::vpc_yaml_subnets_peers_routes_add_no_workload(
    json!({"subnets": [{"name": "s0", "cidr": "172.16.0.0/24"}], "peers": [{"vpcName": "other", "tenantNamespace": "tenant-x"}],
        "routes": [{"cidr": "10.0.0.0/8", "nextHopIP": "172.16.0.1"}]}),
    Ok(res(&[]))
)]
fn virtual_private_cloud(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("VirtualPrivateCloud", spec, want);
}

/// Defaults: every part t1.small (1/512Mi); db 2 x 10Gi, master 3, volume 2 x 10Gi, filer 2,
/// s3 2, and the COSI driver 500m/512Mi.
#[rstest]
#[case::seaweedfs_yaml_tenant_module_defaults(
    json!({}),
    Ok(res(&[("cpu", "11500m"), ("memory", "6144Mi"), ("storage", "40Gi")]))
)]
#[case::seaweedfs_db_yaml_replicas_and_size(
    json!({"db": {"replicas": 3, "size": "20Gi"}}),
    Ok(res(&[("cpu", "12500m"), ("memory", "6656Mi"), ("storage", "80Gi")]))
)]
#[case::seaweedfs_yaml_master_filer_s3(
    json!({"master": {"replicas": 1, "resourcesPreset": "t1.micro"}, "filer": {"resources": {"cpu": 2}}, "s3": {"replicas": 1}}),
    Ok(res(&[("cpu", "10"), ("memory", "4352Mi"), ("storage", "40Gi")]))
)]
#[case::seaweedfs_yaml_volume_main_set(
    json!({"volume": {"replicas": 3, "size": "50Gi", "resources": {"memory": "2Gi"}}}),
    Ok(res(&[("cpu", "12500m"), ("memory", "11264Mi"), ("storage", "170Gi")]))
)]
#[case::seaweedfs_yaml_pool_takes_volume_replicas_preset_and_size(
    json!({"volume": {"pools": {"fast": {"diskType": "ssd"}}}}),
    Ok(res(&[("cpu", "13500m"), ("memory", "7168Mi"), ("storage", "60Gi")]))
)]
#[case::seaweedfs_yaml_pool_own_replicas_resources_and_empty_size(
    json!({"volume": {"pools": {"p": {"diskType": "hdd", "size": 0, "replicas": 3, "resources": {"cpu": 2}}}}}),
    Ok(res(&[("cpu", "17500m"), ("memory", "7680Mi"), ("storage", "70Gi")]))
)]
#[case::seaweedfs_yaml_pool_resources_not_inherited(
    json!({"volume": {"resources": {"cpu": 4}, "pools": {"p": {"diskType": "hdd"}}}}),
    Ok(res(&[("cpu", "19500m"), ("memory", "7168Mi"), ("storage", "60Gi")]))
)]
#[case::seaweedfs_yaml_pool_replicas_zero_is_kept(
    json!({"volume": {"pools": {"p": {"diskType": "hdd", "replicas": 0}}}}),
    Ok(res(&[("cpu", "11500m"), ("memory", "6144Mi"), ("storage", "40Gi")]))
)]
#[case::seaweedfs_yaml_multizone_zone_sets(
    json!({"topology": "MultiZone", "volume": {"zones": {"a": {"replicas": 1}, "b": {"size": "20Gi"}}}}),
    Ok(res(&[("cpu", "12500m"), ("memory", "6656Mi"), ("storage", "70Gi")]))
)]
#[case::seaweedfs_yaml_multizone_zones_use_volume_resources(
    json!({"topology": "MultiZone", "volume": {"resourcesPreset": "t1.micro", "resources": {"memory": "1Gi"}, "zones": {"a": {}, "b": {}}}}),
    Ok(res(&[("cpu", "11500m"), ("memory", "9216Mi"), ("storage", "60Gi")]))
)]
#[case::seaweedfs_yaml_multizone_zone_pools_take_the_zone(
    json!({"topology": "MultiZone", "volume": {"zones": {
        "a": {"replicas": 1, "size": "20Gi", "pools": {
            "ssd": {"diskType": "ssd"},
            "big": {"diskType": "hdd", "replicas": 2, "size": "100Gi", "resourcesPreset": "t1.medium"}
        }},
        "b": {}
    }}}),
    Ok(res(&[("cpu", "17500m"), ("memory", "9216Mi"), ("storage", "280Gi")]))
)]
#[case::seaweedfs_yaml_multizone_zone_pools_fall_back_to_volume(
    json!({"topology": "MultiZone", "volume": {"replicas": 3, "size": "5Gi", "zones": {"a": {"pools": {"p": {"diskType": "ssd"}}}, "b": {}}}}),
    Ok(res(&[("cpu", "18500m"), ("memory", "9728Mi"), ("storage", "65Gi")]))
)]
#[case::client_cosi_deployment_yaml_client_topology(
    json!({"topology": "Client", "filer": {"grpcHost": "filer.example.org"}}),
    Ok(res(&[("cpu", "500m"), ("memory", "512Mi")]))
)]
#[case::cozy_lib_defaulting_sanitize_zero_is_no_limit(
    json!({"master": {"resources": {"cpu": 0}}}),
    Err("spec.master.resources.cpu: an explicit 0 renders a container without a cpu limit")
)]
#[case::cozy_lib_defaulting_sanitize_zero_is_no_limit_in_a_pool(
    json!({"volume": {"pools": {"p": {"diskType": "ssd", "resources": {"memory": 0}}}}}),
    Err("spec.volume.pools.p.resources.memory: an explicit 0 renders a container without a memory limit")
)]
fn seaweedfs(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("SeaweedFS", spec, want);
}

/// Defaults: core and registry t1.small (1/512Mi), jobservice and trivy t1.nano (250m/128Mi),
/// portal t1.nano, 2 CNPG instances 1/2048Mi with 5Gi, 2 redis 2/1124Mi with 1Gi, 3 sentinels
/// 250m/128Mi, jobLog 1Gi, trivy 5Gi.
#[rstest]
#[case::harbor_yaml_defaults(
    json!({}),
    Ok(res(&[("cpu", "10500m"), ("memory", "8648Mi"), ("storage", "18Gi")]))
)]
#[case::harbor_yaml_trivy_disabled(
    json!({"trivy": {"enabled": false}}),
    Ok(res(&[("cpu", "10250m"), ("memory", "8520Mi"), ("storage", "13Gi")]))
)]
#[case::harbor_yaml_registry_and_registryctl(
    json!({"registry": {"resources": {"cpu": 2, "memory": "2Gi"}}}),
    Ok(res(&[("cpu", "12500m"), ("memory", "11720Mi"), ("storage", "18Gi")]))
)]
#[case::harbor_yaml_core_resources_over_preset(
    json!({"core": {"resources": {"memory": "2Gi"}, "resourcesPreset": "t1.micro"}}),
    Ok(res(&[("cpu", "10"), ("memory", "10184Mi"), ("storage", "18Gi")]))
)]
#[case::harbor_yaml_jobservice_and_trivy(
    json!({"jobservice": {"resourcesPreset": "t1.small"}, "trivy": {"resourcesPreset": "t1.small", "size": "20Gi"}}),
    Ok(res(&[("cpu", "12"), ("memory", "9416Mi"), ("storage", "33Gi")]))
)]
#[case::database_yaml_instances_and_size(
    json!({"database": {"replicas": 3, "size": "20Gi"}}),
    Ok(res(&[("cpu", "11500m"), ("memory", "10696Mi"), ("storage", "68Gi")]))
)]
#[case::redis_yaml_replicas_size_and_exporter(
    json!({"redis": {"replicas": 3, "size": "2Gi"}}),
    Ok(res(&[("cpu", "12500m"), ("memory", "9772Mi"), ("storage", "22Gi")]))
)]
#[case::redis_yaml_zero_replicas_run_three(
    json!({"redis": {"replicas": 0}}),
    Ok(res(&[("cpu", "12500m"), ("memory", "9772Mi"), ("storage", "19Gi")]))
)]
#[case::cozy_lib_defaulting_sanitize_zero_is_no_limit(
    json!({"core": {"resources": {"memory": 0}}}),
    Err("spec.core.resources.memory: an explicit 0 renders a container without a memory limit")
)]
fn harbor(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("Harbor", spec, want);
}

/// One Pod per process: c1.small 1/1Gi + sidecar 100m/128Mi = 1100m/1152Mi; stateful ones
/// (storage, log, transaction, coordinator) with 16Gi. Defaults: double (F = 1), storage 3,
/// log 3 + F = 4, stateless -1 (none), cluster_controller 1.
#[rstest]
#[case::cluster_yaml_defaults(
    json!({}),
    Ok(res(&[("cpu", "8800m"), ("memory", "9216Mi"), ("storage", "112Gi")]))
)]
#[case::cluster_yaml_process_counts_resources_and_size(
    json!({"cluster": {"redundancyMode": "triple", "processCounts": {"storage": 5, "stateless": 2, "cluster_controller": 1}},
        "resources": {"cpu": 2, "memory": "4Gi"}, "storage": {"size": "32Gi"}}),
    Ok(res(&[("cpu", "27300m"), ("memory", "54912Mi"), ("storage", "320Gi")]))
)]
#[case::foundationdb_templates_cluster_yaml_72_82_93_security_context_has_no_size(
    json!({"securityContext": {"runAsUser": 4059, "runAsGroup": 4059}}),
    Ok(res(&[("cpu", "8800m"), ("memory", "9216Mi"), ("storage", "112Gi")]))
)]
#[case::cluster_yaml_resources_preset(
    json!({"resourcesPreset": "c1.medium"}),
    Ok(res(&[("cpu", "16800m"), ("memory", "17408Mi"), ("storage", "112Gi")]))
)]
#[case::cluster_yaml_process_counts_storage_zero_is_two_f_plus_one(
    json!({"cluster": {"redundancyMode": "single", "processCounts": {"storage": 0, "stateless": -1, "cluster_controller": 1}}}),
    Ok(res(&[("cpu", "5500m"), ("memory", "5760Mi"), ("storage", "64Gi")]))
)]
#[case::cluster_yaml_redundancy_mode_three_data_hall_logs(
    json!({"cluster": {"redundancyMode": "three_data_hall", "processCounts": {"storage": 0, "stateless": -1, "cluster_controller": 1}}}),
    Ok(res(&[("cpu", "13200m"), ("memory", "13824Mi"), ("storage", "176Gi")]))
)]
#[case::cluster_yaml_process_counts_stateless_zero_defaults(
    json!({"cluster": {"processCounts": {"storage": 3, "stateless": 0, "cluster_controller": 1}}}),
    Ok(res(&[("cpu", "17600m"), ("memory", "18432Mi"), ("storage", "112Gi")]))
)]
#[case::cluster_yaml_process_counts_stateless_zero_takes_the_cluster_controller(
    json!({"cluster": {"redundancyMode": "triple", "processCounts": {"storage": 3, "stateless": 0, "cluster_controller": 0}}}),
    Ok(res(&[("cpu", "19800m"), ("memory", "20736Mi"), ("storage", "128Gi")]))
)]
#[case::cluster_yaml_process_counts_dedicated_classes_leave_the_stateless_default(
    json!({"cluster": {"processCounts": {"storage": 3, "stateless": 0, "cluster_controller": 1, "proxy": 2, "master": 1}}}),
    Ok(res(&[("cpu", "16500m"), ("memory", "17280Mi"), ("storage", "112Gi")]))
)]
#[case::cluster_yaml_process_counts_stateless_zero_with_every_role_dedicated_runs_none(
    json!({"cluster": {"processCounts": {"storage": 3, "stateless": 0, "cluster_controller": 1, "master": 1, "resolution": 1,
        "ratekeeper": 1, "data_distributor": 1, "proxy": 3}}}),
    Ok(res(&[("cpu", "16500m"), ("memory", "17280Mi"), ("storage", "112Gi")]))
)]
#[case::cluster_yaml_redundancy_mode_others_have_no_fault_tolerance(
    json!({"cluster": {"redundancyMode": "one_satellite_double", "processCounts": {"storage": 0, "stateless": 0, "cluster_controller": 1}}}),
    Ok(res(&[("cpu", "13200m"), ("memory", "13824Mi"), ("storage", "64Gi")]))
)]
#[case::foundationdb_templates_cluster_yaml_19_process_counts_verbatim_log_and_transaction_charged(
    json!({"cluster": {"processCounts": {"storage": 3, "stateless": -1, "cluster_controller": 1, "log": 6, "transaction": 2}}}),
    Ok(res(&[("cpu", "13200m"), ("memory", "13824Mi"), ("storage", "176Gi")]))
)]
#[case::cluster_yaml_process_counts_minus_one_runs_none(
    json!({"cluster": {"processCounts": {"storage": -1, "stateless": -1, "cluster_controller": -1, "log": -1}}}),
    Ok(res(&[]))
)]
#[case::backup_yaml_two_agents(
    json!({"backup": {"enabled": true, "s3": {"bucket": "b"}}}),
    Ok(res(&[("cpu", "9000m"), ("memory", "9472Mi"), ("storage", "112Gi")]))
)]
#[case::cozy_lib_defaulting_sanitize_zero_is_no_limit(
    json!({"resources": {"cpu": 0}}),
    Err("spec.resources.cpu: an explicit 0 renders a container without a cpu limit")
)]
#[case::cluster_yaml_process_counts_negative_other_than_minus_one_are_refused(
    json!({"cluster": {"processCounts": {"storage": -2, "stateless": -1, "cluster_controller": 1}}}),
    Err("spec.cluster.processCounts.storage: must not be negative, got -2")
)]
fn foundationdb(#[case] spec: Value, #[case] want: Result<Resources, &str>) {
    check("FoundationDB", spec, want);
}
