#!/usr/bin/env bash
# What `kubectl apply -k` installs, rendered and validated:
#   1. every variant renders (`kubectl kustomize`): deploy/ (the default install), deploy/ with
#      each component, and examples/install/ (every knob);
#   2. each rendered install is what it claims: the one ClusterAdmissionPolicy
#      tenant-reservation, on PolicyServer tenant-reservation, whose ServiceAccount and
#      binding subjects sit in the expected namespace;
#   3. each is accepted by a real API server with the real Kubewarden CRDs and the Kubernetes
#      schemas (`kubectl apply --dry-run=server`, scripts/cluster/control-plane.sh); skipped
#      with one line when control-plane.sh check finds no etcd/kube-apiserver.
# Needs kubectl (it embeds kustomize).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/portable.sh
source scripts/portable.sh

command -v kubectl >/dev/null || { echo "check-install: kubectl not found" >&2; exit 1; }
work=$(mktemp -d)
cp_dir=$work/cp
cleanup() {
    [ -d "$cp_dir" ] && bash scripts/cluster/control-plane.sh down "$cp_dir" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# variant name -> kustomization dir, expected namespace, expected mode, verification
variants=()
add_component_variant() { # NAME COMPONENT...
    local name=$1 dir=$work/$1
    shift
    mkdir -p "$dir"
    {
        echo "apiVersion: kustomize.config.k8s.io/v1beta1"
        echo "kind: Kustomization"
        echo "resources: [$(relpath deploy "$dir")]"
        echo "components:"
        for c in "$@"; do echo "  - $(relpath "deploy/components/$c" "$dir")"; done
    } >"$dir/kustomization.yaml"
    variants+=("$name|$dir")
}
variants+=("default|deploy")
add_component_variant protect protect
add_component_variant verify-signatures verify-signatures
add_component_variant protect+verify-signatures protect verify-signatures
variants+=("example|examples/install")

fail=0
for v in "${variants[@]}"; do
    name=${v%%|*} dir=${v#*|}
    out=$work/$name.yaml
    if ! kubectl kustomize "$dir" >"$out"; then
        echo "FAIL $name: kubectl kustomize $dir"
        fail=1
        continue
    fi
    if ! python3 - "$name" "$out" <<'PY'; then
import sys, yaml
name, path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
problems = []
def need(key):
    if key not in by:
        problems.append(f"no {key[0]} {key[1]}")
    return by.get(key, {})
cap = need(("ClusterAdmissionPolicy", "tenant-reservation"))
ps = need(("PolicyServer", "tenant-reservation"))
sa = need(("ServiceAccount", "tenant-reservation-policy-server"))
ns = sa.get("metadata", {}).get("namespace")
want_ns = "cattle-kubewarden-system" if name == "example" else "kubewarden"
if ns != want_ns:
    problems.append(f"ServiceAccount in {ns!r}, not {want_ns!r}")
for crb in ("tenant-reservation-policy-server", "tenant-reservation-audit-scanner"):
    for s in need(("ClusterRoleBinding", crb)).get("subjects", []):
        if s.get("namespace") != want_ns:
            problems.append(f"ClusterRoleBinding {crb}: subject {s['name']} in {s.get('namespace')!r}")
spec = cap.get("spec", {})
if spec.get("policyServer") != "tenant-reservation":
    problems.append(f"policyServer {spec.get('policyServer')!r}")
if ps.get("spec", {}).get("serviceAccountName") != "tenant-reservation-policy-server":
    problems.append("PolicyServer serviceAccountName")
want_mode = "protect" if ("protect" in name or name == "example") else "monitor"
if spec.get("mode") != want_mode:
    problems.append(f"mode {spec.get('mode')!r}, not {want_mode!r}")
verify = "verify" in name or name == "example"
vc = ps.get("spec", {}).get("verificationConfig")
if verify:
    cm = need(("ConfigMap", vc or "?"))
    if "verification-config" not in cm.get("data", {}):
        problems.append("no verification-config key in the ConfigMap")
    if cm.get("metadata", {}).get("namespace") != want_ns:
        problems.append("the verification ConfigMap is not in the controller's namespace")
elif vc:
    problems.append("verificationConfig set without the component")
if not (2 <= spec.get("timeoutEvalSeconds", 0) < spec.get("timeoutSeconds", 0) <= 30):
    problems.append("timeouts: want 2 <= timeoutEvalSeconds < timeoutSeconds <= 30")
if problems:
    print(f"FAIL {name}: " + "; ".join(problems))
    sys.exit(1)
PY
        fail=1
        continue
    fi
    echo "ok   $name: renders ($(grep -c '^kind:' "$out") objects)"
done
[ "$fail" = 0 ] || exit 1

# Settings of every variant: the policy's own validate_settings runs on each rendered variant in
# tests/it/install.rs (make test); here the API server checks the objects against the CRDs'
# schemas.
if ! why=$(bash scripts/cluster/control-plane.sh check 2>&1); then
    echo "skip server-side validation: $why"
    exit 0
fi
bash scripts/cluster/control-plane.sh up "$cp_dir" >/dev/null
# shellcheck disable=SC1091
source "$cp_dir/env"
for ns in kubewarden cattle-kubewarden-system; do
    kubectl create namespace "$ns" >/dev/null
done
for v in "${variants[@]}"; do
    name=${v%%|*}
    if kubectl apply --dry-run=server -f "$work/$name.yaml" >"$work/$name.out" 2>&1; then
        echo "ok   $name: accepted by kube-apiserver with the real CRDs (dry run)"
    else
        echo "FAIL $name: kube-apiserver refused it:"
        sed 's/^/    /' "$work/$name.out"
        fail=1
    fi
done
exit "$fail"
