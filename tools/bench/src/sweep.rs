//! The reflector sweep: one write in every tenant's namespace on one fresh host, to count the
//! reflectors a policy-server replica ends up holding.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tenant_reservation_policy::validate_payload;

use crate::cluster::{self, Cluster, Defaults, Variant};
use crate::host::{ApiServer, Frozen, HostModel, Reflectors};

/// What one sweep found: the reflectors of one replica after a write in every namespace.
pub struct Sweep {
    pub cluster: usize,
    pub tenants: usize,
    pub bounded: usize,
    pub levels: [usize; 3],
    /// Namespaces in some pool (those a write there lists).
    pub pooled_namespaces: usize,
    pub reflectors: Reflectors,
    pub took: Duration,
}

/// One write in every tenant's namespace (a small VM, CREATE), natively, on one fresh host:
/// the reflectors a replica holds once every tenant has been written to.
pub fn sweep(c: &Cluster, api: &Arc<ApiServer>, defaults: &Defaults) -> Sweep {
    let start = Instant::now();
    let k8s = Frozen::new(HostModel::new(api.clone()));
    let settings = test_kit::deploy_settings_unchecked();
    let mut values = defaults.vm_values(0, Variant::Same);
    values["instanceType"] = json!("u1.small");
    for t in &c.tenants {
        let payload = test_kit::payload(
            "CREATE",
            cluster::SUBJECT_KIND,
            &t.owns,
            "sweep",
            values.clone(),
            None,
            settings.clone(),
        );
        black_box(validate_payload(&payload, &k8s));
    }
    // Namespaces some bounded tenant at or above covers.
    let by_owned: BTreeMap<&str, &cluster::TenantSpec> =
        c.tenants.iter().map(|t| (t.owns.as_str(), t)).collect();
    let pooled = c
        .tenants
        .iter()
        .filter(|t| {
            let mut cur = *t;
            loop {
                if cur.bounded {
                    return true;
                }
                if cur.owns == cur.namespace {
                    return false;
                }
                cur = by_owned[cur.namespace.as_str()];
            }
        })
        .count();
    Sweep {
        cluster: c.shape.cluster,
        tenants: c.tenant_count(),
        bounded: c.bounded_count(),
        levels: c.levels(),
        pooled_namespaces: pooled,
        reflectors: k8s.reflectors(),
        took: start.elapsed(),
    }
}
