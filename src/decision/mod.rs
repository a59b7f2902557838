//! Does a write fit? The verdict of each check and its message, as pure functions over a
//! pool's [`Standing`] (where `budget - carved out - reserved` is computed, once):
//!
//! - **An application write**, for each key it grows, in that key's pool:
//!   `limit = budget - carved out`, refused when `reserved + new > limit`. An UPDATE checks
//!   only the keys that grow (`new - old > 0`), so shrinking and unchanged keys pass even in
//!   a pool that is already over budget.
//! - **A Tenant declaration**, for each key of a pool above it: the pool's load
//!   (`carved out + reserved`) may not grow past the budget; and a declaration that is lowered
//!   or new must cover what the child's subtree already holds.
//!
//! - [`application`]: the application gate's check;
//! - [`tenant`]: the Tenant declaration gate's checks;
//! - [`figures`]: the standing of a pool that every refusal shows;
//! - here: what a write grows, and the record of one check for the decision log.

mod application;
mod figures;
mod tenant;

use crate::pool::Standing;
use crate::quantity::Quantity;
use crate::resources::Resources;

pub use application::application_violation;
pub use tenant::{Declaration, Holding, declaration_violation, handback_violation};

/// The keys on which `new` grows over `old` (every key of `new` on CREATE), with the growth.
pub fn growth(new: &Resources, old: Option<&Resources>) -> Vec<(String, Quantity)> {
    new.iter()
        .filter_map(|(key, q)| {
            let before = old.map_or(Quantity::ZERO, |o| o.get(key));
            let delta = q.checked_sub(before)?;
            delta.is_positive().then(|| (key.to_string(), delta))
        })
        .collect()
}

/// One check of one key of one pool, as the decision log records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub pool: String,
    pub key: String,
    pub budget: Quantity,
    pub carved: Quantity,
    /// What the pool's applications reserve besides the write (for a Tenant write, the pool
    /// after it without the child; for the child's own pool, what its applications reserve).
    pub reserved: Quantity,
    /// How much the write adds to the pool.
    pub growth: Quantity,
    pub fits: bool,
}

impl Record {
    pub fn of(standing: &Standing, growth: Quantity, fits: bool) -> Record {
        Record {
            pool: standing.pool.clone(),
            key: standing.key.clone(),
            budget: standing.budget,
            carved: standing.carved.total,
            reserved: standing.reserved,
            growth,
            fits,
        }
    }
}

/// What the tests of every check build their standings from.
#[cfg(test)]
mod fixtures {
    use crate::pool::{Carved, Standing};
    use crate::quantity::Quantity;

    pub fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    pub fn standing(pool: &str, key: &str, budget: &str, reserved: (&str, usize)) -> Standing {
        Standing {
            pool: pool.into(),
            key: key.into(),
            budget: q(budget),
            carved: Carved::default(),
            reserved: q(reserved.0),
            holders: reserved.1,
            largest: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::q;
    use super::*;

    #[test]
    fn growth_is_what_grows() {
        let r = |pairs: &[(&str, &str)]| -> Resources {
            pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
        };
        let old = r(&[("memory", "4Gi"), ("cpu", "2")]);
        assert_eq!(
            growth(&r(&[("memory", "2Gi"), ("cpu", "1")]), Some(&old)),
            []
        );
        assert_eq!(growth(&old, Some(&old)), []);
        assert_eq!(
            growth(&r(&[("memory", "2Gi"), ("cpu", "3")]), Some(&old)),
            [("cpu".to_string(), q("1"))]
        );
        assert_eq!(growth(&old, None).len(), 2);
    }
}
