//! The verdict: does a write fit in its pool? Pure arithmetic over what has been summed.
//!
//! For each key the pool bounds: `limit = budget - carved out`. A CREATE is refused when
//! `reserved + new > limit`. An UPDATE checks only the keys that grow (`new - old > 0`), so
//! shrinking and unchanged keys pass even in a pool that is already over budget.

use std::collections::BTreeMap;

use crate::pool::{Budget, Carved};
use crate::quantity::Quantity;
use crate::resources::{Overflow, Resources, show};

/// What the other applications of a pool reserve, and how many hold each key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub reserved: Resources,
    pub holders: BTreeMap<String, usize>,
}

impl Usage {
    pub fn add(&mut self, charge: &Resources) -> Result<(), Overflow> {
        charge.iter().try_for_each(|(key, q)| self.add_key(key, q))
    }

    /// One application's reservation of `key`.
    pub fn add_key(&mut self, key: &str, q: Quantity) -> Result<(), Overflow> {
        self.reserved.add(key, q)?;
        if q.is_positive() {
            match self.holders.get_mut(key) {
                Some(holders) => *holders += 1,
                None => {
                    self.holders.insert(key.to_string(), 1);
                }
            }
        }
        Ok(())
    }
}

/// Everything the verdict is computed from.
pub struct PoolState<'a> {
    pub name: &'a str,
    pub budget: &'a Budget,
    pub carved: &'a Carved,
    pub usage: &'a Usage,
}

/// The keys on which `new` grows over `old` (all of `new` on CREATE), bounded by `budget`.
pub fn growth(
    budget: &Budget,
    new: &Resources,
    old: Option<&Resources>,
) -> Vec<(String, Quantity)> {
    budget
        .keys()
        .filter_map(|key| {
            let before = old.map_or(Quantity::ZERO, |o| o.get(key));
            let delta = new.get(key).checked_sub(before)?;
            delta.is_positive().then(|| (key.to_string(), delta))
        })
        .collect()
}

/// `Ok` when the write fits; otherwise every key it overflows, in one message.
pub fn decide(
    subject: &str,
    state: &PoolState<'_>,
    new: &Resources,
    old: Option<&Resources>,
) -> Result<(), String> {
    let violations = violations(state, new, old);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(format!("{subject}: {}", violations.join("; ")))
    }
}

/// Every key on which the write overflows the pool, explained.
pub fn violations(state: &PoolState<'_>, new: &Resources, old: Option<&Resources>) -> Vec<String> {
    let mut violations = Vec::new();
    for (key, delta) in growth(state.budget, new, old) {
        let key = key.as_str();
        let budget = state
            .budget
            .get(key)
            .expect("growth only yields budget keys");
        let carved = state
            .carved
            .total
            .get(key)
            .copied()
            .unwrap_or(Quantity::ZERO);
        let reserved = state.usage.reserved.get(key);
        let wanted = new.get(key);
        // i128 nano-units: these sums of validated quantities cannot overflow in practice,
        // and if they ever did the write is refused rather than admitted.
        let fits = budget
            .checked_sub(carved)
            .and_then(|limit| reserved.checked_add(wanted).map(|total| total <= limit));
        if fits == Some(true) {
            continue;
        }
        let what = match old {
            None => format!("{key} {}", show(key, wanted)),
            Some(_) => format!(
                "{key} grows by {} to {}, which",
                show(key, delta),
                show(key, wanted)
            ),
        };
        let carved_by = state.carved.by.get(key).copied().unwrap_or(0);
        let holders = state.usage.holders.get(key).copied().unwrap_or(0);
        let figures = figures(key, budget, (carved, carved_by), (reserved, holders));
        violations.push(format!("{what} exceeds pool {}: {figures}", state.name));
    }
    violations
}

/// `budget B, C carved out by n sub-tenants, reserved R by m applications, available A`.
pub fn figures(
    key: &str,
    budget: Quantity,
    carved: (Quantity, usize),
    reserved: (Quantity, usize),
) -> String {
    let (carved, carved_by) = carved;
    let (reserved, holders) = reserved;
    let mut figures = vec![format!("budget {}", show(key, budget))];
    if !carved.is_zero() {
        figures.push(format!(
            "{} carved out by {carved_by} sub-tenant{}",
            show(key, carved),
            plural(carved_by)
        ));
    }
    figures.push(format!(
        "reserved {} by {holders} application{}",
        show(key, reserved),
        plural(holders)
    ));
    let available = budget
        .checked_sub(carved)
        .and_then(|l| l.checked_sub(reserved))
        .unwrap_or(Quantity::ZERO);
    if available.nanos() < 0 {
        let over = available.nanos().checked_neg().map_or_else(
            || "more than can be shown".to_string(),
            |n| show(key, Quantity::from_nanos(n)),
        );
        figures.push(format!("available 0 (over budget by {over})"));
    } else {
        figures.push(format!("available {}", show(key, available)));
    }
    figures.join(", ")
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn res(pairs: &[(&str, &str)]) -> Resources {
        pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
    }

    fn budget(pairs: &[(&str, &str)]) -> Budget {
        Budget::from_declared(pairs.iter().map(|(k, v)| (*k, q(v))), &Settings::default())
    }

    fn usage(apps: &[&[(&str, &str)]]) -> Usage {
        let mut u = Usage::default();
        for app in apps {
            u.add(&res(app)).unwrap();
        }
        u
    }

    #[test]
    fn create_that_fits_passes_and_one_that_does_not_is_explained() {
        let b = budget(&[("memory", "16Gi"), ("cpu", "8")]);
        let carved = Carved::default();
        let u = usage(&[
            &[("memory", "4Gi"), ("cpu", "2")],
            &[("memory", "4Gi")],
            &[("memory", "4Gi")],
        ]);
        let state = PoolState {
            name: "tenant-foo",
            budget: &b,
            carved: &carved,
            usage: &u,
        };
        assert_eq!(
            decide(
                "VMInstance tenant-foo/db1",
                &state,
                &res(&[("memory", "4Gi"), ("cpu", "2")]),
                None
            ),
            Ok(())
        );
        assert_eq!(
            decide("VMInstance tenant-foo/db1", &state, &res(&[("memory", "8Gi"), ("cpu", "2")]), None),
            Err("VMInstance tenant-foo/db1: memory 8Gi exceeds pool tenant-foo: budget 16Gi, reserved 12Gi by 3 applications, available 4Gi".into())
        );
    }

    #[test]
    fn every_overflowing_key_is_named_with_carve_outs() {
        let b = budget(&[("memory", "16Gi"), ("cpu", "8")]);
        let mut carved = Carved::default();
        carved.total.insert("cpu".into(), q("4"));
        carved.by.insert("cpu".into(), 1);
        let u = usage(&[&[("cpu", "3500m")]]);
        let state = PoolState {
            name: "tenant-a",
            budget: &b,
            carved: &carved,
            usage: &u,
        };
        let err = decide(
            "Postgres tenant-a/pg",
            &state,
            &res(&[("cpu", "1"), ("memory", "17Gi"), ("storage", "1Ti")]),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "Postgres tenant-a/pg: cpu 1 exceeds pool tenant-a: budget 8, 4 carved out by 1 sub-tenant, reserved 3500m by 1 application, available 500m; \
             memory 17Gi exceeds pool tenant-a: budget 16Gi, reserved 0 by 0 applications, available 16Gi"
        );
    }

    #[test]
    fn update_checks_only_growth() {
        let b = budget(&[("memory", "8Gi"), ("cpu", "4")]);
        let carved = Carved::default();
        // The pool is already over budget on both keys.
        let u = usage(&[&[("memory", "10Gi"), ("cpu", "6")]]);
        let state = PoolState {
            name: "tenant-foo",
            budget: &b,
            carved: &carved,
            usage: &u,
        };
        let old = res(&[("memory", "4Gi"), ("cpu", "2")]);
        assert_eq!(
            decide(
                "VMInstance tenant-foo/vm",
                &state,
                &res(&[("memory", "2Gi"), ("cpu", "1")]),
                Some(&old)
            ),
            Ok(()),
            "shrink"
        );
        assert_eq!(
            decide("VMInstance tenant-foo/vm", &state, &old, Some(&old)),
            Ok(()),
            "unchanged"
        );
        assert_eq!(
            decide("VMInstance tenant-foo/vm", &state, &res(&[("memory", "2Gi"), ("cpu", "3")]), Some(&old)),
            Err("VMInstance tenant-foo/vm: cpu grows by 1 to 3, which exceeds pool tenant-foo: budget 4, reserved 6 by 1 application, available 0 (over budget by 2)".into())
        );
    }

    #[test]
    fn unbounded_keys_are_not_checked_and_zero_budgets_are() {
        let b = budget(&[("cpu", "0")]);
        let carved = Carved::default();
        let u = Usage::default();
        let state = PoolState {
            name: "tenant-z",
            budget: &b,
            carved: &carved,
            usage: &u,
        };
        assert_eq!(
            decide("Redis tenant-z/r", &state, &res(&[("memory", "1Ei")]), None),
            Ok(())
        );
        assert!(
            decide("Redis tenant-z/r", &state, &res(&[("cpu", "1m")]), None)
                .unwrap_err()
                .contains("cpu 1m exceeds pool tenant-z: budget 0")
        );
    }
}
