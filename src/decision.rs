//! Does a write fit? Every piece of fit arithmetic of both gates, and every figure message:
//! pure functions over what has been summed.
//!
//! - **An application write**, for each key it grows, in that key's pool:
//!   `limit = budget - carved out`, refused when `reserved + new > limit`. An UPDATE checks
//!   only the keys that grow (`new - old > 0`), so shrinking and unchanged keys pass even in
//!   a pool that is already over budget.
//! - **A Tenant declaration**, for each key of a pool above it: the pool's load
//!   (`carved out + reserved`) may not grow past the budget; and a declaration that is lowered
//!   or new must cover what the child's subtree already holds.

use crate::keys::{plural, show};
use crate::pool::Standing;
use crate::quantity::Quantity;
use crate::resources::{Overflow, Resources};

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
    /// What the pool holds besides the write (for a Tenant write: its load after it).
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

/// An application's write of `wanted` (`growth` more than before; `update`: it existed): the
/// violation, or `None` when it fits.
pub fn application_violation(
    standing: &Standing,
    wanted: Quantity,
    growth: Quantity,
    update: bool,
) -> Option<String> {
    let (pool, key) = (&standing.pool, standing.key.as_str());
    // i128 nano-units: these sums of validated quantities cannot overflow in practice, and
    // if they ever did the write is refused rather than admitted.
    let over = standing.past_budget_with(wanted).ok();
    if over.is_some_and(|over| !over.is_positive()) {
        return None;
    }
    let what = if update {
        format!(
            "{key} grows by {} to {}, which",
            show(key, growth),
            show(key, wanted)
        )
    } else {
        format!("{key} {}", show(key, wanted))
    };
    Some(format!(
        "{what} exceeds pool {pool}{}: {}",
        by(key, over),
        figures(standing)
    ))
}

/// ` by N`, how far past its budget the write takes the pool.
fn by(key: &str, over: Option<Quantity>) -> String {
    match over {
        Some(over) => format!(" by {}", show(key, over)),
        None => String::new(),
    }
}

/// A Tenant declaration, on one key of a pool above it.
#[derive(Clone, Debug)]
pub struct Declaration<'a> {
    /// The pool after the write: the other carve-outs, and the reservations of its member
    /// applications (the modules apart).
    pub after: Standing,
    /// The pool's load before the write: carve-outs and reservations.
    pub load_before: Quantity,
    /// What the child declares now and declared before, for the key.
    pub declared: Option<Quantity>,
    pub previous: Option<Quantity>,
    /// The modules the write switches on that land in this pool: their names and what they
    /// reserve of the key.
    pub modules: Option<(&'a str, Quantity)>,
}

impl Declaration<'_> {
    /// The pool's load after the write: carve-outs, reservations, the child's declaration
    /// and the modules that land in the pool.
    pub fn load_after(&self) -> Option<Quantity> {
        let modules = self.modules.map_or(Quantity::ZERO, |(_, q)| q);
        [
            self.after.carved.total,
            self.after.reserved,
            self.declared.unwrap_or(Quantity::ZERO),
            modules,
        ]
        .into_iter()
        .try_fold(Quantity::ZERO, Quantity::checked_add)
    }
}

/// The violation of a declaration that makes its pool's load grow past the budget.
pub fn declaration_violation(d: &Declaration<'_>) -> Result<Option<String>, Overflow> {
    let Standing {
        pool, key, budget, ..
    } = &d.after;
    let (key, budget) = (key.as_str(), *budget);
    let load_after = d.load_after().ok_or(Overflow)?;
    if load_after <= d.load_before || load_after <= budget {
        return Ok(None);
    }
    let what = match (d.declared, d.previous) {
        (Some(now), Some(before)) if now > before => format!(
            "{key} grows by {} to {}, which",
            show(key, now.checked_sub(before).unwrap_or(now)),
            show(key, now)
        ),
        (Some(now), _) => format!("{key} {}", show(key, now)),
        (None, Some(_)) => format!(
            "{key} is no longer declared: what its namespaces hold returns to the pool, which"
        ),
        (None, None) => {
            let (names, reserved) = d.modules.unwrap_or_default();
            format!(
                "{key}: the modules it switches on ({names}) reserve {}, which",
                show(key, reserved)
            )
        }
    };
    Ok(Some(format!(
        "{what} exceeds pool {pool}{}: {}",
        by(key, load_after.checked_sub(budget)),
        figures(&d.after)
    )))
}

/// What a child's subtree holds of a key it declares lower (or for the first time), or that
/// the modules it switches on grow into.
#[derive(Clone, Copy, Debug)]
pub struct Holding<'a> {
    /// The parent pool the difference would be handed back to.
    pub pool: &'a str,
    /// The child's own pool.
    pub own_pool: &'a str,
    pub key: &'a str,
    pub declared: Quantity,
    /// What the applications of the child's own pool reserve, and how many hold it.
    pub reserved: (Quantity, usize),
    /// What the child's own sub-tenants declare.
    pub sub_tenants: Quantity,
    /// What the modules the write switches on will reserve in the child's own pool, and
    /// their names.
    pub modules: (Quantity, &'a str),
    /// Whether the declaration is lowered (or new) under a pool above: the difference would
    /// be handed back to it while still in use. Otherwise the modules grow into it.
    pub hands_back: bool,
}

/// The violation of a declaration below what its namespaces already hold, or will hold once
/// the modules it switches on exist.
pub fn handback_violation(h: &Holding<'_>) -> Result<Option<String>, Overflow> {
    let Holding {
        pool,
        own_pool,
        key,
        declared,
        reserved: (reserved, holders),
        sub_tenants,
        modules: (modules, module_names),
        hands_back,
    } = *h;
    let held_now = reserved.checked_add(sub_tenants).ok_or(Overflow)?;
    let held = held_now.checked_add(modules).ok_or(Overflow)?;
    if held <= declared {
        return Ok(None);
    }
    // Handed back only what is held already; what only the modules add does not fit yet.
    let hands_back = hands_back && held_now > declared;
    let mut what = format!(
        "{} reserved by {holders} application{}",
        show(key, reserved),
        plural(holders)
    );
    if !sub_tenants.is_zero() {
        what.push_str(&format!(
            " and {} declared by its sub-tenants",
            show(key, sub_tenants)
        ));
    }
    if !modules.is_zero() {
        what.push_str(&format!(
            " and {} by the modules it switches on ({module_names})",
            show(key, modules)
        ));
    }
    let declared = show(key, declared);
    Ok(Some(if hands_back {
        format!(
            "{key} {declared} is less than its namespaces already hold ({what}): declaring it would hand back budget of pool {pool} that is still in use"
        )
    } else {
        format!(
            "{key} {declared} does not cover what its namespaces will hold ({what}) in pool {own_pool}"
        )
    }))
}

/// `budget B, C carved out by n sub-tenants, reserved R by m applications, available A`.
pub fn figures(standing: &Standing) -> String {
    let Standing {
        key,
        budget,
        carved,
        reserved,
        holders,
        largest,
        ..
    } = standing;
    let (key, budget, carved, reserved, holders) =
        (key.as_str(), *budget, *carved, *reserved, *holders);
    let mut figures = vec![format!("budget {}", show(key, budget))];
    if !carved.total.is_zero() {
        figures.push(format!(
            "{} carved out by {} sub-tenant{}",
            show(key, carved.total),
            carved.by,
            plural(carved.by)
        ));
    }
    let mut held = format!(
        "reserved {} by {holders} application{}",
        show(key, reserved),
        plural(holders)
    );
    if !largest.is_empty() {
        let named: Vec<String> = largest
            .iter()
            .map(|(q, label)| format!("{label} {}", show(key, *q)))
            .collect();
        held.push_str(&format!(" (largest: {})", named.join(", ")));
    }
    figures.push(held);
    match (standing.left(), standing.over_budget()) {
        (Ok(left), Ok(None)) => figures.push(format!("available {}", show(key, left))),
        (Ok(_), Ok(Some(over))) => {
            figures.push(format!("available 0 (over budget by {})", show(key, over)))
        }
        (Ok(_), Err(_)) => {
            figures.push("available 0 (over budget by more than can be shown)".to_string())
        }
        (Err(_), _) => figures.push(format!("available {}", show(key, Quantity::ZERO))),
    }
    figures.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{Carved, Usage};

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    fn standing(pool: &str, key: &str, budget: &str, reserved: (&str, usize)) -> Standing {
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

    #[test]
    fn a_create_that_fits_passes_and_one_that_does_not_is_explained() {
        let memory = standing("tenant-foo", "memory", "16Gi", ("12Gi", 3));
        assert_eq!(
            application_violation(&memory, q("4Gi"), q("4Gi"), false),
            None
        );
        assert_eq!(
            application_violation(&memory, q("8Gi"), q("8Gi"), false).unwrap(),
            "memory 8Gi exceeds pool tenant-foo by 4Gi: budget 16Gi, reserved 12Gi by 3 applications, available 4Gi"
        );
        let cpu = Standing {
            carved: Carved {
                total: q("4"),
                by: 1,
            },
            ..standing("tenant-a", "cpu", "8", ("3500m", 1))
        };
        assert_eq!(
            application_violation(&cpu, q("1"), q("1"), false).unwrap(),
            "cpu 1 exceeds pool tenant-a by 500m: budget 8, 4 carved out by 1 sub-tenant, reserved 3500m by 1 application, available 500m"
        );
    }

    #[test]
    fn an_update_is_explained_by_its_growth_even_over_budget() {
        // The pool is already over budget.
        let cpu = standing("tenant-foo", "cpu", "4", ("6", 1));
        assert_eq!(
            application_violation(&cpu, q("3"), q("1"), true).unwrap(),
            "cpu grows by 1 to 3, which exceeds pool tenant-foo by 5: budget 4, reserved 6 by 1 application, available 0 (over budget by 2)"
        );
        let zero = standing("tenant-z", "cpu", "0", ("0", 0));
        assert!(
            application_violation(&zero, q("1m"), q("1m"), false)
                .unwrap()
                .contains("cpu 1m exceeds pool tenant-z by 1m: budget 0")
        );
    }

    #[test]
    fn the_largest_holders_are_named() {
        let mut usage = Usage::default();
        for (label, size) in [
            ("a", "1Gi"),
            ("b", "8Gi"),
            ("c", "4Gi"),
            ("d", "4Gi"),
            ("e", "2Gi"),
        ] {
            usage.add_key("memory", q(size), || label.into()).unwrap();
        }
        usage
            .add_key("memory", Quantity::ZERO, || "zero".into())
            .unwrap();
        assert_eq!(usage.of("memory"), (q("19Gi"), 5));
        let standing = Standing {
            largest: usage.largest("memory").to_vec(),
            ..standing("tenant-foo", "memory", "16Gi", ("19Gi", 5))
        };
        assert_eq!(
            application_violation(&standing, q("1Gi"), q("1Gi"), false).unwrap(),
            "memory 1Gi exceeds pool tenant-foo by 4Gi: budget 16Gi, reserved 19Gi by 5 applications (largest: b 8Gi, c 4Gi, d 4Gi), available 0 (over budget by 3Gi)"
        );
    }

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

    #[test]
    fn a_declaration_may_not_grow_a_pool_past_its_budget() {
        let after = Standing {
            carved: Carved {
                total: q("4"),
                by: 1,
            },
            ..standing("tenant-a", "cpu", "10", ("2", 2))
        };
        let d = Declaration {
            after: after.clone(),
            load_before: q("6"),
            declared: Some(q("6")),
            previous: Some(q("2")),
            modules: None,
        };
        assert_eq!(
            declaration_violation(&d).unwrap().unwrap(),
            "cpu grows by 4 to 6, which exceeds pool tenant-a by 2: budget 10, 4 carved out by 1 sub-tenant, reserved 2 by 2 applications, available 4"
        );
        let within = Declaration {
            declared: Some(q("4")),
            ..d.clone()
        };
        assert_eq!(declaration_violation(&within).unwrap(), None);
        // An overcommitted pool whose load does not grow passes.
        let no_growth = Declaration {
            load_before: q("20"),
            ..d.clone()
        };
        assert_eq!(declaration_violation(&no_growth).unwrap(), None);
        let dropped = Declaration {
            declared: None,
            after: Standing {
                reserved: q("9"),
                holders: 3,
                ..after.clone()
            },
            ..d.clone()
        };
        let switched_on = Declaration {
            declared: None,
            previous: None,
            load_before: q("8"),
            modules: Some(("Etcd tenant-a-x/etcd", q("3500m"))),
            after: Standing {
                reserved: q("5500m"),
                holders: 2,
                ..after.clone()
            },
        };
        assert_eq!(
            declaration_violation(&switched_on).unwrap().unwrap(),
            "cpu: the modules it switches on (Etcd tenant-a-x/etcd) reserve 3500m, which exceeds pool tenant-a by 3: budget 10, 4 carved out by 1 sub-tenant, reserved 5500m by 2 applications, available 500m"
        );
        assert!(
            declaration_violation(&dropped)
                .unwrap()
                .unwrap()
                .starts_with("cpu is no longer declared: what its namespaces hold returns to the pool, which exceeds pool tenant-a")
        );
    }

    #[test]
    fn a_declaration_must_cover_what_its_subtree_holds() {
        let h = Holding {
            pool: "tenant-a",
            own_pool: "tenant-a-x",
            key: "memory",
            declared: q("4Gi"),
            reserved: (q("3Gi"), 2),
            sub_tenants: q("2Gi"),
            modules: (Quantity::ZERO, ""),
            hands_back: true,
        };
        assert_eq!(
            handback_violation(&h).unwrap().unwrap(),
            "memory 4Gi is less than its namespaces already hold (3Gi reserved by 2 applications and 2Gi declared by its sub-tenants): declaring it would hand back budget of pool tenant-a that is still in use"
        );
        let covered = Holding {
            sub_tenants: q("1Gi"),
            ..h
        };
        assert_eq!(handback_violation(&covered).unwrap(), None);
        let modules = Holding {
            own_pool: "tenant-x",
            reserved: (Quantity::ZERO, 0),
            sub_tenants: Quantity::ZERO,
            modules: (q("33Gi"), "Monitoring tenant-x/monitoring"),
            hands_back: false,
            ..h
        };
        assert_eq!(
            handback_violation(&modules).unwrap().unwrap(),
            "memory 4Gi does not cover what its namespaces will hold (0 reserved by 0 applications and 33Gi by the modules it switches on (Monitoring tenant-x/monitoring)) in pool tenant-x"
        );
    }
}
