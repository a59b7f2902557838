//! A tiny waPC guest written in WAT, for testing (and benchmarking) the host without a real
//! policy. It implements the waPC guest ABI (`__guest_call` exported; `wapc.__guest_request`,
//! `__guest_response`, `__guest_error`, `__host_call`, `__host_response(_len)`,
//! `__host_error(_len)`, `__console_log` imported) and behaves like this:
//!
//! * `validate_settings`: invalid (`{"valid":false,"message":"settings rejected by the test guest"}`)
//!   when the settings JSON starts with `{"invalid"`, valid otherwise.
//! * `validate`: optionally traps or fails with `__guest_error`; optionally logs through
//!   `kubewarden/tracing/log`; then makes the configured host calls in order. If one fails it
//!   answers `{"accepted":false,"message":"<that host error>"}`; otherwise
//!   `{"accepted":true,"warnings":["<answer 1>", ...]}` (answers JSON-escaped, control bytes
//!   replaced by spaces), plus `"mutated_object"` when configured.
//! * `protocol_version`: `"v1"`.
//!
//! Limits: the request must fit in 1 MiB, each host answer in 2 MiB.
//!
//! The text is accepted as is by `replay_runner::Host::from_bytes` (wasmtime reads WAT), or can
//! be compiled with the `wat` crate.
//!
//! Shared by the integration tests (`mod test_guest;` in each).

use std::fmt::Write as _;

/// One host call the guest makes during `validate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestHostCall {
    pub binding: String,
    pub namespace: String,
    pub operation: String,
    pub payload: Vec<u8>,
}

impl GuestHostCall {
    /// A `kubewarden/kubernetes/<operation>` call with a JSON payload.
    pub fn kubernetes(operation: &str, payload: &serde_json::Value) -> Self {
        GuestHostCall {
            binding: "kubewarden".into(),
            namespace: "kubernetes".into(),
            operation: operation.into(),
            payload: serde_json::to_vec(payload).expect("JSON serializes"),
        }
    }

    /// `list_resources_all` as kubewarden-policy-sdk 0.17 serializes it.
    pub fn list_all(api_version: &str, kind: &str, label_selector: Option<&str>) -> Self {
        Self::kubernetes(
            "list_resources_all",
            &serde_json::json!({
                "api_version": api_version,
                "kind": kind,
                "label_selector": label_selector,
                "field_selector": null,
                "field_masks": null,
            }),
        )
    }
}

/// What the test guest does; see the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestGuest {
    pub calls: Vec<GuestHostCall>,
    /// Log this message (level info) through the SDK's log host call first.
    pub log_message: Option<String>,
    /// Trap (`unreachable`) at the start of `validate`, like a Rust panic does.
    pub trap_in_validate: bool,
    /// Fail `validate` with `__guest_error(message)`.
    pub guest_error: Option<String>,
    /// Raw JSON added as `mutated_object` to an accepting answer.
    pub mutated_object: Option<String>,
}

const OP_BUF: usize = 0x1_0000;
const REQ_BUF: usize = 0x1_0400;
const HOST_BUF: usize = 0x20_0000;
const OUT_BUF: usize = 0x40_0000;
const PAGES: usize = 256; // 16 MiB

struct Data {
    next: usize,
    segments: String,
    interned: std::collections::BTreeMap<Vec<u8>, (usize, usize)>,
}

impl Data {
    /// Like `add`, but shares one copy of repeated strings.
    fn intern(&mut self, bytes: &[u8]) -> (usize, usize) {
        if let Some(at) = self.interned.get(bytes) {
            return *at;
        }
        let at = self.add(bytes);
        self.interned.insert(bytes.to_vec(), at);
        at
    }

    /// `(call $host_call ...)` for `c`.
    fn host_call(&mut self, c: &GuestHostCall) -> String {
        let b = self.intern(c.binding.as_bytes());
        let n = self.intern(c.namespace.as_bytes());
        let o = self.intern(c.operation.as_bytes());
        let p = self.add(&c.payload);
        format!(
            "(call $host_call (i32.const {}) (i32.const {}) (i32.const {}) (i32.const {}) (i32.const {}) (i32.const {}) (i32.const {}) (i32.const {}))",
            b.0, b.1, n.0, n.1, o.0, o.1, p.0, p.1
        )
    }

    fn add(&mut self, bytes: &[u8]) -> (usize, usize) {
        let at = self.next;
        let mut escaped = String::with_capacity(bytes.len() * 3);
        for b in bytes {
            write!(escaped, "\\{b:02x}").unwrap();
        }
        writeln!(self.segments, "  (data (i32.const {at}) \"{escaped}\")").unwrap();
        self.next += bytes.len().max(1);
        assert!(
            self.next < OP_BUF,
            "test guest constants do not fit below {OP_BUF:#x}"
        );
        (at, bytes.len())
    }
}

impl TestGuest {
    pub fn with_calls(calls: Vec<GuestHostCall>) -> Self {
        TestGuest {
            calls,
            ..Default::default()
        }
    }

    /// The module, as WAT text.
    pub fn wat(&self) -> String {
        let mut data = Data {
            next: 16,
            segments: String::new(),
            interned: Default::default(),
        };
        let unknown = data.add(b"test guest: unknown operation");
        let valid = data.add(br#"{"valid":true,"message":null}"#);
        let invalid =
            data.add(br#"{"valid":false,"message":"settings rejected by the test guest"}"#);
        let protocol = data.add(br#""v1""#);
        let fail_prefix = data.add(br#"{"accepted":false,"message":""#);
        let fail_suffix = data.add(br#""}"#);
        let mut ok_prefix = String::from(r#"{"accepted":true"#);
        if let Some(m) = &self.mutated_object {
            write!(ok_prefix, r#","mutated_object":{m}"#).unwrap();
        }
        if !self.calls.is_empty() {
            ok_prefix.push_str(r#","warnings":["#);
        }
        let ok_prefix = data.add(ok_prefix.as_bytes());
        let ok_suffix = data.add(if self.calls.is_empty() { b"}" } else { b"]}" });

        let mut body = String::new();
        if self.trap_in_validate {
            body.push_str("    unreachable\n");
        }
        if let Some(message) = &self.guest_error {
            let (p, l) = data.add(message.as_bytes());
            writeln!(body, "    (call $guest_error (i32.const {p}) (i32.const {l}))\n    (return (i32.const 0))").unwrap();
        }
        if let Some(message) = &self.log_message {
            let log = GuestHostCall {
                binding: "kubewarden".into(),
                namespace: "tracing".into(),
                operation: "log".into(),
                payload: serde_json::to_vec(
                    &serde_json::json!({"level": "info", "message": message}),
                )
                .expect("JSON serializes"),
            };
            writeln!(body, "    (drop {})", data.host_call(&log)).unwrap();
        }
        writeln!(
            body,
            "    (call $emit (i32.const {}) (i32.const {}))",
            ok_prefix.0, ok_prefix.1
        )
        .unwrap();
        for (i, c) in self.calls.iter().enumerate() {
            let call = data.host_call(c);
            writeln!(
                body,
                "    (if (i32.eqz {call}) (then (return (call $fail))))"
            )
            .unwrap();
            if i > 0 {
                body.push_str("    (call $emit_byte (i32.const 44))\n");
            }
            writeln!(
                body,
                "    (call $emit_byte (i32.const 34))\n    (call $host_response (i32.const {HOST_BUF}))\n    (call $emit_escaped (i32.const {HOST_BUF}) (call $host_response_len))\n    (call $emit_byte (i32.const 34))"
            )
            .unwrap();
        }
        writeln!(
            body,
            "    (call $emit (i32.const {}) (i32.const {}))",
            ok_suffix.0, ok_suffix.1
        )
        .unwrap();
        body.push_str("    (call $respond)\n    (i32.const 1)\n");

        format!(
            r#"(module
  (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
  (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
  (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
  (import "wapc" "__host_call" (func $host_call (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wapc" "__host_response" (func $host_response (param i32)))
  (import "wapc" "__host_response_len" (func $host_response_len (result i32)))
  (import "wapc" "__host_error" (func $host_error (param i32)))
  (import "wapc" "__host_error_len" (func $host_error_len (result i32)))
  (import "wapc" "__console_log" (func $console_log (param i32 i32)))
  (memory (export "memory") {PAGES})
{segments}  (global $out (mut i32) (i32.const {OUT_BUF}))

  (func $emit (param $ptr i32) (param $len i32)
    (memory.copy (global.get $out) (local.get $ptr) (local.get $len))
    (global.set $out (i32.add (global.get $out) (local.get $len))))

  (func $emit_byte (param $b i32)
    (i32.store8 (global.get $out) (local.get $b))
    (global.set $out (i32.add (global.get $out) (i32.const 1))))

  (func $emit_escaped (param $ptr i32) (param $len i32) (local $i i32) (local $b i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $b (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (if (i32.or (i32.eq (local.get $b) (i32.const 34)) (i32.eq (local.get $b) (i32.const 92)))
          (then (call $emit_byte (i32.const 92)) (call $emit_byte (local.get $b)))
          (else
            (if (i32.lt_u (local.get $b) (i32.const 32))
              (then (call $emit_byte (i32.const 32)))
              (else (call $emit_byte (local.get $b))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))

  (func $respond
    (call $guest_response (i32.const {OUT_BUF}) (i32.sub (global.get $out) (i32.const {OUT_BUF}))))

  (func $fail (result i32)
    (global.set $out (i32.const {OUT_BUF}))
    (call $emit (i32.const {fp}) (i32.const {fl}))
    (call $host_error (i32.const {HOST_BUF}))
    (call $emit_escaped (i32.const {HOST_BUF}) (call $host_error_len))
    (call $emit (i32.const {fsp}) (i32.const {fsl}))
    (call $respond)
    (i32.const 1))

  (func $validate (result i32)
{body}  )

  (func $validate_settings (param $len i32) (result i32)
    (if (i32.and
          (i32.ge_u (local.get $len) (i32.const 10))
          (i32.and
            (i32.eq (i32.load8_u (i32.const {q})) (i32.const 34))
            (i32.eq (i32.load8_u (i32.const {i})) (i32.const 105))))
      (then (call $emit (i32.const {ip}) (i32.const {il})))
      (else (call $emit (i32.const {vp}) (i32.const {vl}))))
    (call $respond)
    (i32.const 1))

  (func (export "wapc_init"))

  (func (export "__guest_call") (param $op_len i32) (param $req_len i32) (result i32)
    (call $guest_request (i32.const {OP_BUF}) (i32.const {REQ_BUF}))
    (global.set $out (i32.const {OUT_BUF}))
    (if (i32.eq (local.get $op_len) (i32.const 8)) (then (return (call $validate))))
    (if (i32.eq (local.get $op_len) (i32.const 17)) (then (return (call $validate_settings (local.get $req_len)))))
    (if (i32.eq (local.get $op_len) (i32.const 16))
      (then
        (call $emit (i32.const {pp}) (i32.const {pl}))
        (call $respond)
        (return (i32.const 1))))
    (call $guest_error (i32.const {up}) (i32.const {ul}))
    (i32.const 0))
)
"#,
            segments = data.segments,
            fp = fail_prefix.0,
            fl = fail_prefix.1,
            fsp = fail_suffix.0,
            fsl = fail_suffix.1,
            q = REQ_BUF + 1,
            i = REQ_BUF + 2,
            ip = invalid.0,
            il = invalid.1,
            vp = valid.0,
            vl = valid.1,
            pp = protocol.0,
            pl = protocol.1,
            up = unknown.0,
            ul = unknown.1,
        )
    }
}
