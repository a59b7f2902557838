//! `Quantity::parse` on any string: it never panics, and every quantity it accepts survives
//! `to_canonical` -> `parse` in both notations, with canonical forms that are fixed points.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tenant_reservation_policy::quantity::{Notation, Quantity, QuantityError};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = Quantity::parse(text);
    match Quantity::parse_non_negative(text) {
        Ok(q) => assert_eq!(parsed, Ok(q), "{text:?}"),
        Err(QuantityError::Negative(_)) => {
            assert!(parsed.as_ref().is_ok_and(|q| q.nanos() < 0), "{text:?}")
        }
        Err(e) => assert_eq!(parsed, Err(e), "{text:?}"),
    }
    let Ok(q) = parsed else {
        return;
    };
    for notation in [Notation::Decimal, Notation::Binary] {
        let canonical = q.to_canonical(notation);
        assert_eq!(
            Quantity::parse(&canonical),
            Ok(q),
            "{text:?} -> {canonical:?} ({notation:?})"
        );
        assert_eq!(
            Quantity::parse(&canonical).map(|p| p.to_canonical(notation)),
            Ok(canonical.clone()),
            "{text:?}: {canonical:?} is not a fixed point"
        );
    }
    // The exact value in nano-units reads back to the same quantity.
    assert_eq!(
        Quantity::parse(&format!("{}n", q.nanos())),
        Ok(q),
        "{text:?}"
    );
});
