//! The application gate's check: for each key an application write grows, in that key's
//! pool, `reserved + new` may not pass `budget - carved out`. Only growth is checked, so an
//! UPDATE that shrinks or keeps a key passes even in a pool already over budget.

use super::figures::{by, figures};
use crate::keys::show;
use crate::pool::Standing;
use crate::quantity::Quantity;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::fixtures::{q, standing};
    use crate::pool::{Carved, Usage};

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
}
