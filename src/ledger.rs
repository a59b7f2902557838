//! The pool ledger: every pool of the cluster and key, with its budget, what its sub-tenants
//! carve out, what its applications reserve, what is left, and its largest holders.
//!
//! The same evaluation as an admission ([`Context`]: definitions, charges, pools), over the
//! whole cluster read at once. A write of an application fits exactly when, for every key it
//! grows, its growth is at most that key's [`PoolLine::available`] (`tests/ledger.rs` holds
//! the policy to it).

use kubewarden_policy_sdk::settings::Validatable;
use serde_json::{Value, json};

use crate::cluster::Kubernetes;
use crate::context::{Context, ContextError};
use crate::decision::Usage;
use crate::keys::show;
use crate::pool::Pool;
use crate::quantity::Quantity;
use crate::settings::Settings;

/// Every pool and key of a cluster, in the order of their names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    pub pools: Vec<PoolLine>,
    /// Problems with objects that no pool line carries: Tenant releases the chart cannot
    /// render, tenants whose quota cannot be read.
    pub warnings: Vec<String>,
}

/// One key of one pool, in exact quantities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolLine {
    /// The pool's name: the namespace its root tenant owns.
    pub pool: String,
    pub key: String,
    pub budget: Quantity,
    /// What the bounded sub-tenants carved out of the pool declare for the key.
    pub carved: Quantity,
    pub carved_by: usize,
    /// What the pool's applications reserve of the key.
    pub reserved: Quantity,
    pub reserved_by: usize,
    /// `budget - carved - reserved`, or zero when that is negative: the most an application
    /// write may grow the key by.
    pub available: Quantity,
    /// By how much `carved + reserved` exceeds the budget (`None`: it does not).
    pub over_budget: Option<Quantity>,
    /// The sub-tenants alone declare more than the budget.
    pub overcommitted: bool,
    /// The largest holders, largest first: (application, its charge of the key).
    pub largest: Vec<(String, Quantity)>,
    /// The pool's objects that cannot be evaluated (counted as zero), by label and reason.
    pub unevaluable: Vec<String>,
    /// The namespaces whose applications the pool holds.
    pub namespaces: Vec<String>,
}

/// Why a ledger cannot be drawn.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("invalid settings: {0}")]
    Settings(String),
    #[error("{0}")]
    Cluster(#[from] ContextError),
    #[error("the reservations of pool {pool} overflow on {key}")]
    Overflow { pool: String, key: String },
}

/// The ledger of the cluster `k8s` answers for, under `settings`, naming up to `holders`
/// largest holders per pool and key.
pub fn ledger(
    settings: &Settings,
    k8s: &dyn Kubernetes,
    holders: usize,
) -> Result<Ledger, LedgerError> {
    settings.validate().map_err(LedgerError::Settings)?;
    let context = Context::new(settings, k8s).map_err(LedgerError::Settings)?;
    let tenancy = context.read_whole_cluster()?;
    let mut warnings = context.unplaced();
    let mut pools = Vec::new();
    for root in tenancy.iter() {
        match &root.quota {
            Ok(budget) => {
                for (key, _) in budget.iter() {
                    pools.push(tenancy.pool_rooted_at(root, key));
                }
            }
            Err(e) if root.bounded => {
                warnings.push(format!("pool {} has no ledger: {e}", root.owns))
            }
            Err(_) => {}
        }
    }
    pools.sort_by(|a, b| (a.name(), &a.key).cmp(&(b.name(), &b.key)));
    let mut lines = Vec::with_capacity(pools.len());
    for pool in &pools {
        lines.push(line(&context, pool, holders)?);
    }
    Ok(Ledger {
        pools: lines,
        warnings,
    })
}

fn line(context: &Context<'_>, pool: &Pool<'_>, holders: usize) -> Result<PoolLine, LedgerError> {
    let overflow = || LedgerError::Overflow {
        pool: pool.name().to_string(),
        key: pool.key.clone(),
    };
    let (usage, problems) = context.usage_keeping(
        std::slice::from_ref(pool),
        |_| false,
        Usage::keeping(holders),
    )?;
    let mut unevaluable = problems.applications;
    unevaluable.extend(problems.modules);
    let carved = pool
        .carved(None, &mut unevaluable)
        .map_err(|_| overflow())?;
    let budget = pool.budget().unwrap_or(Quantity::ZERO);
    let (reserved, reserved_by) = usage.of(&pool.key);
    let left = budget
        .checked_sub(carved.total)
        .and_then(|l| l.checked_sub(reserved))
        .ok_or_else(overflow)?;
    let over_budget = (left.nanos() < 0)
        .then(|| left.nanos().checked_neg().map(Quantity::from_nanos))
        .map(|over| over.ok_or_else(overflow))
        .transpose()?;
    Ok(PoolLine {
        pool: pool.name().to_string(),
        key: pool.key.clone(),
        budget,
        carved: carved.total,
        carved_by: carved.by,
        reserved,
        reserved_by,
        available: if left.nanos() < 0 {
            Quantity::ZERO
        } else {
            left
        },
        over_budget,
        overcommitted: carved.total > budget,
        largest: usage
            .largest(&pool.key)
            .iter()
            .map(|(q, label)| (label.clone(), *q))
            .collect(),
        unevaluable,
        namespaces: pool.members.iter().map(|m| m.to_string()).collect(),
    })
}

impl PoolLine {
    /// A quantity of this line's key as the policy prints it (`16Gi`, `1500m`).
    pub fn show(&self, q: Quantity) -> String {
        show(&self.key, q)
    }

    /// The line for scripts: every quantity as the policy prints it.
    pub fn to_json(&self) -> Value {
        json!({
            "pool": self.pool,
            "key": self.key,
            "budget": self.show(self.budget),
            "carved": self.show(self.carved),
            "carvedBy": self.carved_by,
            "reserved": self.show(self.reserved),
            "reservedBy": self.reserved_by,
            "available": self.show(self.available),
            "overBudget": self.over_budget.map(|q| self.show(q)),
            "overcommitted": self.overcommitted,
            "largest": self.largest.iter().map(|(application, charge)| json!({
                "application": application,
                "charge": self.show(*charge),
            })).collect::<Vec<_>>(),
            "unevaluable": self.unevaluable,
            "namespaces": self.namespaces,
        })
    }
}

impl Ledger {
    /// The ledger for scripts (`--output json`).
    pub fn to_json(&self) -> Value {
        json!({
            "pools": self.pools.iter().map(PoolLine::to_json).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
    }
}
