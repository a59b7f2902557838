//! Reading a policy module and writing the annotated one.
//!
//! `kwctl annotate` (kwctl 1.35.0, `crates/kwctl/src/annotate.rs`) parses the module with walrus,
//! appends one custom section `io.kubewarden.metadata` holding `serde_json::to_vec(&metadata)`,
//! renames a `kubewarden:javy/host`.`call` import to `host`.`call`, and re-emits the module with
//! walrus. This does the same with the same walrus release, so for the same input and metadata
//! the output bytes are the same. The differences, all deliberate:
//!
//! * kwctl finds the protocol version by instantiating the module in wasmtime and calling its
//!   `protocol_version` waPC function. This tool has no Wasm runtime: it checks that the module
//!   is a waPC guest (exports `__guest_call`) that registers a `protocol_version` function (the
//!   name is in its data), and records `v1`, the only valid version any Kubewarden SDK returns.
//! * kwctl always adds `io.kubewarden.kwctl: <its version>`. This tool never does (and drops one
//!   metadata.yml carries): the module does not claim to have been annotated by kwctl (scripts/check-kwctl-parity.sh compares the
//!   two modulo that annotation).
//! * kwctl run on an already annotated module keeps the old section and appends a second one, and
//!   readers (policy-evaluator's `Metadata::from_contents`) take the first, i.e. the stale one.
//!   This tool drops earlier `io.kubewarden.metadata` sections first, so re-annotating works.

use anyhow::{Context, Result, anyhow, bail};
use wasmparser::{Parser, Payload};

use crate::metadata::{
    ANNOTATION_KWCTL_VERSION, ANNOTATION_USAGE, ExecutionMode, METADATA_SECTION, Metadata,
    ProtocolVersion,
};

/// What the module's exports and data say about how it is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleFacts {
    /// Some export starts with `opa_`: kwctl's test for a Rego-built module.
    pub rego: bool,
    /// Exports `__guest_call`, the waPC guest entry point.
    pub wapc_guest: bool,
    /// The string `protocol_version` is in a data segment (the SDK registers it by that name).
    pub registers_protocol_version: bool,
    /// How many `io.kubewarden.metadata` sections the module already has.
    pub metadata_sections: usize,
}

pub fn module_facts(wasm: &[u8]) -> Result<ModuleFacts> {
    let mut facts = ModuleFacts {
        rego: false,
        wapc_guest: false,
        registers_protocol_version: false,
        metadata_sections: 0,
    };
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.context("cannot parse the WebAssembly module")? {
            Payload::ExportSection(exports) => {
                for export in exports {
                    let export = export.context("cannot parse the export section")?;
                    facts.rego |= export.name.starts_with("opa_");
                    facts.wapc_guest |= export.name == "__guest_call";
                }
            }
            Payload::DataSection(data) => {
                for segment in data {
                    let segment = segment.context("cannot parse the data section")?;
                    if contains(segment.data, b"protocol_version") {
                        facts.registers_protocol_version = true;
                    }
                }
            }
            Payload::CustomSection(c) if c.name() == METADATA_SECTION => {
                facts.metadata_sections += 1;
            }
            _ => {}
        }
    }
    Ok(facts)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The protocol version kwctl would record for this module and execution mode, or kwctl's
/// refusal (same wording where kwctl has one).
pub fn protocol_version(facts: &ModuleFacts, mode: ExecutionMode) -> Result<ProtocolVersion> {
    match mode {
        ExecutionMode::Wasi => Ok(ProtocolVersion::Unknown),
        ExecutionMode::Opa | ExecutionMode::OpaGatekeeper => {
            if facts.rego {
                Ok(ProtocolVersion::Unknown)
            } else {
                bail!(
                    "Wrong value inside of policy's metadata for 'executionMode'. The policy has not been created using Rego"
                )
            }
        }
        ExecutionMode::KubewardenWapc => {
            if facts.rego {
                bail!(
                    "Wrong value inside of policy's metadata for 'executionMode'. This policy has been created using Rego"
                )
            }
            if !facts.wapc_guest {
                bail!(
                    "executionMode is kubewarden-wapc but the module does not export `__guest_call`: it is not a waPC guest (is it a WASI policy? then say executionMode: wasi)"
                )
            }
            if !facts.registers_protocol_version {
                bail!(
                    "the module does not register a `protocol_version` waPC function, so its protocol version cannot be detected (register kubewarden_policy_sdk::protocol_version_guest in wapc_init)"
                )
            }
            Ok(ProtocolVersion::V1)
        }
    }
}

/// Options matching `kwctl annotate`'s flags.
#[derive(Debug, Clone, Default)]
pub struct AnnotateOptions {
    /// Text of `--usage-path`, stored as `io.kubewarden.policy.usage`.
    pub usage: Option<String>,
}

/// The metadata kwctl would embed: parsed, protocol version filled in, annotations added,
/// validated.
pub fn prepare_metadata(
    wasm: &[u8],
    metadata_yaml: &str,
    opts: &AnnotateOptions,
) -> Result<Metadata> {
    let mut metadata = Metadata::from_yaml(metadata_yaml).map_err(|e| anyhow!(e))?;
    let facts = module_facts(wasm)?;
    metadata.protocol_version = Some(protocol_version(&facts, metadata.execution_mode)?);
    let mut annotations = metadata.annotations.take().unwrap_or_default();
    // Only kwctl says kwctl annotated a module, even when metadata.yml says it did.
    annotations.remove(ANNOTATION_KWCTL_VERSION);
    if let Some(usage) = &opts.usage {
        annotations.insert(ANNOTATION_USAGE.to_string(), usage.clone());
    }
    metadata.annotations = Some(annotations);
    metadata
        .validate()
        .map_err(|problems| anyhow!("the metadata is invalid:\n  {}", problems.join("\n  ")))?;
    Ok(metadata)
}

/// The annotated module's bytes.
pub fn annotate(wasm: &[u8], metadata: &Metadata) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(metadata)?;
    let mut module = walrus::Module::from_buffer(wasm)
        .map_err(|e| anyhow!("cannot parse the WebAssembly module: {e}"))?;
    let stale: Vec<_> = module
        .customs
        .iter()
        .filter(|(_, section)| section.name() == METADATA_SECTION)
        .map(|(id, _)| id)
        .collect();
    for id in stale {
        module.customs.delete(id);
    }
    module.customs.add(walrus::RawCustomSection {
        name: METADATA_SECTION.to_string(),
        data: json,
    });
    for import in module.imports.iter_mut() {
        if matches!(import.kind, walrus::ImportKind::Function(_))
            && import.module == "kubewarden:javy/host"
            && import.name == "call"
        {
            import.module = "host".to_string();
        }
    }
    Ok(module.emit_wasm())
}

/// The raw bytes of every `io.kubewarden.metadata` section, in module order.
pub fn metadata_sections(wasm: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.context("cannot parse the WebAssembly module")? {
            Payload::CustomSection(c) if c.name() == METADATA_SECTION => {
                found.push(c.data().to_vec())
            }
            _ => {}
        }
    }
    Ok(found)
}

/// The metadata a Kubewarden reader sees: the first `io.kubewarden.metadata` section.
pub fn read_metadata(wasm: &[u8]) -> Result<Option<Metadata>> {
    match metadata_sections(wasm)?.first() {
        None => Ok(None),
        Some(bytes) => Ok(Some(serde_json::from_slice(bytes).context(
            "the io.kubewarden.metadata section is not valid metadata JSON",
        )?)),
    }
}
