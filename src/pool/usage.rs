//! What the applications of a pool reserve: the sum per key, how many hold each key, and the
//! largest holders the messages and the ledger name.

use std::collections::{BTreeMap, BTreeSet};

use crate::quantity::Quantity;
use crate::resources::{Overflow, Resources};

/// How many of a pool's largest holders a message names.
pub const LARGEST_SHOWN: usize = 3;

/// One namespace's part of what a pool reserves of one key: a pool's [`Usage`] is the sum of
/// its member namespaces' shares, so a summary of the namespaces can stand in for their lists
/// (`crate::summary`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Share {
    pub reserved: Quantity,
    /// How many applications (and pending modules) hold some of it.
    pub holders: usize,
    /// Its largest holders, largest first, at most [`LARGEST_SHOWN`]: the pool's largest are
    /// among its members' largest.
    pub largest: Vec<(Quantity, String)>,
    /// The pending module releases that hold some of it, by label.
    pub pending: BTreeSet<String>,
}

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
        self.rank(key, q, holder);
        Ok(())
    }

    /// Places a holder of `q` among the largest of `key`, if it is one of them.
    fn rank(&mut self, key: &str, q: Quantity, holder: impl FnOnce() -> String) {
        let largest = match self.largest.get_mut(key) {
            Some(largest) => largest,
            None => self.largest.entry(key.to_string()).or_default(),
        };
        if self.keep == 0
            || largest.len() == self.keep && largest.last().is_some_and(|(last, _)| q < *last)
        {
            return;
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
    }

    /// Adds one namespace's share of `key`: a pool's usage is the sum of its members'.
    pub fn absorb(&mut self, key: &str, share: &Share) -> Result<(), Overflow> {
        self.reserved.add(key, share.reserved)?;
        if share.holders > 0 {
            *self.holders.entry(key.to_string()).or_default() += share.holders;
        }
        for (q, label) in &share.largest {
            self.rank(key, *q, || label.clone());
        }
        self.pending.extend(share.pending.iter().cloned());
        Ok(())
    }

    /// This usage's part of `key`, as one share: what [`Usage::absorb`] adds back.
    pub fn share(&self, key: &str, pending: BTreeSet<String>) -> Share {
        let (reserved, holders) = self.of(key);
        Share {
            reserved,
            holders,
            largest: self.largest(key).to_vec(),
            pending,
        }
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
