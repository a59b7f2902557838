//! The built-in defaults: the reservation blocks this project ships for the in-tree kinds
//! (src/reservations.yaml, converted to JSON by build.rs and embedded here), and the kinds
//! exempt by design. With them `settings: {}` charges every in-tree kind of a stock Cozystack.
//!
//! Precedence, per kind: a definition's own `spec.reservation` > the `reservations` setting's
//! block > the built-in block. `reservations: {Kind: null}` removes a built-in block.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::Value;

/// src/reservations.yaml as compact JSON (build.rs).
const RESERVATIONS: &str = include_str!(concat!(env!("OUT_DIR"), "/builtin-reservations.json"));

/// Kinds that reserve nothing by design, exempt whatever `exemptKinds` says: Gateway is a
/// tenant module without an ApplicationDefinition, and runs nothing a tenant pool pays for
/// (docs/charges.md#gateway-no-applicationdefinition).
pub const EXEMPT_KINDS: &[&str] = &["Gateway"];

/// The built-in block of every in-tree kind, parsed once per module instance.
pub fn reservations() -> &'static BTreeMap<String, Value> {
    static PARSED: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    PARSED.get_or_init(|| {
        serde_json::from_str(RESERVATIONS).expect("build.rs wrote a map of kind to block")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charge::definition::Reservation;

    #[test]
    fn every_built_in_block_is_valid() {
        assert!(reservations().len() >= 30, "{:?}", reservations().keys());
        for (kind, block) in reservations() {
            Reservation::from_value(block).unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
    }
}
