//! What the applications of a pool reserve: the sum per key, how many hold each key, and the
//! largest holders the messages and the ledger name.

use std::collections::{BTreeMap, BTreeSet};

use crate::quantity::Quantity;
use crate::resources::{Overflow, Resources};

/// How many of a pool's largest holders a message names.
pub const LARGEST_SHOWN: usize = 3;

/// What the applications of a pool reserve, how many hold each key, and the largest holders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Usage {
    pub reserved: Resources,
    pub holders: BTreeMap<String, usize>,
    /// Per key, the largest holders (largest first, then by label), at most `keep`.
    pub largest: BTreeMap<String, Vec<(Quantity, String)>>,
    /// The module releases the tenant chart will create that hold some of it, by label.
    pub pending: BTreeSet<String>,
    keep: usize,
}

impl Default for Usage {
    fn default() -> Self {
        Usage::keeping(LARGEST_SHOWN)
    }
}

impl Usage {
    /// An empty usage that keeps the `keep` largest holders of each key.
    pub fn keeping(keep: usize) -> Self {
        Usage {
            reserved: Resources::new(),
            holders: BTreeMap::new(),
            largest: BTreeMap::new(),
            pending: BTreeSet::new(),
            keep,
        }
    }

    /// One holder's reservation of `key`; `holder` names it (called only when it may be
    /// among the largest).
    pub fn add_key(
        &mut self,
        key: &str,
        q: Quantity,
        holder: impl FnOnce() -> String,
    ) -> Result<(), Overflow> {
        self.reserved.add(key, q)?;
        if !q.is_positive() {
            return Ok(());
        }
        match self.holders.get_mut(key) {
            Some(holders) => *holders += 1,
            None => {
                self.holders.insert(key.to_string(), 1);
            }
        }
        let largest = match self.largest.get_mut(key) {
            Some(largest) => largest,
            None => self.largest.entry(key.to_string()).or_default(),
        };
        if self.keep == 0
            || largest.len() == self.keep && largest.last().is_some_and(|(last, _)| q < *last)
        {
            return Ok(());
        }
        let label = holder();
        let ahead = |(other, other_label): &(Quantity, String)| {
            *other > q || (*other == q && *other_label <= label)
        };
        let at = largest.partition_point(ahead);
        if at < self.keep {
            largest.insert(at, (q, label));
            largest.truncate(self.keep);
        }
        Ok(())
    }

    /// `(reserved, holders)` of `key`.
    pub fn of(&self, key: &str) -> (Quantity, usize) {
        (
            self.reserved.get(key),
            self.holders.get(key).copied().unwrap_or(0),
        )
    }

    /// The largest holders of `key`.
    pub fn largest(&self, key: &str) -> &[(Quantity, String)] {
        self.largest.get(key).map_or(&[], Vec::as_slice)
    }
}
