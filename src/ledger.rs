//! The pool ledger: every pool of the cluster and key, with its budget, what its sub-tenants
//! carve out, what its applications reserve, what is left, and its largest holders.
//!
//! The same evaluation as an admission ([`Context`]: definitions, charges, pools), over the
//! whole cluster read at once, and the same [`Standing`] a check reads. A write of an
//! application fits exactly when, for every key it grows, its growth is at most that key's
//! [`Standing::available`] (`tests/it/ledger.rs` holds the policy to it).

use kubewarden_policy_sdk::settings::Validatable;
use serde_json::{Value, json};

use crate::cluster::Kubernetes;
use crate::context::{Context, ContextError};
use crate::keys::show;
use crate::pool::{Pool, Standing, Usage};
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

/// One key of one pool: its standing, and what it holds that cannot be counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolLine {
    pub standing: Standing,
    /// `available` and `over_budget` of the standing, computed once for the table.
    pub available: Quantity,
    pub over_budget: Option<Quantity>,
    /// The pool's objects that cannot be evaluated (counted as zero), by label and reason.
    pub unevaluable: Vec<String>,
    /// The module releases the tenant chart will create that the pool holds (charged until
    /// they exist), by label.
    pub pending: Vec<String>,
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
    let budget = pool.budget().unwrap_or(Quantity::ZERO);
    let standing = pool
        .standing(budget, None, &usage, &mut unevaluable)
        .map_err(|_| overflow())?;
    Ok(PoolLine {
        available: standing.available().map_err(|_| overflow())?,
        over_budget: standing.over_budget().map_err(|_| overflow())?,
        pending: usage.pending.iter().cloned().collect(),
        standing,
        unevaluable,
        namespaces: pool.members.iter().map(|m| m.owns.clone()).collect(),
    })
}

impl PoolLine {
    /// A quantity of this line's key as the policy prints it (`16Gi`, `1500m`).
    pub fn show(&self, q: Quantity) -> String {
        show(&self.standing.key, q)
    }

    /// The line for scripts: every quantity as the policy prints it.
    pub fn to_json(&self) -> Value {
        let s = &self.standing;
        json!({
            "pool": s.pool,
            "key": s.key,
            "budget": self.show(s.budget),
            "carved": self.show(s.carved.total),
            "carvedBy": s.carved.by,
            "reserved": self.show(s.reserved),
            "reservedBy": s.holders,
            "available": self.show(self.available),
            "overBudget": self.over_budget.map(|q| self.show(q)),
            "overcommitted": s.overcommitted(),
            "largest": s.largest.iter().map(|(charge, application)| json!({
                "application": application,
                "charge": self.show(*charge),
            })).collect::<Vec<_>>(),
            "unevaluable": self.unevaluable,
            "pending": self.pending,
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
