//! The proxy kubectl would use to reach the API server, chosen as client-go chooses it: the
//! kubeconfig cluster's `proxy-url`; else `HTTPS_PROXY` (an `https://` server) or `HTTP_PROXY`
//! (`http://`), lower-case names too, unless `NO_PROXY` covers the server's host; never for
//! `localhost` or a loopback address (Go's `httpproxy`).
//!
//! kube-rs matches `NO_PROXY` against the proxy's own address rather than the server's, so a
//! `NO_PROXY` that covers the server does not keep its requests off the proxy; hence this.

use std::net::IpAddr;

use anyhow::{Context, Result};
use http::Uri;

/// The proxy for `server`: `declared` (the kubeconfig's `proxy-url`), else the environment's
/// as `env` reads it.
pub fn proxy_for(
    server: &Uri,
    declared: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Uri>> {
    if let Some(url) = declared.filter(|u| !u.is_empty()) {
        return parse(url, "the kubeconfig's proxy-url").map(Some);
    }
    let read = |names: [&str; 2]| {
        names
            .into_iter()
            .find_map(|n| env(n).filter(|v| !v.is_empty()))
    };
    let proxy = match server.scheme_str() {
        Some("http") => read(["HTTP_PROXY", "http_proxy"]),
        _ => read(["HTTPS_PROXY", "https_proxy"]),
    };
    let Some(proxy) = proxy else {
        return Ok(None);
    };
    let host = server.host().unwrap_or_default();
    let port = server.port_u16().unwrap_or(match server.scheme_str() {
        Some("http") => 80,
        _ => 443,
    });
    let no_proxy = read(["NO_PROXY", "no_proxy"]).unwrap_or_default();
    if bypassed(host, port, &no_proxy) {
        return Ok(None);
    }
    parse(&proxy, "HTTPS_PROXY/HTTP_PROXY").map(Some)
}

fn parse(url: &str, what: &str) -> Result<Uri> {
    // As Go: a proxy without a scheme is an http:// one.
    let url = if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    };
    url.parse()
        .with_context(|| format!("{what} {url:?} is not a URL"))
}

/// Whether requests to `host:port` go direct: a loopback host, or one `no_proxy` covers.
pub fn bypassed(host: &str, port: u16, no_proxy: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    if host == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) {
        return true;
    }
    no_proxy
        .split(',')
        .map(|entry| entry.trim().to_lowercase())
        .filter(|entry| !entry.is_empty())
        .any(|entry| covers(&entry, &host, ip, port))
}

/// One `NO_PROXY` entry: `*`, an address or a CIDR range, or a domain (`example.com` is it and
/// its subdomains; `.example.com` and `*.example.com` its subdomains only), each with an
/// optional `:port`.
fn covers(entry: &str, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
    if entry == "*" {
        return true;
    }
    if let Some((network, bits)) = entry.split_once('/') {
        return match (network.parse::<IpAddr>(), bits.parse::<u32>(), ip) {
            (Ok(network), Ok(bits), Some(ip)) => in_range(ip, network, bits),
            _ => false,
        };
    }
    if let Ok(address) = entry
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return ip == Some(address);
    }
    let (name, wanted_port) = match entry.rsplit_once(':') {
        Some((name, p)) => match p.parse::<u16>() {
            Ok(p) => (name, Some(p)),
            Err(_) => return false,
        },
        None => (entry, None),
    };
    if wanted_port.is_some_and(|p| p != port) {
        return false;
    }
    if let Ok(address) = name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return ip == Some(address);
    }
    let name = name.strip_prefix('*').unwrap_or(name);
    match name.strip_prefix('.') {
        Some(suffix) => host.ends_with(&format!(".{suffix}")),
        None => host == name || host.ends_with(&format!(".{name}")),
    }
}

fn in_range(ip: IpAddr, network: IpAddr, bits: u32) -> bool {
    match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(network)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(network) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(network)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn chosen(server: &str, declared: Option<&str>, env: &[(&str, &str)]) -> Option<String> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        proxy_for(&server.parse().unwrap(), declared, |n| env.get(n).cloned())
            .unwrap()
            .map(|u| u.to_string())
    }

    #[test]
    fn the_proxy_is_chosen_as_kubectl_chooses_it() {
        let proxy = [("HTTPS_PROXY", "http://proxy.corp:3128")];
        let api = "https://api.corp.example:6443";
        assert_eq!(
            chosen(api, None, &proxy).as_deref(),
            Some("http://proxy.corp:3128/")
        );
        assert_eq!(chosen(api, None, &[]), None);
        // The kubeconfig's proxy-url wins, even for loopback, and NO_PROXY does not apply.
        let declared = Some("socks5://127.0.0.1:1080");
        assert_eq!(
            chosen("https://127.0.0.1:6443", declared, &[("NO_PROXY", "*")]).as_deref(),
            Some("socks5://127.0.0.1:1080/")
        );
        // HTTP_PROXY is for http:// servers; lower-case names are read too; no scheme is http.
        assert_eq!(chosen(api, None, &[("HTTP_PROXY", "http://p:1")]), None);
        assert_eq!(
            chosen("http://api.corp.example", None, &[("http_proxy", "p:1")]).as_deref(),
            Some("http://p:1/")
        );
        assert_eq!(
            chosen(api, None, &[("https_proxy", "http://p:2")]).as_deref(),
            Some("http://p:2/")
        );
        // Never to loopback; NO_PROXY covering the server (the reported failure).
        assert_eq!(chosen("https://127.0.0.1:6443", None, &proxy), None);
        assert_eq!(chosen("https://localhost:6443", None, &proxy), None);
        let covered = [proxy[0], ("NO_PROXY", "10.0.0.0/8, .example")];
        assert_eq!(chosen(api, None, &covered), None);
        assert!(
            proxy_for(&api.parse().unwrap(), None, |n| (n == "HTTPS_PROXY")
                .then(|| "http://bad host".into()))
            .is_err()
        );
    }

    #[test]
    fn no_proxy_entries_read_as_go_reads_them() {
        for (host, port, no_proxy, expected) in [
            ("api.corp.example", 6443, "*", true),
            ("api.corp.example", 6443, "corp.example", true),
            ("corp.example", 6443, "corp.example", true),
            ("corp.example", 6443, ".corp.example", false),
            ("api.corp.example", 6443, ".corp.example", true),
            ("api.corp.example", 6443, "*.corp.example", true),
            ("xcorp.example", 6443, "corp.example", false),
            ("api.corp.example", 6443, "corp.example:6443", true),
            ("api.corp.example", 6443, "corp.example:443", false),
            ("10.1.2.3", 6443, "10.0.0.0/8", true),
            ("11.1.2.3", 6443, "10.0.0.0/8", false),
            ("10.1.2.3", 6443, "10.1.2.3", true),
            ("10.1.2.3", 6443, "10.1.2.4,  10.1.2.3:6443", true),
            ("[fd00::1]", 6443, "fd00::/8", true),
            ("192.168.1.1", 6443, "", false),
            ("127.0.0.1", 6443, "", true),
            ("[::1]", 6443, "", true),
            ("LOCALHOST", 6443, "", true),
            ("api.corp.example", 6443, "0.0.0.0/0", false),
        ] {
            assert_eq!(
                bypassed(host, port, no_proxy),
                expected,
                "{host}:{port} NO_PROXY={no_proxy}"
            );
        }
    }
}
