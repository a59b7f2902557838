//! The vocabulary the policy shares with Cozystack: the API group and kinds it checks, the
//! labels of the HelmReleases that store applications, and the quota keys a reservation
//! produces, with how each key's quantities are printed.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::quantity::{Notation, Quantity};

/// The API group of every Cozystack application.
pub const GROUP: &str = "apps.cozystack.io";
/// The API version the Cozystack API server serves the applications at.
pub const APPLICATIONS_API: &str = "apps.cozystack.io/v1alpha1";
/// The kind whose writes the declaration gate checks, and whose values hold a quota.
pub const TENANT_KIND: &str = "Tenant";
/// The field of a Tenant's values that declares its quota.
pub const RESOURCE_QUOTAS: &str = "resourceQuotas";

/// Labels the Cozystack API server sets on the HelmRelease that stores an application.
pub const KIND_LABEL: &str = "apps.cozystack.io/application.kind";
pub const GROUP_LABEL: &str = "apps.cozystack.io/application.group";
pub const NAME_LABEL: &str = "apps.cozystack.io/application.name";
/// Set by the tenant chart on the module releases it creates (Info, Etcd, Ingress, ...).
pub const TENANT_MODULE_LABEL: &str = "internal.cozystack.io/tenantmodule";

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const STORAGE: &str = "storage";
/// Devices over every GPU class.
pub const GPU_ALL_CLASSES: &str = "gpuclass.cozystack.io/devices";
/// Suffix of the per-class device key `<class>.gpuclass.cozystack.io/devices`.
pub const GPU_CLASS_SUFFIX: &str = ".gpuclass.cozystack.io/devices";
/// The GPU budget domain: any key under it that is not one of the two forms above is refused.
pub const GPU_DOMAIN: &str = "gpuclass.cozystack.io/";

/// Keys a reservation produces directly, which a quota key alias may point at.
pub const ALIAS_TARGETS: [&str; 3] = [CPU, MEMORY, STORAGE];

pub fn gpu_class_key(class: &str) -> String {
    format!("{class}{GPU_CLASS_SUFFIX}")
}

/// Whether `key` is in the GPU budget domain (`gpuclass.cozystack.io/*`, `*.gpuclass.cozystack.io/*`).
pub fn in_gpu_domain(key: &str) -> bool {
    key.starts_with(GPU_DOMAIN) || key.contains(&format!(".{GPU_DOMAIN}"))
}

/// Whether `key` is one of the two GPU budget key forms.
pub fn is_gpu_budget_key(key: &str) -> bool {
    key == GPU_ALL_CLASSES || key.strip_suffix(GPU_CLASS_SUFFIX).is_some_and(is_dns_label)
}

/// An RFC 1123 label: what a GPU class name must be.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// How a key's quantities read best: CPU and device counts in decimal, the rest in binary.
pub fn notation(key: &str) -> Notation {
    if key == CPU || key.ends_with("/devices") {
        Notation::Decimal
    } else {
        Notation::Binary
    }
}

/// `q` as a figure of `key`.
pub fn show(key: &str, q: Quantity) -> String {
    q.to_canonical(notation(key))
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Declared quota key -> the reservation key it bounds (`requests.cpu` -> `cpu`).
#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(transparent)]
pub struct KeyAliases(BTreeMap<String, String>);

impl Default for KeyAliases {
    fn default() -> Self {
        KeyAliases(
            [
                ("requests.cpu", CPU),
                ("limits.cpu", CPU),
                ("requests.memory", MEMORY),
                ("limits.memory", MEMORY),
                ("requests.storage", STORAGE),
            ]
            .into_iter()
            .map(|(from, to)| (from.to_string(), to.to_string()))
            .collect(),
        )
    }
}

impl KeyAliases {
    /// The reservation key a declared quota key bounds.
    pub fn canonical<'a>(&'a self, declared: &'a str) -> &'a str {
        self.0.get(declared).map(String::as_str).unwrap_or(declared)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(from, to)| (from.as_str(), to.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn recognises_the_gpu_budget_key_forms() {
        assert!(is_gpu_budget_key("gpuclass.cozystack.io/devices"));
        assert!(is_gpu_budget_key("a10.gpuclass.cozystack.io/devices"));
        assert!(!is_gpu_budget_key("a10.gpuclass.cozystack.io/memory"));
        assert!(!is_gpu_budget_key("gpuclass.cozystack.io/count"));
        assert!(!is_gpu_budget_key("A10.gpuclass.cozystack.io/devices"));
        assert!(in_gpu_domain("gpuclass.cozystack.io/count"));
        assert!(in_gpu_domain("x.gpuclass.cozystack.io/devices"));
        assert!(!in_gpu_domain("requests.nvidia.com/gpu"));
        assert!(!in_gpu_domain("cpu"));
    }

    #[test]
    fn keys_print_in_their_notation() {
        assert_eq!(show(CPU, q("2048")), "2048");
        assert_eq!(show(MEMORY, q("2048")), "2Ki");
        assert_eq!(show(&gpu_class_key("a10"), q("4")), "4");
    }

    #[test]
    fn aliases_map_declared_keys_to_reservation_keys() {
        let aliases = KeyAliases::default();
        assert_eq!(aliases.canonical("requests.cpu"), "cpu");
        assert_eq!(aliases.canonical("limits.memory"), "memory");
        assert_eq!(aliases.canonical("requests.storage"), "storage");
        assert_eq!(
            aliases.canonical("services.loadbalancers"),
            "services.loadbalancers"
        );
    }
}
