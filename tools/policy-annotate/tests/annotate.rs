//! `policy-annotate annotate` on small modules built here, and on the repository's metadata.yml.

use policy_annotate::metadata::{METADATA_SECTION, Metadata, ProtocolVersion};
use policy_annotate::wasm::{self, AnnotateOptions};
use wasm_encoder::{
    CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function,
    FunctionSection, ImportSection, MemorySection, MemoryType, Module, TypeSection, ValType,
};

/// A module shaped like an SDK-built waPC policy: imports a host function, exports
/// `__guest_call`, and holds the registered function names in its data.
fn module(exports: &[&str], data: &[u8], import: (&str, &str)) -> Vec<u8> {
    let mut m = Module::new();
    let mut types = TypeSection::new();
    types
        .ty()
        .function([ValType::I32, ValType::I32], [ValType::I32]);
    m.section(&types);
    let mut imports = ImportSection::new();
    imports.import(import.0, import.1, EntityType::Function(0));
    m.section(&imports);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    m.section(&funcs);
    let mut mem = MemorySection::new();
    mem.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    m.section(&mem);
    let mut ex = ExportSection::new();
    for name in exports {
        ex.export(name, ExportKind::Func, 1);
    }
    ex.export("memory", ExportKind::Memory, 0);
    m.section(&ex);
    let mut code = CodeSection::new();
    let mut f = Function::new([]);
    f.instructions().i32_const(1).end();
    code.function(&f);
    m.section(&code);
    let mut d = DataSection::new();
    d.active(0, &ConstExpr::i32_const(16), data.iter().copied());
    m.section(&d);
    m.finish()
}

fn policy_module() -> Vec<u8> {
    module(
        &["__guest_call", "wapc_init"],
        b"validate\0validate_settings\0protocol_version\0",
        ("wapc", "__guest_response"),
    )
}

const METADATA: &str = r#"
rules:
- apiGroups: ["apps.cozystack.io"]
  apiVersions: ["v1alpha1"]
  resources: ["*"]
  operations: ["CREATE", "UPDATE"]
mutating: false
contextAwareResources:
- apiVersion: instancetype.kubevirt.io/v1beta1
  kind: VirtualMachineClusterInstancetype
- apiVersion: cozystack.io/v1alpha1
  kind: ApplicationDefinition
executionMode: kubewarden-wapc
annotations:
  io.kubewarden.policy.title: demo
  io.kubewarden.policy.version: 0.1.0
"#;

fn annotate(wasm_in: &[u8], yaml: &str, opts: &AnnotateOptions) -> anyhow::Result<Vec<u8>> {
    let metadata = wasm::prepare_metadata(wasm_in, yaml, opts)?;
    wasm::annotate(wasm_in, &metadata)
}

#[test]
fn annotating_twice_gives_identical_bytes() {
    let input = policy_module();
    let a = annotate(&input, METADATA, &AnnotateOptions::default()).unwrap();
    let b = annotate(&input, METADATA, &AnnotateOptions::default()).unwrap();
    assert_eq!(a, b);
    // Annotating the annotated module again changes nothing either: the section is replaced.
    let c = annotate(&a, METADATA, &AnnotateOptions::default()).unwrap();
    assert_eq!(a, c);
    assert_eq!(wasm::metadata_sections(&c).unwrap().len(), 1);
}

#[test]
fn the_section_round_trips_in_kwctls_json_layout() {
    let input = policy_module();
    let opts = AnnotateOptions {
        usage: Some("use it".into()),
    };
    let expected = wasm::prepare_metadata(&input, METADATA, &opts).unwrap();
    let out = wasm::annotate(&input, &expected).unwrap();
    let sections = wasm::metadata_sections(&out).unwrap();
    assert_eq!(sections.len(), 1);
    // Field order, renames, sorted annotations, contextAwareResources sorted as a set, no
    // whitespace: `serde_json::to_vec` of policy-evaluator's Metadata.
    assert_eq!(
        String::from_utf8(sections[0].clone()).unwrap(),
        concat!(
            r#"{"protocolVersion":"v1","rules":[{"apiGroups":["apps.cozystack.io"],"apiVersions":["v1alpha1"],"resources":["*"],"operations":["CREATE","UPDATE"]}],"#,
            r#""annotations":{"io.kubewarden.policy.title":"demo","io.kubewarden.policy.usage":"use it","io.kubewarden.policy.version":"0.1.0"},"#,
            r#""mutating":false,"backgroundAudit":true,"executionMode":"kubewarden-wapc","policyType":"kubernetes","#,
            r#""contextAwareResources":[{"apiVersion":"cozystack.io/v1alpha1","kind":"ApplicationDefinition"},{"apiVersion":"instancetype.kubevirt.io/v1beta1","kind":"VirtualMachineClusterInstancetype"}]}"#
        )
    );
    let back = wasm::read_metadata(&out).unwrap().unwrap();
    assert_eq!(back, expected);
    assert_eq!(back.protocol_version, Some(ProtocolVersion::V1));
    // The custom section is the module's last section, as walrus (and so kwctl) places it, and
    // the rest of the module still parses.
    let mut last_custom = None;
    for payload in wasmparser::Parser::new(0).parse_all(&out) {
        match payload.unwrap() {
            wasmparser::Payload::CustomSection(c) => last_custom = Some(c.name().to_string()),
            wasmparser::Payload::End(_) => {}
            _ => last_custom = None,
        }
    }
    assert_eq!(last_custom.as_deref(), Some(METADATA_SECTION));
    wasmparser::Validator::new().validate_all(&out).unwrap();
}

#[test]
fn the_module_never_claims_kwctl_annotated_it() {
    let input = policy_module();
    let m = wasm::prepare_metadata(&input, METADATA, &AnnotateOptions::default()).unwrap();
    let annotations = m.annotations.unwrap();
    assert!(!annotations.contains_key("io.kubewarden.kwctl"));
    assert!(!annotations.contains_key("io.kubewarden.policy.usage"));
    // Not even when metadata.yml names a kwctl.
    let claiming = METADATA.replace(
        "annotations:\n",
        "annotations:\n  io.kubewarden.kwctl: 1.36.0\n",
    );
    let m = wasm::prepare_metadata(&input, &claiming, &AnnotateOptions::default()).unwrap();
    let annotations = m.annotations.unwrap();
    assert!(!annotations.contains_key("io.kubewarden.kwctl"));
    assert_eq!(annotations["io.kubewarden.policy.title"], "demo");
}

#[test]
fn javy_host_import_is_renamed_as_kwctl_does() {
    let input = module(
        &["__guest_call"],
        b"protocol_version",
        ("kubewarden:javy/host", "call"),
    );
    let out = annotate(&input, METADATA, &AnnotateOptions::default()).unwrap();
    let mut imports = vec![];
    for payload in wasmparser::Parser::new(0).parse_all(&out) {
        if let wasmparser::Payload::ImportSection(s) = payload.unwrap() {
            for imp in s.into_imports() {
                let imp = imp.unwrap();
                imports.push(format!("{}.{}", imp.module, imp.name));
            }
        }
    }
    assert_eq!(imports, ["host.call"]);
}

fn refusal(wasm_in: &[u8], yaml: &str) -> String {
    format!(
        "{:#}",
        annotate(wasm_in, yaml, &AnnotateOptions::default()).unwrap_err()
    )
}

#[test]
fn bad_metadata_is_refused_with_a_clear_message() {
    let input = policy_module();
    let base = "rules:\n- apiGroups: [\"apps.cozystack.io\"]\n  apiVersions: [v1alpha1]\n  resources: [\"*\"]\n  operations: [CREATE]\n";
    let cases: &[(String, &str)] = &[
        (base.to_string(), "missing field `mutating`"),
        ("mutating: false\n".to_string(), "missing field `rules`"),
        (
            base.replace("[CREATE]", "[CREATE, PATCH]") + "mutating: false\n",
            "unknown variant `PATCH`",
        ),
        (
            base.replace("[CREATE]", "[\"*\", CREATE]") + "mutating: false\n",
            "rules[0].operations: no other elements can be defined when '*' is used",
        ),
        (
            base.replace("[\"*\"]", "[\"*\", tenants]") + "mutating: false\n",
            "rules[0].resources: if '*' is present, must not specify other resources without subresources",
        ),
        (
            base.replace("[v1alpha1]", "[]") + "mutating: false\n",
            "rules[0].apiVersions: must list at least one entry",
        ),
        (
            base.to_string()
                + "mutating: false\ncontextAwareResources:\n- apiVersion: v1\n  kind: \"\"\n",
            "kind must not be empty",
        ),
        (
            base.to_string() + "mutating: false\nexecutionMode: kubewarden\n",
            "unknown variant `kubewarden`",
        ),
        (
            base.to_string() + "mutating: false\nexecutionMode: opa\n",
            "The policy has not been created using Rego",
        ),
        (
            base.to_string() + "mutating: no thanks\n",
            "mutating: invalid type",
        ),
    ];
    for (yaml, want) in cases {
        let err = refusal(&input, yaml);
        assert!(
            err.contains(want),
            "for\n{yaml}\nexpected {want:?} in {err:?}"
        );
    }
}

#[test]
fn a_module_that_is_no_kubewarden_wapc_policy_is_refused() {
    let meta = "rules: []\nmutating: false\n";
    let no_guest = module(
        &["wapc_init"],
        b"protocol_version",
        ("wapc", "__guest_response"),
    );
    assert!(refusal(&no_guest, meta).contains("does not export `__guest_call`"));
    let no_protocol = module(
        &["__guest_call"],
        b"validate\0",
        ("wapc", "__guest_response"),
    );
    assert!(
        refusal(&no_protocol, meta)
            .contains("does not register a `protocol_version` waPC function")
    );
    let rego = module(
        &["__guest_call", "opa_eval"],
        b"protocol_version",
        ("env", "opa_abort"),
    );
    assert!(refusal(&rego, meta).contains("This policy has been created using Rego"));
    assert!(
        refusal(b"\0asm\x01\0\0\0garbage", meta).contains("cannot parse the WebAssembly module")
    );
    // The same module declared as WASI is fine, with protocol Unknown as kwctl records it.
    let m = wasm::prepare_metadata(
        &no_guest,
        "rules: []\nmutating: false\nexecutionMode: wasi\n",
        &AnnotateOptions::default(),
    )
    .unwrap();
    assert_eq!(m.protocol_version, Some(ProtocolVersion::Unknown));
}

#[test]
fn the_repository_metadata_is_valid() {
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../metadata.yml"))
        .unwrap();
    let m = wasm::prepare_metadata(&policy_module(), &yaml, &AnnotateOptions::default()).unwrap();
    assert_eq!(m.rules.len(), 1);
    assert!(!m.mutating && m.background_audit);
    let kinds: Vec<&str> = m
        .context_aware_resources
        .iter()
        .map(|r| r.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "ApplicationDefinition",
            "HelmRelease",
            "VirtualMachineClusterInstancetype",
            "PoolReservation"
        ]
    );
    let _: Metadata = m;
}
