//! A local stand-in for the Kubernetes API server: the LIST endpoints of custom resources
//! (`/apis/<group>/<version>[/namespaces/<ns>]/<plural>`), answered from a host-sim store with
//! label and field selectors and `limit`/`continue` pagination, one connection per request.
//! Every request is recorded (method, path and query, Authorization header); anything but a
//! GET is refused with 405; plurals listed in `forbidden` answer 403 as the API server does.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use host_sim::{ListQuery, ObjectStore};
use serde_json::{Value, json};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub authorization: Option<String>,
}

pub struct MockApi {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// The plurals served, and their kinds.
const KINDS: [(&str, &str); 3] = [
    ("applicationdefinitions", "ApplicationDefinition"),
    ("helmreleases", "HelmRelease"),
    (
        "virtualmachineclusterinstancetypes",
        "VirtualMachineClusterInstancetype",
    ),
];

impl MockApi {
    /// Serves `store` on 127.0.0.1, `page` items at most per response.
    pub fn serve(store: ObjectStore, forbidden: &[&str], page: usize) -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let port = listener.local_addr().expect("an address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let forbidden: Vec<String> = forbidden.iter().map(|s| s.to_string()).collect();
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                handle(stream, &store, &forbidden, page, &log);
            }
        });
        MockApi { port, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("the log").clone()
    }

    /// A kubeconfig pointing at this server over plain HTTP with a bearer token.
    pub fn kubeconfig(&self, token: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: mock\n  cluster:\n    server: http://127.0.0.1:{}\ncontexts:\n- name: mock\n  context:\n    cluster: mock\n    user: reader\n- name: other\n  context:\n    cluster: mock\n    user: nobody\ncurrent-context: mock\nusers:\n- name: reader\n  user:\n    token: {token}\n- name: nobody\n  user:\n    token: wrong\n",
            self.port
        )
    }
}

fn handle(
    mut stream: TcpStream,
    store: &ObjectStore,
    forbidden: &[String],
    page: usize,
    log: &Mutex<Vec<Seen>>,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("a stream"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut authorization = None;
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => break,
            Ok(_) if header.trim().is_empty() => break,
            Ok(_) => {
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    authorization = Some(value.trim().to_string());
                }
            }
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    log.lock().expect("the log").push(Seen {
        method: method.clone(),
        target: target.clone(),
        authorization: authorization.clone(),
    });
    let (code, body) = if method != "GET" {
        (405, status(405, "MethodNotAllowed", "read-only stand-in"))
    } else if authorization.as_deref() == Some("Bearer wrong") {
        (401, status(401, "Unauthorized", "Unauthorized"))
    } else {
        answer(&target, store, forbidden, page)
    };
    let reason = match code {
        200 => "OK",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let body = body.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

fn not_found() -> (u16, Value) {
    let message = "the server could not find the requested resource";
    (404, status(404, "NotFound", message))
}

fn answer(target: &str, store: &ObjectStore, forbidden: &[String], page: usize) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let params: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, namespace, plural) = match segments.as_slice() {
        ["apis", group, version, plural] => (*group, *version, None, *plural),
        ["apis", group, version, "namespaces", ns, plural] => {
            (*group, *version, Some(*ns), *plural)
        }
        _ => return not_found(),
    };
    let Some((_, kind)) = KINDS.iter().find(|(p, _)| *p == plural) else {
        return not_found();
    };
    if forbidden.iter().any(|f| f == plural) {
        let scope = namespace.map_or("at the cluster scope".to_string(), |ns| {
            format!("in the namespace \"{ns}\"")
        });
        let message = format!(
            "{plural}.{group} is forbidden: User \"reader\" cannot list resource \"{plural}\" in API group \"{group}\" {scope}"
        );
        return (403, status(403, "Forbidden", &message));
    }
    let api_version = format!("{group}/{version}");
    let mut query = match namespace {
        Some(ns) => ListQuery::in_namespace(api_version.clone(), *kind, ns),
        None => ListQuery::all(api_version.clone(), *kind),
    };
    query.label_selector = param("labelSelector");
    query.field_selector = param("fieldSelector");
    let list = match store.list(&query, None) {
        Ok(list) => list,
        Err(e) => return (400, status(400, "BadRequest", &e.to_string())),
    };
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let limit = param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(usize::MAX)
        .min(page);
    let offset = param("continue")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let end = offset.saturating_add(limit).min(items.len());
    let mut metadata = json!({"resourceVersion": list["metadata"]["resourceVersion"]});
    if end < items.len() {
        metadata["continue"] = json!(end.to_string());
    }
    (
        200,
        json!({
            "apiVersion": api_version,
            "kind": format!("{kind}List"),
            "metadata": metadata,
            "items": items.get(offset..end).unwrap_or_default(),
        }),
    )
}

/// URL query decoding: `%XX` and `+`.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
