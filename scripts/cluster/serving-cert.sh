#!/usr/bin/env bash
# serving-cert.sh PKI NAME IPS DNS: a TLS serving certificate PKI/NAME.{crt,key} signed by
# PKI/ca.{crt,key}, valid for the comma-separated IP addresses IPS and DNS names DNS (either may
# be empty). The API server's certificate and a test's policy-server use it.
set -euo pipefail
pki=${1:?usage: serving-cert.sh PKI NAME IPS DNS} name=${2:?} ips=${3:-} dns=${4:-}

san=()
IFS=, read -ra list <<<"$ips"
for ip in "${list[@]}"; do [ -n "$ip" ] && san+=("IP:$ip"); done
IFS=, read -ra list <<<"$dns"
for d in "${list[@]}"; do [ -n "$d" ] && san+=("DNS:$d"); done
alt=$(IFS=,; echo "${san[*]}")

openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" \
    -keyout "$pki/$name.key" -out "$pki/$name.csr" 2>/dev/null
openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -out "$pki/$name.crt" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$alt") 2>/dev/null
rm -f "$pki/$name.csr"
