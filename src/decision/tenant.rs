//! The Tenant declaration gate's checks: a declaration may not grow a pool above it past
//! its budget ([`declaration_violation`]), and a declaration that is lowered or new, or whose
//! modules grow into it, must cover what the child's subtree holds ([`handback_violation`]).

use super::figures::{by, figures};
use crate::keys::{plural, show};
use crate::pool::Standing;
use crate::quantity::Quantity;
use crate::resources::Overflow;

/// A Tenant declaration, on one key of a pool above it.
#[derive(Clone, Debug)]
pub struct Declaration<'a> {
    /// The pool before the write: its carve-outs and reservations (the pending modules of
    /// the child's stored version among them).
    pub before: Standing,
    /// The pool after the write, without the child: the other carve-outs, and the
    /// reservations of its member applications (the modules apart).
    pub after: Standing,
    /// What the child declares now and declared before, for the key.
    pub declared: Option<Quantity>,
    pub previous: Option<Quantity>,
    /// The modules the write switches on that land in this pool: their names and what they
    /// reserve of the key.
    pub modules: Option<(&'a str, Quantity)>,
}

impl Declaration<'_> {
    /// What the write puts in the pool: the child's declaration, and the modules that land
    /// in the pool.
    pub fn adds(&self) -> Result<Quantity, Overflow> {
        let modules = self.modules.map_or(Quantity::ZERO, |(_, q)| q);
        self.declared
            .unwrap_or(Quantity::ZERO)
            .checked_add(modules)
            .ok_or(Overflow)
    }

    /// By how much the write grows the pool's load (negative: it shrinks it).
    pub fn growth(&self) -> Result<Quantity, Overflow> {
        let load_after = self
            .after
            .load()?
            .checked_add(self.adds()?)
            .ok_or(Overflow)?;
        load_after.checked_sub(self.before.load()?).ok_or(Overflow)
    }
}

/// The violation of a declaration that makes its pool's load grow past the budget.
pub fn declaration_violation(d: &Declaration<'_>) -> Result<Option<String>, Overflow> {
    let key = d.after.key.as_str();
    let past_budget = d.after.past_budget_with(d.adds()?)?;
    if !d.growth()?.is_positive() || !past_budget.is_positive() {
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
        "{what} exceeds pool {}{}: {}",
        d.after.pool,
        by(key, Some(past_budget)),
        figures(&d.after)
    )))
}

/// What a child's subtree holds of a key it declares lower (or for the first time), or that
/// the modules it switches on grow into.
#[derive(Clone, Debug)]
pub struct Holding<'a> {
    /// The parent pool the difference would be handed back to.
    pub pool: &'a str,
    /// The child's own pool, its declaration as the budget: what its applications reserve
    /// and its own sub-tenants declare.
    pub own: Standing,
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
        own,
        modules: (modules, module_names),
        hands_back,
    } = h;
    let key = own.key.as_str();
    if !own.past_budget_with(*modules)?.is_positive() {
        return Ok(None);
    }
    // Handed back only what is held already; what only the modules add does not fit yet.
    let hands_back = *hands_back && own.over_budget()?.is_some();
    let mut what = format!(
        "{} reserved by {} application{}",
        show(key, own.reserved),
        own.holders,
        plural(own.holders)
    );
    if !own.carved.total.is_zero() {
        what.push_str(&format!(
            " and {} declared by its sub-tenants",
            show(key, own.carved.total)
        ));
    }
    if !modules.is_zero() {
        what.push_str(&format!(
            " and {} by the modules it switches on ({module_names})",
            show(key, *modules)
        ));
    }
    let declared = show(key, own.budget);
    Ok(Some(if hands_back {
        format!(
            "{key} {declared} is less than its namespaces already hold ({what}): declaring it would hand back budget of pool {pool} that is still in use"
        )
    } else {
        format!(
            "{key} {declared} does not cover what its namespaces will hold ({what}) in pool {}",
            own.pool
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::fixtures::{q, standing};
    use crate::pool::Carved;

    #[test]
    fn a_declaration_may_not_grow_a_pool_past_its_budget() {
        let after = Standing {
            carved: Carved {
                total: q("4"),
                by: 1,
            },
            ..standing("tenant-a", "cpu", "10", ("2", 2))
        };
        let before = Standing {
            carved: Carved {
                total: q("4"),
                by: 1,
            },
            ..standing("tenant-a", "cpu", "10", ("2", 2))
        };
        let d = Declaration {
            before: before.clone(),
            after: after.clone(),
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
            before: Standing {
                reserved: q("16"),
                ..before.clone()
            },
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
            before: Standing {
                reserved: q("4"),
                ..before.clone()
            },
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
        let own = |reserved: (&str, usize), sub_tenants: &str| Standing {
            carved: Carved {
                total: q(sub_tenants),
                by: 1,
            },
            ..standing("tenant-a-x", "memory", "4Gi", reserved)
        };
        let h = Holding {
            pool: "tenant-a",
            own: own(("3Gi", 2), "2Gi"),
            modules: (Quantity::ZERO, ""),
            hands_back: true,
        };
        assert_eq!(
            handback_violation(&h).unwrap().unwrap(),
            "memory 4Gi is less than its namespaces already hold (3Gi reserved by 2 applications and 2Gi declared by its sub-tenants): declaring it would hand back budget of pool tenant-a that is still in use"
        );
        let covered = Holding {
            own: own(("3Gi", 2), "1Gi"),
            ..h.clone()
        };
        assert_eq!(handback_violation(&covered).unwrap(), None);
        let modules = Holding {
            own: Standing {
                pool: "tenant-x".into(),
                ..own(("0", 0), "0")
            },
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
