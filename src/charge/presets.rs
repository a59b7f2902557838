//! Cozystack's resource preset table (`cozy-lib.resources.unsanitizedPreset`), legacy aliases
//! included, as the built-in sizes the `preset` path of a reservation resolves to.

use std::collections::BTreeMap;

use crate::keys::{CPU, MEMORY};
use crate::quantity::Quantity;
use crate::resources::Resources;

/// `(name, cpu, memory)`, copied from `test_data/reference/resourcepresets.tpl`; the test
/// below re-reads that file so the two cannot drift apart.
const BUILT_IN: &[(&str, &str, &str)] = &[
    ("t1.nano", "250m", "128Mi"),
    ("t1.micro", "500m", "256Mi"),
    ("t1.small", "1", "512Mi"),
    ("t1.medium", "2", "1Gi"),
    ("t1.large", "4", "2Gi"),
    ("t1.xlarge", "8", "4Gi"),
    ("t1.2xlarge", "16", "8Gi"),
    ("t1.4xlarge", "32", "16Gi"),
    ("c1.nano", "250m", "256Mi"),
    ("c1.micro", "500m", "512Mi"),
    ("c1.small", "1", "1Gi"),
    ("c1.medium", "2", "2Gi"),
    ("c1.large", "4", "4Gi"),
    ("c1.xlarge", "8", "8Gi"),
    ("c1.2xlarge", "16", "16Gi"),
    ("c1.4xlarge", "32", "32Gi"),
    ("s1.nano", "250m", "512Mi"),
    ("s1.micro", "500m", "1Gi"),
    ("s1.small", "1", "2Gi"),
    ("s1.medium", "2", "4Gi"),
    ("s1.large", "4", "8Gi"),
    ("s1.xlarge", "8", "16Gi"),
    ("s1.2xlarge", "16", "32Gi"),
    ("s1.4xlarge", "32", "64Gi"),
    ("u1.nano", "250m", "1Gi"),
    ("u1.micro", "500m", "2Gi"),
    ("u1.small", "1", "4Gi"),
    ("u1.medium", "2", "8Gi"),
    ("u1.large", "4", "16Gi"),
    ("u1.xlarge", "8", "32Gi"),
    ("u1.2xlarge", "16", "64Gi"),
    ("u1.4xlarge", "32", "128Gi"),
    ("m1.nano", "250m", "2Gi"),
    ("m1.micro", "500m", "4Gi"),
    ("m1.small", "1", "8Gi"),
    ("m1.medium", "2", "16Gi"),
    ("m1.large", "4", "32Gi"),
    ("m1.xlarge", "8", "64Gi"),
    ("m1.2xlarge", "16", "128Gi"),
    ("m1.4xlarge", "32", "256Gi"),
    ("nano", "250m", "128Mi"),
    ("micro", "500m", "256Mi"),
    ("small", "1", "512Mi"),
    ("medium", "1", "1Gi"),
    ("large", "2", "2Gi"),
    ("xlarge", "4", "4Gi"),
    ("2xlarge", "8", "8Gi"),
];

/// Preset name -> size of one replica.
#[derive(Clone, Debug, Default)]
pub struct Presets(BTreeMap<String, Resources>);

impl Presets {
    pub fn built_in() -> Self {
        let mut presets = Presets::default();
        for (name, cpu, memory) in BUILT_IN {
            let size = size(cpu, memory).expect("the built-in preset table is valid");
            presets.0.insert((*name).to_string(), size);
        }
        presets
    }

    pub fn insert(&mut self, name: String, size: Resources) {
        self.0.insert(name, size);
    }

    pub fn get(&self, name: &str) -> Option<&Resources> {
        self.0.get(name)
    }
}

fn size(cpu: &str, memory: &str) -> Result<Resources, String> {
    let mut size = Resources::new();
    for (key, text) in [(CPU, cpu), (MEMORY, memory)] {
        let q = Quantity::parse_non_negative(text).map_err(|e| format!("{key}: {e}"))?;
        size.add(key, q).map_err(|e| e.to_string())?;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_cozystack_table() {
        let tpl = include_str!("../../test_data/reference/resourcepresets.tpl");
        let presets = Presets::built_in();
        let mut seen = 0;
        for line in tpl.lines() {
            let words: Vec<&str> = line.split('"').collect();
            // `"u1.medium"  (dict "cpu" "2" "memory" "8Gi" ...` splits into quoted words.
            if words.len() >= 9 && words[3] == "cpu" && words[7] == "memory" {
                let want = size(words[5], words[9]).unwrap();
                assert_eq!(presets.get(words[1]), Some(&want), "preset {}", words[1]);
                seen += 1;
            }
        }
        assert_eq!(seen, BUILT_IN.len());
        assert_eq!(seen, 47, "40 instance-type presets and 7 legacy aliases");
        assert_eq!(
            presets.get("u1.medium").unwrap().to_string(),
            "cpu 2, memory 8Gi"
        );
        assert_eq!(
            presets.get("medium").unwrap().to_string(),
            "cpu 1, memory 1Gi"
        );
    }
}
