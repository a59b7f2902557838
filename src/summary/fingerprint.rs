//! The settings a summary was computed under. The controller and the policy must charge
//! alike for a summary to stand in for the lists: the same settings that decide a charge
//! (`siblingFailure` and `policyServerUser` do not), under the same policy version. The
//! fingerprint is a SHA-256 over a canonical text of them (object keys sorted, whatever order
//! serde_json keeps them in), so that a native controller and the wasm module agree.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::settings::Settings;

/// `sha256:<hex>` of the policy version and the charging settings.
pub fn of(settings: &Settings) -> String {
    let mut text = format!("tenant-reservation-policy {}\n", env!("CARGO_PKG_VERSION"));
    // Everything below but `reservations` is in BTreeMaps and plain values: its Debug text
    // is ordered and stable.
    text.push_str(&format!(
        "requireReservation {:?}\nexemptKinds {:?}\nquotaKeyAliases {:?}\npresets {:?}\nreplaceBuiltinPresets {:?}\ngpuDeviceClasses {:?}\nreservations ",
        settings.require_reservation,
        settings.exempt_kinds,
        settings.quota_key_aliases,
        settings.presets,
        settings.replace_builtin_presets,
        settings.gpu_device_classes,
    ));
    for (kind, block) in &settings.reservations {
        text.push_str(&format!("{kind:?}="));
        canonical(block, &mut text);
        text.push(';');
    }
    let hash = Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `value` as JSON with every object's keys sorted.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: Value) -> Settings {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_what_decides_a_charge_counts() {
        let base = of(&settings(json!({})));
        assert!(
            base.starts_with("sha256:") && base.len() == 7 + 64,
            "{base}"
        );
        assert_eq!(of(&settings(json!({"siblingFailure": "warn"}))), base);
        assert_eq!(
            of(&settings(
                json!({"policyServerUser": "system:serviceaccount:k:ps"})
            )),
            base
        );
        assert_ne!(of(&settings(json!({"exemptKinds": ["Bucket"]}))), base);
        assert_ne!(of(&settings(json!({"requireReservation": false}))), base);
        assert_ne!(
            of(&settings(
                json!({"reservations": {"Bucket": {"storage": "1Gi"}}})
            )),
            base
        );
    }

    #[test]
    fn object_order_does_not_count() {
        let mut a = String::new();
        let mut b = String::new();
        canonical(
            &json!({"b": 1, "a": {"d": [1, {"y": 2, "x": 3}], "c": "s"}}),
            &mut a,
        );
        let mut reordered = serde_json::Map::new();
        reordered.insert("a".into(), json!({"c": "s", "d": [1, {"x": 3, "y": 2}]}));
        reordered.insert("b".into(), json!(1));
        canonical(&Value::Object(reordered), &mut b);
        assert_eq!(a, b);
        assert_eq!(a, r#"{"a":{"c":"s","d":[1,{"x":3,"y":2}]},"b":1}"#);
    }
}
