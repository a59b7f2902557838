//! The applications' values: the chart defaults the Cozystack API stores
//! (test_data/reference/values), varied per application ([`Variant`]), and the metadata and
//! chart spec a stored HelmRelease carries.

use serde::Deserialize;
use serde_json::{Value, json};

use super::Variant;

const VM_DEFAULTS: &str =
    include_str!("../../../../test_data/reference/values/vm-instance.values.yaml");
const DISK_DEFAULTS: &str =
    include_str!("../../../../test_data/reference/values/vm-disk.values.yaml");
const POSTGRES_DEFAULTS: &str =
    include_str!("../../../../test_data/reference/values/postgres.values.yaml");
const REDIS_DEFAULTS: &str =
    include_str!("../../../../test_data/reference/values/redis.values.yaml");
const KUBERNETES_DEFAULTS: &str =
    include_str!("../../../../test_data/reference/values/kubernetes.values.yaml");
const TENANT_DEFAULTS: &str =
    include_str!("../../../../test_data/reference/values/tenant.values.yaml");

fn yaml(text: &str) -> Value {
    let v = serde_yaml::Value::deserialize(serde_yaml::Deserializer::from_str(text))
        .expect("chart values parse");
    serde_json::to_value(v).expect("chart values are JSON")
}

/// `base` with `overrides` merged in, object by object.
pub(super) fn merged(base: &Value, overrides: Value) -> Value {
    let mut out = base.clone();
    merge(&mut out, overrides);
    out
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Vm,
    Disk,
    Postgres,
    Redis,
    Kubernetes,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Vm => "VMInstance",
            Kind::Disk => "VMDisk",
            Kind::Postgres => "Postgres",
            Kind::Redis => "Redis",
            Kind::Kubernetes => "Kubernetes",
        }
    }

    /// The application's name: short, unique in the cluster.
    pub(super) fn app_name(self, n: usize) -> String {
        match self {
            Kind::Vm => format!("vm{n}"),
            Kind::Disk => format!("disk{n}"),
            Kind::Postgres => format!("pg{n}"),
            Kind::Redis => format!("redis{n}"),
            Kind::Kubernetes => format!("k8s{n}"),
        }
    }
}

/// The kinds of every 20 applications of a tenant: 8 VMInstance, 4 VMDisk, 4 Postgres,
/// 2 Redis, 2 Kubernetes.
pub(super) const PATTERN: [Kind; 20] = {
    use Kind::*;
    [
        Vm, Disk, Postgres, Vm, Redis, Disk, Vm, Kubernetes, Postgres, Vm, Disk, Vm, Postgres,
        Redis, Vm, Disk, Vm, Postgres, Kubernetes, Vm,
    ]
};

const SSH_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq0dGVuYW50LXJlc2VydmF0aW9uLXBvbGljeS1iZW5jaA operator@workstation";
const CLOUD_INIT: &str = "#cloud-config\npackages:\n  - qemu-guest-agent\nruncmd:\n  - systemctl enable --now qemu-guest-agent\n";

/// The chart defaults, parsed once.
pub struct Defaults {
    vm: Value,
    disk: Value,
    postgres: Value,
    redis: Value,
    kubernetes: Value,
    pub(super) tenant: Value,
}

impl Defaults {
    pub fn load() -> Defaults {
        Defaults {
            vm: yaml(VM_DEFAULTS),
            disk: yaml(DISK_DEFAULTS),
            postgres: yaml(POSTGRES_DEFAULTS),
            redis: yaml(REDIS_DEFAULTS),
            kubernetes: yaml(KUBERNETES_DEFAULTS),
            tenant: yaml(TENANT_DEFAULTS),
        }
    }

    /// The values of the `n`th application of `kind`.
    pub(super) fn values(&self, kind: Kind, n: usize, variant: Variant) -> Value {
        match kind {
            Kind::Vm => self.vm_values(n, variant),
            Kind::Disk => self.disk_values(n, variant),
            Kind::Postgres => self.postgres_values(n, variant),
            Kind::Redis => self.redis_values(n, variant),
            Kind::Kubernetes => self.kubernetes_values(n, variant),
        }
    }

    /// VM `n`; vm0 (the UPDATE subject) is a u1.medium in both variants.
    pub fn vm_values(&self, n: usize, variant: Variant) -> Value {
        const TYPES: [&str; 7] = [
            "u1.medium",
            "u1.large",
            "u1.xlarge",
            "cx1.large",
            "m1.large",
            "u1.small",
            "",
        ];
        let instance_type = match variant {
            Variant::Same => TYPES[(n / 2) % TYPES.len()],
            // Sized by its values, its memory its own; vm0 alone by a type.
            Variant::Distinct if n == 0 => "u1.medium",
            Variant::Distinct => "",
        };
        let mut o = json!({
            "instanceType": instance_type,
            "systemDisk": {"image": "ubuntu", "storage": "20Gi"},
            "subnets": [{"name": "default"}],
            "sshKeys": [SSH_KEY],
            "cloudInit": CLOUD_INIT,
        });
        if instance_type.is_empty() {
            let memory = match variant {
                Variant::Same => format!("{}Gi", 2 + 2 * (n % 4)),
                Variant::Distinct => format!("{}Mi", 2048 + n),
            };
            o["resources"] = json!({"cpu": format!("{}", 1 + n % 4), "memory": memory});
        }
        if variant == Variant::Same && n % 40 == 38 {
            o["instanceType"] = json!("gn1.xlarge");
            o["gpus"] = json!([{"name": "nvidia.com/AD102GL_L40S"}]);
        }
        merged(&self.vm, o)
    }

    fn disk_values(&self, n: usize, variant: Variant) -> Value {
        const SIZES: [&str; 4] = ["10Gi", "20Gi", "50Gi", "100Gi"];
        let storage = match variant {
            Variant::Same => SIZES[n % SIZES.len()].to_string(),
            Variant::Distinct => format!("{}Mi", 10240 + n),
        };
        merged(
            &self.disk,
            json!({"source": {"image": {"name": "ubuntu"}}, "storage": storage,
                   "storageClass": "replicated"}),
        )
    }

    fn postgres_values(&self, n: usize, variant: Variant) -> Value {
        const PRESETS: [&str; 5] = ["t1.micro", "c1.small", "u1.medium", "s1.large", "c1.medium"];
        const SIZES: [&str; 4] = ["10Gi", "20Gi", "50Gi", "100Gi"];
        let size = match variant {
            Variant::Same => SIZES[n % SIZES.len()].to_string(),
            Variant::Distinct => format!("{}Mi", 10240 + n),
        };
        let mut o = json!({
            "replicas": 1 + n % 3,
            "resourcesPreset": PRESETS[n % PRESETS.len()],
            "size": size,
            "users": {"app": {"password": format!("pw-{n:08x}")}, "readonly": {}},
            "databases": {"app": {"roles": {"admin": ["app"], "readonly": ["readonly"]}, "extensions": ["pg_trgm"]}},
            "backup": {"enabled": n.is_multiple_of(2), "schedule": "0 2 * * *", "destinationPath": format!("s3://backups/pg-{n}/")},
        });
        if n % 9 == 4 {
            o["resources"] = json!({"cpu": "2", "memory": "4Gi"});
        }
        merged(&self.postgres, o)
    }

    fn redis_values(&self, n: usize, variant: Variant) -> Value {
        let size = match variant {
            Variant::Same => ["1Gi", "2Gi", "5Gi"][n % 3].to_string(),
            Variant::Distinct => format!("{}Mi", 1024 + n),
        };
        let preset = ["t1.nano", "t1.small"][n % 2];
        merged(
            &self.redis,
            json!({"replicas": 2 + n % 2, "resourcesPreset": preset, "size": size}),
        )
    }

    fn kubernetes_values(&self, n: usize, variant: Variant) -> Value {
        let groups = match (variant, n % 3) {
            // The chart's implicit md0 (whenEmpty).
            (Variant::Same, 0) => json!({}),
            (Variant::Same, 1) => {
                json!({"md0": {"minReplicas": 1, "maxReplicas": 3 + n % 5, "instanceType": "u1.large",
                               "diskSize": "50Gi", "roles": ["ingress-nginx"]}})
            }
            (Variant::Same, _) => json!({
                "md0": {"minReplicas": 1, "maxReplicas": 4, "instanceType": "u1.xlarge", "diskSize": "40Gi", "roles": ["ingress-nginx"]},
                "md1": {"minReplicas": 0, "maxReplicas": 2, "instanceType": "", "diskSize": "100Gi",
                        "resources": {"cpu": "4", "memory": "8Gi"}, "roles": []},
            }),
            (Variant::Distinct, _) => {
                json!({"md0": {"minReplicas": 1, "maxReplicas": 3 + n % 5, "instanceType": "u1.large",
                               "diskSize": format!("{}Mi", 20480 + n), "roles": ["ingress-nginx"]}})
            }
        };
        merged(
            &self.kubernetes,
            json!({
                "nodeGroups": groups,
                "host": format!("k8s-{n}.example.org"),
                "addons": {"certManager": {"enabled": true}, "ingressNginx": {"enabled": n % 2 == 1}},
            }),
        )
    }
}

/// A stored HelmRelease as the API server holds it: with the metadata the API server and
/// Flux set, and the chart spec and status a release carries (what the host's field masks
/// prune, and what the API server still sends).
pub(super) fn served(mut release: Value, i: usize) -> Value {
    let metadata = release["metadata"].as_object_mut().expect("metadata");
    metadata.insert(
        "uid".into(),
        json!(format!("3f0c{:04x}-8d1e-4c5b-9a7e-2b6d{i:08x}", i & 0xffff)),
    );
    metadata.insert(
        "resourceVersion".into(),
        json!(format!("{}", 1_048_576 + i * 7)),
    );
    metadata.insert("generation".into(), json!(1 + i % 4));
    metadata.insert("creationTimestamp".into(), json!("2026-11-30T09:41:27Z"));
    metadata.insert("finalizers".into(), json!(["finalizers.fluxcd.io"]));
    metadata.insert("annotations".into(), json!({}));
    metadata.insert("managedFields".into(), json!([]));
    release["spec"]["interval"] = json!("5m");
    release["spec"]["chart"]["spec"]["version"] = json!(">= 0.0.0-0");
    release["spec"]["chart"]["spec"]["sourceRef"] =
        json!({"kind": "HelmRepository", "name": "cozystack-apps", "namespace": "cozy-public"});
    release["spec"]["install"] = json!({"remediation": {"retries": -1}});
    release["spec"]["upgrade"] = json!({"remediation": {"retries": -1}});
    release
}
