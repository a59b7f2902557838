//! A pool summary: what the namespaces of a tenant's pools reserve, kept by a controller in a
//! `PoolReservation` so that a write need not list them (docs/pool-summary.md).
//!
//! A pool's usage is the sum of its member namespaces' shares ([`Usage::absorb`]), and its
//! members and carve-outs are found from the child tenants of each namespace. So a [`Digest`]
//! of each namespace (its child tenants, and per key what its holders reserve) can stand in
//! for its list, and the pool is computed from digests exactly as from lists.
//!
//! - here: the status as stored, and its reading back into the policy's own types;
//! - [`freshness`]: when a summary may stand in for the lists (the trust rule);
//! - [`fingerprint`]: the settings a summary was computed under;
//! - [`build`]: every summary of a cluster, computed with the policy's own code.

pub mod build;
pub mod fingerprint;
pub mod freshness;

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::keys::show;
use crate::pool::{Budget, Carved, Share, Tenancy, Tenant, Usage};
use crate::quantity::Quantity;

pub const GROUP: &str = "reservations.cozystack.io";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "PoolReservation";
/// The resource's plural, as the CRD names it.
pub const RESOURCE: &str = "poolreservations";

/// A `PoolReservation`: the summary of the pools rooted at one tenant, named after the
/// namespace that tenant owns and stored in it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PoolReservation {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    /// Absent until the controller first writes it.
    #[serde(default)]
    pub status: Option<SummaryStatus>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    pub name: String,
    pub namespace: String,
}

/// What the controller keeps: a digest of every namespace the root's pools reach, renewed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryStatus {
    /// When the controller last confirmed the status against its watches: the age the trust
    /// rule reads ([`freshness`]).
    pub renewed_at: Time,
    /// The settings (and policy version) it was computed under ([`fingerprint`]): a summary
    /// computed under other settings charges otherwise and is not read.
    pub settings: String,
    /// Each namespace the root's pools reach, by name.
    pub namespaces: BTreeMap<String, Digest>,
}

/// One namespace, reduced to what a pool needs of it: the tenants living in it and what its
/// applications and pending modules reserve.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Digest {
    /// Its child tenants, as the tenant chart places them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantDigest>,
    /// Per reservation key, what its holders reserve.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shares: BTreeMap<String, ShareDigest>,
    /// Its applications that cannot be evaluated, by label and reason (`siblingFailure`
    /// decides what they do to a write).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unevaluable: Vec<String>,
    /// Its tenant modules that cannot be evaluated: counted as zero, with a warning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unevaluable_modules: Vec<String>,
    /// Its Tenant releases that cannot be placed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced: Vec<String>,
}

/// A child tenant: the namespace it owns and what it declares.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantDigest {
    pub owns: String,
    /// Its declared budget by reservation key (aliases applied); absent when unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BTreeMap<String, String>>,
    /// Why its quota cannot be read: it then bounds every key, failing closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// A namespace's [`Share`] of one key, its quantities as Kubernetes prints them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShareDigest {
    pub reserved: String,
    pub holders: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub largest: Vec<HolderDigest>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub pending: BTreeSet<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HolderDigest {
    pub charge: String,
    pub application: String,
}

/// A summary whose content the policy cannot read: it is not trusted, and the walk reads the
/// pool instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SummaryError {
    #[error("{field}: {reason}")]
    Quantity { field: String, reason: String },
    #[error(
        "{field} does not add up: {reserved} reserved by {holders} holders, {named} of them named"
    )]
    Inconsistent {
        field: String,
        reserved: String,
        holders: usize,
        named: usize,
    },
    #[error("the reservations of {0} it holds overflow")]
    Overflow(String),
}

impl ShareDigest {
    /// `share` of `key`, printed.
    pub fn of(key: &str, share: &Share) -> Self {
        ShareDigest {
            reserved: show(key, share.reserved),
            holders: share.holders,
            largest: share
                .largest
                .iter()
                .map(|(charge, application)| HolderDigest {
                    charge: show(key, *charge),
                    application: application.clone(),
                })
                .collect(),
            pending: share.pending.clone(),
        }
    }

    /// The share it prints; `field` names it in an error.
    pub fn read(&self, field: &str) -> Result<Share, SummaryError> {
        let quantity = |at: String, text: &str| {
            Quantity::parse_non_negative(text).map_err(|e| SummaryError::Quantity {
                field: at,
                reason: e.to_string(),
            })
        };
        let reserved = quantity(format!("{field}.reserved"), &self.reserved)?;
        // A share held by nobody reserves nothing, and one that reserves something is held.
        if (self.holders == 0) != reserved.is_zero() || self.largest.len() > self.holders {
            return Err(SummaryError::Inconsistent {
                field: field.to_string(),
                reserved: self.reserved.clone(),
                holders: self.holders,
                named: self.largest.len(),
            });
        }
        let mut largest = Vec::with_capacity(self.largest.len());
        for (i, holder) in self.largest.iter().enumerate() {
            let charge = quantity(format!("{field}.largest[{i}].charge"), &holder.charge)?;
            largest.push((charge, holder.application.clone()));
        }
        Ok(Share {
            reserved,
            holders: self.holders,
            largest,
            pending: self.pending.clone(),
        })
    }
}

impl TenantDigest {
    /// The budget it records, or why the tenant's quota cannot be read; `field` names it.
    pub fn read_budget(&self, field: &str) -> Result<Result<Budget, String>, SummaryError> {
        if let Some(reason) = &self.unreadable {
            return Ok(Err(reason.clone()));
        }
        let mut budget = Vec::new();
        for (key, text) in self.budget.iter().flatten() {
            let q = Quantity::parse_non_negative(text).map_err(|e| SummaryError::Quantity {
                field: format!("{field}.budget.{key}"),
                reason: e.to_string(),
            })?;
            budget.push((key.clone(), q));
        }
        Ok(Ok(budget.into_iter().collect()))
    }
}

/// A pool as a summary holds it: what a write reads instead of listing its namespaces.
#[derive(Debug)]
pub struct SummedPool {
    /// Its member namespaces, from the root down.
    pub members: Vec<String>,
    /// What its carve-outs declare of the key.
    pub carved: Carved,
    /// What its members' holders reserve (but those of the namespace listed fresh).
    pub usage: Usage,
    /// Per member namespace summed (in name order, as the walk reports them), what cannot
    /// be evaluated.
    pub problems: BTreeMap<String, Problems>,
    /// Why the quota of a carve-out cannot be read (it is not counted).
    pub unreadable: Vec<String>,
    /// The Tenant releases of the namespaces summed that cannot be placed.
    pub unplaced: Vec<String>,
    /// Member namespaces the summary does not hold (a tenant newer than it): to be listed.
    pub unheld: Vec<String>,
}

/// One namespace's objects that cannot be evaluated, by label and reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems {
    /// Applications (`siblingFailure` decides).
    pub applications: Vec<String>,
    /// Tenant modules: counted as zero, with a warning.
    pub modules: Vec<String>,
}

/// A namespace listed fresh by the write, and the child tenants its list shows.
pub(crate) struct Fresh<'a> {
    pub namespace: &'a str,
    pub tenants: &'a [Tenant],
}

impl SummaryStatus {
    /// The pool of `key` rooted at the tenant owning `root`, as the summary holds it.
    pub fn sum_pool(&self, root: &str, key: &str) -> Result<SummedPool, SummaryError> {
        self.sum(root, key, None)
    }

    /// [`SummaryStatus::sum_pool`], with `fresh`'s child tenants from its list instead of its
    /// digest and its holders left out: the write adds them from its own list.
    pub(crate) fn sum(
        &self,
        root: &str,
        key: &str,
        fresh: Option<Fresh<'_>>,
    ) -> Result<SummedPool, SummaryError> {
        // The walk needs only the root's namespace: the root itself is the write's to read.
        let root_tenant = Tenant {
            namespace: root.to_string(),
            owns: root.to_string(),
            quota: Ok(Budget::default()),
            bounded: false,
            values: Rc::new(Value::Null),
        };
        let mut tenancy = Tenancy::new(vec![root_tenant.clone()]);
        for (namespace, digest) in &self.namespaces {
            if fresh.as_ref().is_some_and(|f| f.namespace == namespace) {
                continue;
            }
            for (i, t) in digest.tenants.iter().enumerate() {
                let quota = t.read_budget(&format!("namespaces.{namespace}.tenants[{i}]"))?;
                tenancy.insert(Tenant {
                    namespace: namespace.clone(),
                    owns: t.owns.clone(),
                    bounded: quota.as_ref().is_ok_and(|b| !b.is_empty()) || quota.is_err(),
                    quota,
                    values: Rc::new(Value::Null),
                });
            }
        }
        for t in fresh.iter().flat_map(|f| f.tenants) {
            tenancy.insert(t.clone());
        }
        let pool = tenancy.pool_rooted_at(&root_tenant, key);
        let mut unreadable = Vec::new();
        let carved = pool
            .carved(None, &mut unreadable)
            .map_err(|_| SummaryError::Overflow(key.to_string()))?;
        let mut summed = SummedPool {
            members: pool.members.iter().map(|m| m.owns.clone()).collect(),
            carved,
            usage: Usage::default(),
            problems: BTreeMap::new(),
            unreadable,
            unplaced: Vec::new(),
            unheld: Vec::new(),
        };
        for member in &pool.members {
            let namespace = member.owns.as_str();
            if fresh.as_ref().is_some_and(|f| f.namespace == namespace) {
                continue;
            }
            let Some(digest) = self.namespaces.get(namespace) else {
                summed.unheld.push(namespace.to_string());
                continue;
            };
            if let Some(share) = digest.shares.get(key) {
                let share = share.read(&format!("namespaces.{namespace}.shares.{key}"))?;
                summed
                    .usage
                    .absorb(key, &share)
                    .map_err(|_| SummaryError::Overflow(key.to_string()))?;
            }
            if !digest.unevaluable.is_empty() || !digest.unevaluable_modules.is_empty() {
                summed.problems.insert(
                    namespace.to_string(),
                    Problems {
                        applications: digest.unevaluable.clone(),
                        modules: digest.unevaluable_modules.clone(),
                    },
                );
            }
            summed.unplaced.extend(digest.unplaced.iter().cloned());
        }
        Ok(summed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn share(reserved: &str, holders: usize, largest: &[(&str, &str)]) -> ShareDigest {
        ShareDigest {
            reserved: reserved.into(),
            holders,
            largest: largest
                .iter()
                .map(|(charge, application)| HolderDigest {
                    charge: (*charge).into(),
                    application: (*application).into(),
                })
                .collect(),
            pending: BTreeSet::new(),
        }
    }

    #[test]
    fn a_share_reads_back_exactly() {
        let written = Share {
            reserved: Quantity::parse("8589934593500m").unwrap(),
            holders: 2,
            largest: vec![(
                Quantity::parse("8Gi").unwrap(),
                "VirtualMachine a/vm".into(),
            )],
            pending: BTreeSet::from(["Etcd tenant-a/etcd".to_string()]),
        };
        let digest = ShareDigest::of("memory", &written);
        assert_eq!(digest.largest[0].charge, "8Gi");
        assert_eq!(digest.read("shares.memory"), Ok(written));
    }

    #[rstest]
    #[case::not_a_quantity(share("lots", 1, &[]), "shares.cpu.reserved: \"lots\" is not a valid quantity")]
    #[case::negative(share("-1", 1, &[]), "shares.cpu.reserved: \"-1\" is negative")]
    #[case::held_by_nobody(share("1", 0, &[]), "shares.cpu does not add up: 1 reserved by 0 holders, 0 of them named")]
    #[case::held_for_nothing(share("0", 2, &[]), "shares.cpu does not add up: 0 reserved by 2 holders, 0 of them named")]
    #[case::more_largest_than_holders(share("2", 1, &[("1", "a"), ("1", "b")]), "shares.cpu does not add up: 2 reserved by 1 holders, 2 of them named")]
    #[case::bad_largest(share("2", 1, &[("2x", "a")]), "shares.cpu.largest[0].charge: \"2x\" is not a valid quantity")]
    fn a_share_that_cannot_be_read_is_named(#[case] digest: ShareDigest, #[case] error: &str) {
        assert_eq!(digest.read("shares.cpu").unwrap_err().to_string(), error);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let status = serde_json::json!({
            "renewedAt": "2026-12-07T21:00:00Z",
            "settings": "x",
            "namespaces": {"tenant-a": {"shares": {}, "extra": 1}},
        });
        let e = serde_json::from_value::<SummaryStatus>(status).unwrap_err();
        assert!(e.to_string().contains("unknown field `extra`"), "{e}");
    }
}
