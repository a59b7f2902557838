//! The Kubewarden metadata an annotated policy carries in its `io.kubewarden.metadata` custom
//! section (written by `kwctl annotate`), found as policy-evaluator's `Metadata::from_contents`
//! finds it: wasmparser's walk, the first section of that name. Only what the runner needs is
//! kept.

use std::collections::BTreeSet;

use anyhow::{Context, Result, anyhow};
use serde::Deserialize;
use wasmparser::{Parser, Payload};

use crate::calls::ContextAwareResource;

/// The custom section kwctl writes the metadata JSON into.
pub const KUBEWARDEN_CUSTOM_SECTION_METADATA: &str = "io.kubewarden.metadata";

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
    if module.len() < 8 || !module.starts_with(b"\0asm") {
        return Ok(None);
    }
    match metadata_section(module)? {
        None => Ok(None),
        Some(data) => serde_json::from_slice(data).map(Some).map_err(|e| {
            anyhow!(
                "cannot deserialize the {KUBEWARDEN_CUSTOM_SECTION_METADATA} custom section: {e}"
            )
        }),
    }
}

/// The contents of the first metadata section, `None` when there is none; the walk stops there.
fn metadata_section(module: &[u8]) -> Result<Option<&[u8]>> {
    for payload in Parser::new(0).parse_all(module) {
        match payload.context("cannot parse the WebAssembly module")? {
            Payload::CustomSection(c) if c.name() == KUBEWARDEN_CUSTOM_SECTION_METADATA => {
                return Ok(Some(c.data()));
            }
            _ => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `module` with a custom section `name` holding `data` appended.
    fn with_custom_section(module: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
        let mut section = wasm_encoder::Module::new();
        section.section(&wasm_encoder::CustomSection {
            name: name.into(),
            data: data.into(),
        });
        // The encoder writes a module: its 8-byte header, then the section.
        [module, &section.finish()[8..]].concat()
    }

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
        // The first section counts, and the walk stops there, as policy-evaluator's does.
        let twice = with_custom_section(&annotated, KUBEWARDEN_CUSTOM_SECTION_METADATA, b"{");
        assert_eq!(read_metadata(&twice).unwrap(), Some(m.clone()));
        let broken_after = [&annotated[..], &[1u8, 0x80]].concat();
        assert_eq!(read_metadata(&broken_after).unwrap(), Some(m));
        let broken = with_custom_section(&empty, KUBEWARDEN_CUSTOM_SECTION_METADATA, b"{");
        assert!(read_metadata(&broken).is_err());
        assert_eq!(read_metadata(b"(module)").unwrap(), None);
        assert!(read_metadata(&empty[..7]).unwrap().is_none());
        let truncated = [&empty[..], &[0u8, 10, 1]].concat();
        assert!(read_metadata(&truncated).is_err());
    }
}
