//! What the databases and messaging kinds (group b) reserve: each chart's render, template by template.
use crate::common::*;
use rstest::rstest;
use serde_json::{Value, json};

/// What an application of `kind` with `spec` is charged, with the A10 device mapped to
/// class `a10` (`gpu_classes`, alone and over the shipped settings), against `want`: the exact charge (every key) or the exact
/// refusal.
fn check(kind: &str, spec: Value, want: Result<&[(&str, &str)], &str>) {
    let got = charge_over(kind, spec, &gpu_classes());
    assert_eq!(got, want.map(res).map_err(str::to_string), "{kind}");
}

type Want = Result<&'static [(&'static str, &'static str)], &'static str>;

const NOTHING: &[(&str, &str)] = &[];

/// The output keys of A10 devices: all classes, and class `a10`.
const GPUS: &str = "gpuclass.cozystack.io/devices";
const A10S: &str = "a10.gpuclass.cozystack.io/devices";

// The GPU cases assert what the chart renders (one device limit on every container that
// reads the resources map) and are ignored until src/charge/evaluate.rs reads a resources key
// as one key: `read_resources` reads `resources.<key>` as a dotted path, so a device name
// with a dot (every real one, `nvidia.com/...`) reads nothing and charges 0 devices.

/// The refusal of an explicit 0 `key` at `path`.
macro_rules! zero {
    ($path:literal, $key:literal) => {
        concat!(
            $path,
            ": an explicit 0 renders a container without a ",
            $key,
            " limit (it wins over any preset), which no budget can bound"
        )
    };
}

/// The refusal of an empty `key` at `path` in a cozy-lib resources map.
macro_rules! empty {
    ($path:literal, $key:literal) => {
        concat!(
            $path,
            ": is empty: the container's ",
            $key,
            " limit renders empty, which Kubernetes refuses (cozy-lib merges resources over the preset with Sprig's mergeOverwrite, which writes even an empty value, so the preset's ",
            $key,
            " is not used)"
        )
    };
}

/// The refusal of an empty resolver claim size given in `pvc.merge`.
const MERGED_EMPTY: &str = "spec.config.resolver.pvc.merge.spec.resources.requests.storage: is empty, and Sprig's mergeOverwrite (mergo 1.0.1) writes even an empty value over what the chart has there, so the object renders an empty value Kubernetes refuses";

/// The refusal of the unmapped extended resource `nvidia.com/gpu` in the resources map at `path`.
macro_rules! extended {
    ($path:literal) => {
        concat!(
            $path,
            ".nvidia.com/gpu: \"nvidia.com/gpu\" is an extended resource the chart sets as a container limit, and this policy can charge only cpu, memory and the GPU devices named in the gpuDeviceClasses setting"
        )
    };
}

#[rstest]
#[case::db_yaml_defaults_two_instances_of_t1_micro(json!({}), Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "20Gi")][..]))]
#[case::db_yaml_8_instances_from_replicas(json!({"replicas": 3}), Ok(&[("cpu", "1500m"), ("memory", "768Mi"), ("storage", "30Gi")][..]))]
#[case::db_yaml_8_zero_instances_cnpg_refuses_charge_nothing(json!({"replicas": 0}), Ok(NOTHING))]
#[case::db_yaml_190_resources_win_key_by_key_over_the_preset(
    json!({"replicas": 3, "resources": {"cpu": "2"}, "resourcesPreset": "s1.medium", "size": "50Gi"}),
    Ok(&[("cpu", "6"), ("memory", "12Gi"), ("storage", "150Gi")][..])
)]
#[case::db_yaml_190_preset(json!({"resourcesPreset": "u1.large"}), Ok(&[("cpu", "8"), ("memory", "32Gi"), ("storage", "20Gi")][..]))]
#[case::db_yaml_190_explicit_zero_cpu_refused(json!({"resources": {"cpu": 0}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::db_yaml_190_unmapped_extended_resource_refused(json!({"resources": {"nvidia.com/gpu": 1}}), Err(extended!("spec.resources")))]
#[case::db_yaml_190_gpu_device_in_resources_per_instance(
    json!({"resources": {"cpu": "1", "memory": "2Gi", A10: 1}}),
    Ok(&[("cpu", "2"), ("memory", "4Gi"), ("storage", "20Gi"), (GPUS, "2"), (A10S, "2")][..])
)]
#[case::db_yaml_224_storage_size_per_instance(json!({"size": "100Gi"}), Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "200Gi")][..]))]
#[case::postgres_templates_db_yaml_206_parameters_are_server_configuration(
    json!({"postgresql": {"parameters": {"shared_buffers": "64GB", "max_connections": 5000, "work_mem": "1GB"}}}),
    Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "20Gi")][..])
)]
#[case::postgres_templates_regsecret_yaml_9_registry_secret_is_a_secret(
    json!({"registrySecret": {"auths": {"r.example": {"auth": "eDp5"}}}}),
    Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "20Gi")][..])
)]
fn postgres(#[case] spec: Value, #[case] want: Want) {
    check("Postgres", spec, want);
}

#[rstest]
#[case::mariadb_yaml_defaults_two_t1_nano_pods_and_the_exporter(json!({}), Ok(&[("cpu", "800m"), ("memory", "768Mi"), ("storage", "20Gi")][..]))]
#[case::mariadb_yaml_37_replicas_do_not_multiply_the_exporter(
    json!({"replicas": 3, "resources": {"cpu": "2", "memory": "4Gi"}}),
    Ok(&[("cpu", "6300m"), ("memory", "12800Mi"), ("storage", "30Gi")][..])
)]
#[case::mariadb_yaml_37_zero_replicas_leave_the_exporter(json!({"replicas": 0}), Ok(&[("cpu", "300m"), ("memory", "512Mi")][..]))]
#[case::mariadb_yaml_102_117_preset_and_size(
    json!({"replicas": 1, "resourcesPreset": "u1.large", "size": "100Gi"}),
    Ok(&[("cpu", "4300m"), ("memory", "16896Mi"), ("storage", "100Gi")][..])
)]
#[case::mariadb_yaml_82_84_exporter_limits_beside_explicit_resources(
    json!({"replicas": 1, "resources": {"cpu": "1", "memory": "1Gi"}, "size": "5Gi"}),
    Ok(&[("cpu", "1300m"), ("memory", "1536Mi"), ("storage", "5Gi")][..])
)]
#[case::mariadb_yaml_117_explicit_zero_memory_refused(json!({"resources": {"memory": "0"}}), Err(zero!("spec.resources.memory", "memory")))]
#[case::mariadb_yaml_117_unmapped_extended_resource_refused(json!({"resources": {"nvidia.com/gpu": 1}}), Err(extended!("spec.resources")))]
#[case::mariadb_yaml_117_gpu_device_per_mariadb_pod(
    json!({"resources": {A10: 1}}),
    Ok(&[("cpu", "800m"), ("memory", "768Mi"), ("storage", "20Gi"), (GPUS, "2"), (A10S, "2")][..])
)]
#[case::mariadb_templates_regsecret_yaml_9_registry_secret_is_a_secret(
    json!({"registrySecret": {"auths": {"r.example": {"auth": "eDp5"}}}}),
    Ok(&[("cpu", "800m"), ("memory", "768Mi"), ("storage", "20Gi")][..])
)]
fn mariadb(#[case] spec: Value, #[case] want: Want) {
    check("MariaDB", spec, want);
}

#[rstest]
#[case::mongodb_yaml_88_defaults_replica_set_rs0(json!({}), Ok(&[("cpu", "3"), ("memory", "1536Mi"), ("storage", "30Gi")][..]))]
#[case::mongodb_yaml_90_91_101_replica_set_replicas_resources_size(
    json!({"replicas": 5, "size": "20Gi", "resources": {"memory": "1Gi"}}),
    Ok(&[("cpu", "5"), ("memory", "5Gi"), ("storage", "100Gi")][..])
)]
#[case::mongodb_yaml_38_68_sharded_defaults_config_servers_mongos_and_rs0(
    json!({"sharding": true}),
    Ok(&[("cpu", "8"), ("memory", "4Gi"), ("storage", "39Gi")][..])
)]
#[case::mongodb_yaml_88_sharded_ignores_top_level_replicas_and_size(
    json!({"sharding": true, "size": "500Gi", "replicas": 5}),
    Ok(&[("cpu", "8"), ("memory", "4Gi"), ("storage", "39Gi")][..])
)]
#[case::mongodb_yaml_40_51_config_servers_and_their_volumes(
    json!({"sharding": true, "shardingConfig": {"configServers": 5, "configServerSize": "10Gi", "mongos": 2}}),
    Ok(&[("cpu", "10"), ("memory", "5Gi"), ("storage", "80Gi")][..])
)]
#[case::mongodb_yaml_57_mongos_without_a_volume(
    json!({"sharding": true, "shardingConfig": {"configServers": 3, "configServerSize": "3Gi", "mongos": 4}}),
    Ok(&[("cpu", "10"), ("memory", "5Gi"), ("storage", "39Gi")][..])
)]
#[case::mongodb_yaml_71_82_each_shard_its_replicas_and_size(
    json!({"sharding": true, "replicas": 1, "resourcesPreset": "u1.medium", "shardingConfig": {
        "configServers": 1, "configServerSize": "2Gi", "mongos": 1,
        "shards": [{"name": "a", "replicas": 1, "size": "100Gi"}, {"name": "b", "replicas": 1, "size": "50Gi"}]}}),
    Ok(&[("cpu", "8"), ("memory", "32Gi"), ("storage", "152Gi")][..])
)]
#[case::mongodb_yaml_71_82_three_shards_of_five_the_bad_input_row(
    json!({"sharding": true, "shardingConfig": {"configServers": 3, "configServerSize": "3Gi", "mongos": 2, "shards": [
        {"name": "rs0", "replicas": 5, "size": "100Gi"},
        {"name": "rs1", "replicas": 5, "size": "100Gi"},
        {"name": "rs2", "replicas": 5, "size": "100Gi"}]}}),
    Ok(&[("cpu", "20"), ("memory", "10Gi"), ("storage", "1509Gi")][..])
)]
#[case::mongodb_yaml_41_58_72_top_level_resources_size_every_part(
    json!({"sharding": true, "resources": {"cpu": "2", "memory": "4Gi"}}),
    Ok(&[("cpu", "16"), ("memory", "32Gi"), ("storage", "39Gi")][..])
)]
#[case::mongodb_yaml_69_no_shards_charges_config_servers_and_mongos(
    json!({"sharding": true, "shardingConfig": {"configServers": 3, "configServerSize": "3Gi", "mongos": 2, "shards": []}}),
    Ok(&[("cpu", "5"), ("memory", "2560Mi"), ("storage", "9Gi")][..])
)]
#[case::mongodb_yaml_38_sharding_not_a_boolean_refused(
    json!({"sharding": "true"}),
    Err("spec.sharding: must be a boolean, not the string \"true\"")
)]
#[case::mongodb_yaml_91_explicit_zero_cpu_refused(json!({"resources": {"cpu": "0"}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::mongodb_yaml_41_sharded_explicit_zero_cpu_refused(json!({"sharding": true, "resources": {"cpu": "0"}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::mongodb_yaml_72_sharded_unmapped_extended_resource_refused(json!({"sharding": true, "resources": {"nvidia.com/gpu": 1}}), Err(extended!("spec.resources")))]
#[case::mongodb_yaml_41_58_72_gpu_device_on_every_sharded_pod(
    json!({"sharding": true, "resources": {A10: 1}}),
    Ok(&[("cpu", "8"), ("memory", "4Gi"), ("storage", "39Gi"), (GPUS, "8"), (A10S, "8")][..])
)]
fn mongodb(#[case] spec: Value, #[case] want: Want) {
    check("MongoDB", spec, want);
}

#[rstest]
#[case::redisfailover_yaml_defaults_redis_exporter_and_three_sentinels(json!({}), Ok(&[("cpu", "3250m"), ("memory", "840Mi"), ("storage", "2Gi")][..]))]
#[case::redisfailover_yaml_42_zero_replicas_run_three(json!({"replicas": 0}), Ok(&[("cpu", "4500m"), ("memory", "1068Mi"), ("storage", "3Gi")][..]))]
#[case::redisfailover_yaml_38_41_resources_size_redis_and_sentinels(
    json!({"replicas": 3, "resources": {"memory": "2Gi"}, "size": "5Gi"}),
    Ok(&[("cpu", "4500m"), ("memory", "12588Mi"), ("storage", "15Gi")][..])
)]
#[case::redisfailover_yaml_37_sentinels_stay_three_with_one_replica(
    json!({"replicas": 1, "resourcesPreset": "c1.medium"}),
    Ok(&[("cpu", "9"), ("memory", "8292Mi"), ("storage", "1Gi")][..])
)]
#[case::redisfailover_yaml_43_size_zero_renders_no_volume(json!({"size": 0}), Ok(&[("cpu", "3250m"), ("memory", "840Mi")][..]))]
#[case::redisfailover_yaml_61_62_exporter_per_redis_pod(
    json!({"replicas": 5, "resources": {"cpu": "1", "memory": "1Gi"}, "size": "1Gi"}),
    Ok(&[("cpu", "13"), ("memory", "8692Mi"), ("storage", "5Gi")][..])
)]
#[case::redisfailover_yaml_41_explicit_zero_cpu_refused(json!({"resources": {"cpu": 0}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::redisfailover_yaml_41_unmapped_extended_resource_refused(json!({"resources": {"nvidia.com/gpu": 1}}), Err(extended!("spec.resources")))]
#[case::redisfailover_yaml_38_41_gpu_device_on_redis_and_sentinels(
    json!({"resources": {A10: 1}}),
    Ok(&[("cpu", "3250m"), ("memory", "840Mi"), ("storage", "2Gi"), (GPUS, "5"), (A10S, "5")][..])
)]
fn redis(#[case] spec: Value, #[case] want: Want) {
    check("Redis", spec, want);
}

#[rstest]
#[case::rabbitmq_yaml_defaults_three_t1_nano_pods(json!({}), Ok(&[("cpu", "750m"), ("memory", "384Mi"), ("storage", "30Gi")][..]))]
#[case::rabbitmq_yaml_9_15_31_replicas_resources_size(
    json!({"replicas": 5, "resources": {"cpu": "2", "memory": "4Gi"}, "size": "20Gi"}),
    Ok(&[("cpu", "10"), ("memory", "20Gi"), ("storage", "100Gi")][..])
)]
#[case::rabbitmq_yaml_15_preset_and_31_size_zero_no_volume(
    json!({"replicas": 1, "resourcesPreset": "u1.small", "size": "0"}),
    Ok(&[("cpu", "1"), ("memory", "4Gi")][..])
)]
#[case::rabbitmq_yaml_9_zero_replicas(json!({"replicas": 0}), Ok(NOTHING))]
#[case::rabbitmq_yaml_15_explicit_zero_memory_refused(json!({"resources": {"memory": 0}}), Err(zero!("spec.resources.memory", "memory")))]
#[case::rabbitmq_yaml_15_gpu_devices_per_pod(
    json!({"replicas": 1, "resources": {"cpu": "1", "memory": "2Gi", A10: 2}}),
    Ok(&[("cpu", "1"), ("memory", "2Gi"), ("storage", "10Gi"), (GPUS, "2"), (A10S, "2")][..])
)]
fn rabbitmq(#[case] spec: Value, #[case] want: Want) {
    check("RabbitMQ", spec, want);
}

#[rstest]
#[case::qdrant_yaml_defaults_one_t1_small_pod(json!({}), Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "10Gi")][..]))]
#[case::qdrant_yaml_27_28_33_replicas_resources_over_preset_size(
    json!({"replicas": 3, "resources": {"cpu": "4"}, "resourcesPreset": "m1.small", "size": "100Gi"}),
    Ok(&[("cpu", "12"), ("memory", "24Gi"), ("storage", "300Gi")][..])
)]
#[case::qdrant_yaml_27_zero_replicas(json!({"replicas": 0}), Ok(NOTHING))]
#[case::qdrant_yaml_28_explicit_zero_cpu_refused(json!({"resources": {"cpu": "0"}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::qdrant_yaml_28_unmapped_extended_resource_refused(
    json!({"resources": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}}),
    Err(extended!("spec.resources"))
)]
#[case::qdrant_yaml_28_gpu_device_in_resources(
    json!({"resources": {"cpu": "2", "memory": "4Gi", A10: 1}}),
    Ok(&[("cpu", "2"), ("memory", "4Gi"), ("storage", "10Gi"), (GPUS, "1"), (A10S, "1")][..])
)]
fn qdrant(#[case] spec: Value, #[case] want: Want) {
    check("Qdrant", spec, want);
}

#[rstest]
#[case::openbao_yaml_73_defaults_standalone_one_pod(json!({}), Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "10Gi")][..]))]
#[case::openbao_yaml_73_zero_replicas_render_standalone(json!({"replicas": 0}), Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "10Gi")][..]))]
#[case::openbao_yaml_45_50_ha_replicas_preset_size(
    json!({"replicas": 3, "resourcesPreset": "s1.small", "size": "5Gi"}),
    Ok(&[("cpu", "3"), ("memory", "6Gi"), ("storage", "15Gi")][..])
)]
#[case::openbao_yaml_30_resources_over_preset_in_ha(
    json!({"replicas": 2, "resources": {"memory": "1Gi"}}),
    Ok(&[("cpu", "2"), ("memory", "2Gi"), ("storage", "20Gi")][..])
)]
#[case::openbao_yaml_41_size(json!({"size": "1Gi"}), Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "1Gi")][..]))]
#[case::openbao_yaml_30_explicit_zero_cpu_refused(json!({"resources": {"cpu": 0}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::openbao_yaml_30_gpu_device_in_resources(
    json!({"resources": {A10: 1}}),
    Ok(&[("cpu", "1"), ("memory", "512Mi"), ("storage", "10Gi"), (GPUS, "1"), (A10S, "1")][..])
)]
fn openbao(#[case] spec: Value, #[case] want: Want) {
    check("OpenBAO", spec, want);
}

#[rstest]
#[case::clickhouse_yaml_chkeeper_yaml_defaults(json!({}), Ok(&[("cpu", "3500m"), ("memory", "1792Mi"), ("storage", "27Gi")][..]))]
#[case::clickhouse_yaml_91_92_shards_times_replicas_and_116_126_two_volumes(
    json!({"size": "100Gi", "logStorageSize": "5Gi", "replicas": 3, "shards": 2}),
    Ok(&[("cpu", "7500m"), ("memory", "3840Mi"), ("storage", "633Gi")][..])
)]
#[case::clickhouse_yaml_91_92_chkeeper_yaml_17_zero_counts_normalized_to_one(
    json!({"replicas": 0, "shards": 0, "clickhouseKeeper": {"replicas": 0}}),
    Ok(&[("cpu", "1500m"), ("memory", "768Mi"), ("storage", "13Gi")][..])
)]
#[case::clickhouse_yaml_146_preset(
    json!({"resourcesPreset": "u1.medium"}),
    Ok(&[("cpu", "5500m"), ("memory", "17152Mi"), ("storage", "27Gi")][..])
)]
#[case::chkeeper_yaml_61_keeper_sized_by_top_level_resources(
    json!({"resources": {"cpu": "4", "memory": "16Gi"}}),
    Ok(&[("cpu", "20"), ("memory", "80Gi"), ("storage", "27Gi")][..])
)]
#[case::clickhouse_yaml_152_318_324_backup_sidecar_per_host(
    json!({"backup": {"enabled": true}, "shards": 2}),
    Ok(&[("cpu", "7500m"), ("memory", "3840Mi"), ("storage", "51Gi")][..])
)]
#[case::chkeeper_yaml_3_keeper_disabled(json!({"clickhouseKeeper": {"enabled": false}}), Ok(&[("cpu", "2"), ("memory", "1Gi"), ("storage", "24Gi")][..]))]
#[case::chkeeper_yaml_17_61_75_keeper_replicas_preset_size(
    json!({"clickhouseKeeper": {"replicas": 5, "resourcesPreset": "s1.small", "size": "10Gi"}}),
    Ok(&[("cpu", "7"), ("memory", "11Gi"), ("storage", "74Gi")][..])
)]
#[case::chkeeper_yaml_3_keeper_switch_not_a_boolean_refused(
    json!({"clickhouseKeeper": {"enabled": "false"}}),
    Err("spec.clickhouseKeeper.enabled: must be a boolean, not the string \"false\"")
)]
#[case::clickhouse_yaml_146_explicit_zero_cpu_refused(json!({"resources": {"cpu": "0"}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::chkeeper_yaml_61_explicit_zero_memory_refused(
    json!({"resources": {"memory": 0}, "clickhouseKeeper": {"enabled": true}}),
    Err(zero!("spec.resources.memory", "memory"))
)]
#[case::clickhouse_yaml_146_chkeeper_yaml_61_gpu_device_on_every_host_and_keeper(
    json!({"resources": {A10: 1}}),
    Ok(&[("cpu", "3500m"), ("memory", "1792Mi"), ("storage", "27Gi"), (GPUS, "5"), (A10S, "5")][..])
)]
fn clickhouse(#[case] spec: Value, #[case] want: Want) {
    check("ClickHouse", spec, want);
}

#[rstest]
#[case::kafka_yaml_defaults_brokers_zookeeper_entity_operator(json!({}), Ok(&[("cpu", "6"), ("memory", "7Gi"), ("storage", "45Gi")][..]))]
#[case::kafka_yaml_26_27_68_brokers_and_82_83_zookeeper(
    json!({"kafka": {"replicas": 1, "resources": {"cpu": "2"}, "size": "100Gi"}, "zookeeper": {"replicas": 1, "resourcesPreset": "t1.small"}}),
    Ok(&[("cpu", "3"), ("memory", "2560Mi"), ("storage", "105Gi")][..])
)]
#[case::kafka_yaml_83_86_88_zookeeper_resources_and_size(
    json!({"zookeeper": {"size": "20Gi", "resources": {"memory": "4Gi"}}}),
    Ok(&[("cpu", "6"), ("memory", "16Gi"), ("storage", "90Gi")][..])
)]
#[case::kafka_yaml_105_118_entity_operator_memory_whatever_the_brokers(
    json!({"kafka": {"replicas": 5, "resourcesPreset": "u1.small"}}),
    Ok(&[("cpu", "8"), ("memory", "24Gi"), ("storage", "65Gi")][..])
)]
#[case::kafka_yaml_27_explicit_zero_cpu_refused(json!({"kafka": {"resources": {"cpu": 0}}}), Err(zero!("spec.kafka.resources.cpu", "cpu")))]
#[case::kafka_yaml_83_unmapped_extended_resource_refused(
    json!({"zookeeper": {"resources": {"nvidia.com/gpu": 1}}}),
    Err(extended!("spec.zookeeper.resources"))
)]
#[case::kafka_yaml_27_gpu_device_per_broker(
    json!({"kafka": {"resources": {A10: 1}}}),
    Ok(&[("cpu", "6"), ("memory", "7Gi"), ("storage", "45Gi"), (GPUS, "3"), (A10S, "3")][..])
)]
#[case::kafka_templates_topics_yaml_19_topic_config_lives_in_the_broker_volumes(
    json!({"topics": [{"name": "t", "partitions": 100, "replicas": 3, "config": {"retention.bytes": "1099511627776", "segment.bytes": "1073741824"}}]}),
    Ok(&[("cpu", "6"), ("memory", "7Gi"), ("storage", "45Gi")][..])
)]
fn kafka(#[case] spec: Value, #[case] want: Want) {
    check("Kafka", spec, want);
}

#[rstest]
#[case::nats_yaml_defaults_two_pods_with_jetstream(json!({}), Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "20Gi")][..]))]
#[case::nats_yaml_110_jetstream_off_no_volume_99_replicas_59_preset(
    json!({"jetstream": {"enabled": false}, "replicas": 3, "resourcesPreset": "c1.medium"}),
    Ok(&[("cpu", "6"), ("memory", "6Gi")][..])
)]
#[case::nats_yaml_113_jetstream_size_per_pod(json!({"jetstream": {"size": "50Gi"}}), Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "100Gi")][..]))]
#[case::nats_yaml_99_zero_replicas(json!({"replicas": 0}), Ok(NOTHING))]
#[case::nats_yaml_59_resources(json!({"resources": {"cpu": "1", "memory": "1Gi"}}), Ok(&[("cpu", "2"), ("memory", "2Gi"), ("storage", "20Gi")][..]))]
#[case::nats_yaml_59_explicit_zero_cpu_refused(json!({"resources": {"cpu": "0"}}), Err(zero!("spec.resources.cpu", "cpu")))]
// cozy-lib/templates/_resources.tpl:162: mergeOverwrite writes an empty key over the preset's.
#[case::nats_yaml_59_empty_cpu_replaces_the_preset_refused(json!({"resources": {"cpu": ""}}), Err(empty!("spec.resources.cpu", "cpu")))]
#[case::nats_yaml_59_null_memory_replaces_the_preset_refused(
    json!({"resources": {"cpu": "1", "memory": null}}),
    Err(empty!("spec.resources.memory", "memory"))
)]
#[case::nats_yaml_59_gpu_device_per_pod(
    json!({"resources": {"cpu": "1", "memory": "1Gi", A10: 1}}),
    Ok(&[("cpu", "2"), ("memory", "2Gi"), ("storage", "20Gi"), (GPUS, "2"), (A10S, "2")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_per_pod_upstream_default_1gi_is_charged(
    json!({"config": {"resolver": {"enabled": true}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "22Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_size_per_pod_is_charged(
    json!({"replicas": 3, "config": {"resolver": {"enabled": true, "pvc": {"size": "30Gi"}}}}),
    Ok(&[("cpu", "750m"), ("memory", "384Mi"), ("storage", "120Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_disabled_renders_no_pvc(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"enabled": false, "size": "30Gi"}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "20Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_enabled_string_is_truthy_pvc_is_charged(
    json!({"config": {"resolver": {"enabled": "false", "pvc": {"size": "5Gi"}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "30Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_enabled_null_is_charged_as_the_default(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"enabled": null}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "22Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_merge_storage_wins_over_size(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"size": "2Gi", "merge": {"spec": {"resources": {"requests": {"storage": "50Gi"}}}}}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "120Gi")][..])
)]
// sys:nats/charts/nats/templates/_helpers.tpl:242-246 merges pvc.merge over the claim with
// Sprig's mergeOverwrite (mergo 1.0.1 WithOverride, merge.go:199-213): a given key wins even
// empty, an empty object keeps what the claim has.
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_merge_empty_storage_is_refused(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"size": "2Gi", "merge": {"metadata": {"labels": {"a": "b"}}, "spec": {"resources": {"requests": {"storage": ""}}}}}}}}),
    Err(MERGED_EMPTY)
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_merge_null_storage_is_refused(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"merge": {"spec": {"resources": {"requests": {"storage": null}}}}}}}}),
    Err(MERGED_EMPTY)
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_merge_zero_storage_wins_over_size(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"size": "2Gi", "merge": {"spec": {"resources": {"requests": {"storage": 0}}}}}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "20Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_merge_empty_requests_keep_size(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"size": "2Gi", "merge": {"spec": {"resources": {"requests": {}}}}}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "24Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_merge_null_requests_are_refused(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"merge": {"spec": {"resources": {"requests": null}}}}}}}),
    Err("spec.config.resolver.pvc.merge.spec.resources.requests: is empty, and Sprig's mergeOverwrite (mergo 1.0.1) writes even an empty value over what the chart has there, so the object renders an empty value Kubernetes refuses")
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_patch_is_refused(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"patch": [{"op": "replace", "path": "/spec/resources/requests/storage", "value": "10Ti"}]}}}}),
    Err("spec.config.resolver.pvc.patch: reaches the chart verbatim and can change what it renders past anything this policy reads, so it cannot be charged")
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_patch_without_a_pvc_passes(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"enabled": false, "patch": [{"op": "remove", "path": "/metadata"}]}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "20Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_merge_and_patch_render_nats_conf_only(
    json!({"config": {"resolver": {"enabled": true, "merge": {"type": "full", "interval": "2m"}, "patch": [{"op": "add", "path": "/limit", "value": 1000}]}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "22Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_off_renders_no_pvc(
    json!({"config": {"resolver": {"enabled": false, "pvc": {"size": "30Gi"}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "20Gi")][..])
)]
#[case::nats_templates_nats_yaml_84_config_resolver_pvc_size_malformed_is_refused(
    json!({"config": {"resolver": {"enabled": true, "pvc": {"size": "lots"}}}}),
    Err("spec.config.resolver.pvc.size: \"lots\" is not a valid quantity")
)]
#[case::nats_templates_nats_yaml_79_config_merge_renders_nats_conf_only(
    json!({"config": {"merge": {"jetstream": {"max_file_store": "1Ti"}}}}),
    Ok(&[("cpu", "500m"), ("memory", "256Mi"), ("storage", "20Gi")][..])
)]
fn nats(#[case] spec: Value, #[case] want: Want) {
    check("NATS", spec, want);
}

#[rstest]
#[case::opensearch_yaml_defaults_three_c1_medium_nodes(json!({}), Ok(&[("cpu", "6"), ("memory", "6Gi"), ("storage", "30Gi")][..]))]
#[case::opensearch_yaml_47_48_60_replicas_size_resources_and_61_roles_change_nothing(
    json!({"replicas": 2, "resources": {"cpu": "4", "memory": "8Gi"}, "size": "50Gi", "nodeRoles": {"ml": true}}),
    Ok(&[("cpu", "8"), ("memory", "16Gi"), ("storage", "100Gi")][..])
)]
#[case::opensearch_yaml_35_dashboards_once_not_per_node(
    json!({"dashboards": {"enabled": true}}),
    Ok(&[("cpu", "7"), ("memory", "7Gi"), ("storage", "30Gi")][..])
)]
#[case::opensearch_yaml_39_dashboards_zero_replicas_default_to_one(
    json!({"replicas": 1, "dashboards": {"enabled": true, "replicas": 0, "resources": {"memory": "512Mi"}}}),
    Ok(&[("cpu", "3"), ("memory", "2560Mi"), ("storage", "10Gi")][..])
)]
#[case::opensearch_yaml_39_43_dashboards_replicas_and_preset(
    json!({"dashboards": {"enabled": true, "replicas": 2, "resourcesPreset": "s1.small"}}),
    Ok(&[("cpu", "8"), ("memory", "10Gi"), ("storage", "30Gi")][..])
)]
#[case::opensearch_yaml_43_dashboards_empty_preset_defaults_to_c1_small(
    json!({"dashboards": {"enabled": true, "resourcesPreset": ""}}),
    Ok(&[("cpu", "7"), ("memory", "7Gi"), ("storage", "30Gi")][..])
)]
#[case::opensearch_yaml_35_dashboards_disabled_charge_nothing(
    json!({"dashboards": {"enabled": false, "replicas": 3, "resourcesPreset": "u1.large"}}),
    Ok(&[("cpu", "6"), ("memory", "6Gi"), ("storage", "30Gi")][..])
)]
#[case::opensearch_yaml_60_explicit_zero_cpu_refused(json!({"resources": {"cpu": 0}}), Err(zero!("spec.resources.cpu", "cpu")))]
#[case::opensearch_yaml_43_dashboards_zero_memory_refused(
    json!({"dashboards": {"enabled": true, "resources": {"memory": "0"}}}),
    Err(zero!("spec.dashboards.resources.memory", "memory"))
)]
#[case::opensearch_yaml_60_gpu_device_per_node(
    json!({"resources": {A10: 1}}),
    Ok(&[("cpu", "6"), ("memory", "6Gi"), ("storage", "30Gi"), (GPUS, "3"), (A10S, "3")][..])
)]
fn opensearch(#[case] spec: Value, #[case] want: Want) {
    check("OpenSearch", spec, want);
}
