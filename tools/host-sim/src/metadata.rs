//! The Kubewarden metadata a policy module carries: the custom section `io.kubewarden.metadata`
//! (written by `kwctl annotate`), found the way policy-evaluator's `Metadata::from_contents`
//! finds it. A module may hold several (kwctl appends one more on each annotation); readers take
//! the first. Only the section walk is here: each tool reads the JSON into its own model.

use std::fmt;

pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

/// Why a module's sections cannot be walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WasmError {
    /// Not a binary WebAssembly module (no `\0asm` header): WAT text, for one.
    NotBinary,
    TruncatedModule,
    MalformedLeb128,
    TruncatedSection,
    MalformedCustomSectionName,
}

impl fmt::Display for WasmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WasmError::NotBinary => "not a binary WebAssembly module",
            WasmError::TruncatedModule => "truncated WebAssembly module",
            WasmError::MalformedLeb128 => "malformed LEB128 in WebAssembly module",
            WasmError::TruncatedSection => "truncated WebAssembly section",
            WasmError::MalformedCustomSectionName => "malformed custom section name",
        })
    }
}

impl std::error::Error for WasmError {}

fn read_leb128_u32(bytes: &[u8], pos: &mut usize) -> Result<u32, WasmError> {
    let mut result: u32 = 0;
    let mut shift = 0;
    loop {
        let byte = *bytes.get(*pos).ok_or(WasmError::TruncatedModule)?;
        *pos += 1;
        result |= u32::from(byte & 0x7f)
            .checked_shl(shift)
            .ok_or(WasmError::MalformedLeb128)?;
        if byte & 0x80 == 0 {
            return Ok(result);
        }
        shift += 7;
        if shift > 28 {
            return Err(WasmError::MalformedLeb128);
        }
    }
}

/// A custom section: its name (raw bytes: names need not be UTF-8) and its contents.
pub type CustomSection<'a> = (&'a [u8], &'a [u8]);

/// The custom sections of a binary module, in module order. Sections are
/// walked lazily: an error after the sections taken is not seen.
pub struct CustomSections<'a> {
    module: &'a [u8],
    pos: usize,
    failed: bool,
}

/// Walks `module`'s custom sections ([`WasmError::NotBinary`] for anything but a binary module).
pub fn custom_sections(module: &[u8]) -> Result<CustomSections<'_>, WasmError> {
    if module.len() < 8 || &module[0..4] != b"\0asm" {
        return Err(WasmError::NotBinary);
    }
    Ok(CustomSections {
        module,
        pos: 8,
        failed: false,
    })
}

impl<'a> CustomSections<'a> {
    fn step(&mut self) -> Result<Option<CustomSection<'a>>, WasmError> {
        let module = self.module;
        while self.pos < module.len() {
            let id = module[self.pos];
            self.pos += 1;
            let size = read_leb128_u32(module, &mut self.pos)? as usize;
            let start = self.pos;
            let end = start
                .checked_add(size)
                .filter(|&e| e <= module.len())
                .ok_or(WasmError::TruncatedSection)?;
            self.pos = end;
            if id == 0 {
                let mut p = start;
                let name_len = read_leb128_u32(module, &mut p)? as usize;
                let name_end = p
                    .checked_add(name_len)
                    .filter(|&e| e <= end)
                    .ok_or(WasmError::MalformedCustomSectionName)?;
                return Ok(Some((&module[p..name_end], &module[name_end..end])));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for CustomSections<'a> {
    type Item = Result<CustomSection<'a>, WasmError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.step().transpose();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}

/// The contents of the first `io.kubewarden.metadata` section (what Kubewarden reads), `None`
/// when there is none. The walk stops at that section.
pub fn metadata_section(module: &[u8]) -> Result<Option<&[u8]>, WasmError> {
    for section in custom_sections(module)? {
        let (name, data) = section?;
        if name == METADATA_SECTION.as_bytes() {
            return Ok(Some(data));
        }
    }
    Ok(None)
}

/// The contents of every `io.kubewarden.metadata` section, in module order (the whole module is
/// walked).
pub fn metadata_sections(module: &[u8]) -> Result<Vec<&[u8]>, WasmError> {
    let mut found = Vec::new();
    for section in custom_sections(module)? {
        let (name, data) = section?;
        if name == METADATA_SECTION.as_bytes() {
            found.push(data);
        }
    }
    Ok(found)
}

/// Test helper: `module` with a custom section `name` holding `data` appended.
pub fn with_custom_section(module: &[u8], name: &str, data: &[u8]) -> Vec<u8> {
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
    let mut payload = leb(name.len());
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(data);
    let mut out = module.to_vec();
    out.push(0);
    out.extend(leb(payload.len()));
    out.extend(payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &[u8] = b"\0asm\x01\0\0\0";

    #[test]
    fn finds_the_first_metadata_section() {
        assert_eq!(metadata_section(EMPTY), Ok(None));
        let other = with_custom_section(EMPTY, "name", b"\0\0");
        let once = with_custom_section(&other, METADATA_SECTION, b"{\"a\":1}");
        let twice = with_custom_section(&once, METADATA_SECTION, b"{\"a\":2}");
        assert_eq!(metadata_section(&twice), Ok(Some(&b"{\"a\":1}"[..])));
        assert_eq!(
            metadata_sections(&twice).unwrap(),
            [&b"{\"a\":1}"[..], &b"{\"a\":2}"[..]]
        );
        let names: Vec<&[u8]> = custom_sections(&twice)
            .unwrap()
            .map(|s| s.unwrap().0)
            .collect();
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn malformed_modules() {
        assert_eq!(
            metadata_section(b"(module)").unwrap_err(),
            WasmError::NotBinary
        );
        assert_eq!(
            metadata_section(&EMPTY[..7]).unwrap_err(),
            WasmError::NotBinary
        );
        let truncated = [EMPTY, &[0u8, 10, 1]].concat();
        assert_eq!(
            metadata_section(&truncated).unwrap_err(),
            WasmError::TruncatedSection
        );
        assert_eq!(
            metadata_sections(b"\0asm\x01\0\0\0garbage").unwrap_err(),
            WasmError::TruncatedSection
        );
        // The first section is read without walking the rest; all of them, with.
        let once = with_custom_section(EMPTY, METADATA_SECTION, b"{}");
        let broken_after = [&once[..], &[1u8, 0x80]].concat();
        assert_eq!(metadata_section(&broken_after), Ok(Some(&b"{}"[..])));
        assert_eq!(
            metadata_sections(&broken_after).unwrap_err(),
            WasmError::TruncatedModule
        );
    }
}
