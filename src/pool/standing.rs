//! One key of one pool, computed once: its budget, what its sub-tenants carve out, what its
//! applications reserve and who holds most, and from those what is left. The gates' checks,
//! their messages and the ledger read it; `budget - carved out - reserved` is written here
//! alone.

use super::{Carved, Pool, Usage};
use crate::quantity::Quantity;
use crate::resources::Overflow;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    /// The pool's name: the namespace its root tenant owns.
    pub pool: String,
    pub key: String,
    pub budget: Quantity,
    /// What the bounded sub-tenants carved out of the pool declare for the key, and how many.
    pub carved: Carved,
    /// What the pool's applications reserve of the key (those a check leaves out excepted).
    pub reserved: Quantity,
    /// How many applications hold some of it.
    pub holders: usize,
    /// The largest holders, largest first: (their charge of the key, their label).
    pub largest: Vec<(Quantity, String)>,
}

impl Pool<'_> {
    /// The pool's standing on its key with `budget`: its carve-outs except the one owning
    /// `except` (those whose quota is unreadable go to `unreadable`, not counted), and what
    /// `usage` sums of its applications.
    pub fn standing(
        &self,
        budget: Quantity,
        except: Option<&str>,
        usage: &Usage,
        unreadable: &mut Vec<String>,
    ) -> Result<Standing, Overflow> {
        let (reserved, holders) = usage.of(&self.key);
        Ok(Standing {
            pool: self.name().to_string(),
            key: self.key.clone(),
            budget,
            carved: self.carved(except, unreadable)?,
            reserved,
            holders,
            largest: usage.largest(&self.key).to_vec(),
        })
    }
}

impl Standing {
    /// What the pool holds: `carved out + reserved`.
    pub fn load(&self) -> Result<Quantity, Overflow> {
        self.carved.total.checked_add(self.reserved).ok_or(Overflow)
    }

    /// `budget - carved out - reserved`: negative when the pool is over budget. Subtracted
    /// one after the other, so that a load past the largest quantity still has a `left`.
    pub fn left(&self) -> Result<Quantity, Overflow> {
        self.budget
            .checked_sub(self.carved.total)
            .and_then(|limit| limit.checked_sub(self.reserved))
            .ok_or(Overflow)
    }

    /// The most an application write may grow the key by: what is left, or zero.
    pub fn available(&self) -> Result<Quantity, Overflow> {
        let left = self.left()?;
        Ok(if left.is_negative() {
            Quantity::ZERO
        } else {
            left
        })
    }

    /// By how much carve-outs and reservations exceed the budget; `None` when they do not.
    pub fn over_budget(&self) -> Result<Option<Quantity>, Overflow> {
        let left = self.left()?;
        if !left.is_negative() {
            return Ok(None);
        }
        left.nanos()
            .checked_neg()
            .map(|over| Some(Quantity::from_nanos(over)))
            .ok_or(Overflow)
    }

    /// How far a write of `wanted` more takes the pool past its budget (zero or negative:
    /// it fits).
    pub fn past_budget_with(&self, wanted: Quantity) -> Result<Quantity, Overflow> {
        wanted.checked_sub(self.left()?).ok_or(Overflow)
    }

    /// The sub-tenants alone declare more than the budget.
    pub fn overcommitted(&self) -> bool {
        self.carved.total > self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn standing(budget: &str, carved: &str, reserved: &str) -> Standing {
        Standing {
            pool: "tenant-a".into(),
            key: "cpu".into(),
            budget: q(budget),
            carved: Carved {
                total: q(carved),
                by: 1,
            },
            reserved: q(reserved),
            holders: 2,
            largest: Vec::new(),
        }
    }

    #[test]
    fn what_is_left_is_the_budget_less_carve_outs_and_reservations() {
        let within = standing("10", "4", "3500m");
        assert_eq!(within.load(), Ok(q("7500m")));
        assert_eq!(within.left(), Ok(q("2500m")));
        assert_eq!(within.available(), Ok(q("2500m")));
        assert_eq!(within.over_budget(), Ok(None));
        assert_eq!(within.past_budget_with(q("3")), Ok(q("500m")));
        assert_eq!(within.past_budget_with(q("2500m")), Ok(Quantity::ZERO));
        assert!(!within.overcommitted());

        let over = standing("4", "5", "1");
        assert_eq!(over.left(), Ok(q("-2")));
        assert_eq!(over.available(), Ok(Quantity::ZERO));
        assert_eq!(over.over_budget(), Ok(Some(q("2"))));
        assert!(over.overcommitted());
    }
}
