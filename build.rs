//! Converts the built-in reservation blocks (src/reservations.yaml, the one human-readable
//! source, comments and all) to compact JSON in OUT_DIR, which src/builtin.rs embeds: the
//! module itself carries no YAML parser. The output is a function of the file alone (keys in
//! the file's order, no paths, no time), so the build stays reproducible.

use std::{env, fs, path::Path};

const SOURCE: &str = "src/reservations.yaml";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = fs::read_to_string(SOURCE).unwrap_or_else(|e| panic!("{SOURCE}: {e}"));
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{SOURCE}: {e}"));
    let json = serde_json::to_value(yaml)
        .unwrap_or_else(|e| panic!("{SOURCE} is not JSON-compatible: {e}"));
    match &json {
        serde_json::Value::Object(map) if !map.is_empty() => {}
        _ => panic!("{SOURCE} must be a non-empty map of kind to reservation block"),
    }
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("builtin-reservations.json");
    fs::write(&out, serde_json::to_string(&json).expect("JSON serialises"))
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
