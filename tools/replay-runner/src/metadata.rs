//! The Kubewarden metadata an annotated policy carries in its `io.kubewarden.metadata` custom
//! section (written by `kwctl annotate`), read the way policy-evaluator's
//! `Metadata::from_contents` does. Only what the runner needs is kept.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow, bail};
use serde::Deserialize;

use crate::calls::ContextAwareResource;

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

fn read_leb128_u32(bytes: &[u8], pos: &mut usize) -> Result<u32> {
    let mut result: u32 = 0;
    let mut shift = 0;
    loop {
        let byte = *bytes
            .get(*pos)
            .ok_or_else(|| anyhow!("truncated WebAssembly module"))?;
        *pos += 1;
        result |= u32::from(byte & 0x7f)
            .checked_shl(shift)
            .ok_or_else(|| anyhow!("malformed LEB128 in WebAssembly module"))?;
        if byte & 0x80 == 0 {
            return Ok(result);
        }
        shift += 7;
        if shift > 28 {
            bail!("malformed LEB128 in WebAssembly module");
        }
    }
}

/// The custom section named `name` of a binary module, if any. `None` for non-binary input (e.g.
/// WAT text, which wasmtime also accepts).
pub fn custom_section<'a>(module: &'a [u8], name: &str) -> Result<Option<&'a [u8]>> {
    if module.len() < 8 || &module[0..4] != b"\0asm" {
        return Ok(None);
    }
    let mut pos = 8;
    while pos < module.len() {
        let id = module[pos];
        pos += 1;
        let size = read_leb128_u32(module, &mut pos)? as usize;
        let end = pos
            .checked_add(size)
            .filter(|&e| e <= module.len())
            .ok_or_else(|| anyhow!("truncated WebAssembly section"))?;
        if id == 0 {
            let mut p = pos;
            let name_len = read_leb128_u32(module, &mut p)? as usize;
            let name_end = p
                .checked_add(name_len)
                .filter(|&e| e <= end)
                .ok_or_else(|| anyhow!("malformed custom section name"))?;
            if &module[p..name_end] == name.as_bytes() {
                return Ok(Some(&module[name_end..end]));
            }
        }
        pos = end;
    }
    Ok(None)
}

/// The policy's metadata, `None` when the module is not annotated.
pub fn read_metadata(module: &[u8]) -> Result<Option<Metadata>> {
    match custom_section(module, KUBEWARDEN_CUSTOM_SECTION_METADATA)? {
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

    fn leb(mut n: usize) -> Vec<u8> {
        let mut out = vec![];
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    pub(crate) fn with_custom_section(module: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
        let mut payload = leb(name.len());
        payload.extend_from_slice(name.as_bytes());
        payload.extend_from_slice(data);
        let mut out = module.to_vec();
        out.push(0);
        out.extend(leb(payload.len()));
        out.extend(payload);
        out
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
        let broken = with_custom_section(&empty, KUBEWARDEN_CUSTOM_SECTION_METADATA, b"{");
        assert!(read_metadata(&broken).is_err());
        assert_eq!(read_metadata(b"(module)").unwrap(), None);
        assert!(read_metadata(&empty[..7]).unwrap().is_none());
        let truncated = [&empty[..], &[0u8, 10, 1]].concat();
        assert!(read_metadata(&truncated).is_err());
    }
}
