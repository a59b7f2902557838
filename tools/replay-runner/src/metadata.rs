//! The Kubewarden metadata an annotated policy carries in its `io.kubewarden.metadata` custom
//! section (written by `kwctl annotate`), found by `host_sim::metadata` the way policy-evaluator's
//! `Metadata::from_contents` finds it. Only what the runner needs is kept.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow};
use host_sim::metadata::{WasmError, metadata_section};
use serde::Deserialize;

use crate::calls::ContextAwareResource;

pub use host_sim::metadata::METADATA_SECTION as KUBEWARDEN_CUSTOM_SECTION_METADATA;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
    #[serde(default)]
    pub mutating: bool,
    #[serde(default)]
    pub execution_mode: Option<String>,
    #[serde(default)]
    pub policy_type: Option<String>,
}

/// The policy's metadata, `None` when the module is not annotated (WAT text, which wasmtime
/// accepts too, never is).
pub fn read_metadata(module: &[u8]) -> Result<Option<Metadata>> {
    let section = match metadata_section(module) {
        Err(WasmError::NotBinary) => None,
        other => other?,
    };
    match section {
        None => Ok(None),
        Some(data) => serde_json::from_slice(data).map(Some).map_err(|e| {
            anyhow!(
                "cannot deserialize the {KUBEWARDEN_CUSTOM_SECTION_METADATA} custom section: {e}"
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_sim::metadata::with_custom_section;

    #[test]
    fn reads_context_aware_resources() {
        let empty = b"\0asm\x01\0\0\0".to_vec();
        assert_eq!(read_metadata(&empty).unwrap(), None);
        let meta = br#"{"protocolVersion":"v1","rules":[],"mutating":false,"contextAwareResources":[{"apiVersion":"cozystack.io/v1alpha1","kind":"ApplicationDefinition"}],"executionMode":"kubewarden-wapc"}"#;
        let other = with_custom_section(&empty, "name", b"\0\0");
        let annotated = with_custom_section(&other, KUBEWARDEN_CUSTOM_SECTION_METADATA, meta);
        let m = read_metadata(&annotated).unwrap().unwrap();
        assert_eq!(m.context_aware_resources.len(), 1);
        assert_eq!(m.execution_mode.as_deref(), Some("kubewarden-wapc"));
        let broken = with_custom_section(&empty, KUBEWARDEN_CUSTOM_SECTION_METADATA, b"{");
        assert!(read_metadata(&broken).is_err());
        assert_eq!(read_metadata(b"(module)").unwrap(), None);
        assert!(read_metadata(&empty[..7]).unwrap().is_none());
        let truncated = [&empty[..], &[0u8, 10, 1]].concat();
        assert!(read_metadata(&truncated).is_err());
    }
}
