#!/usr/bin/env python3
"""The policy in the real engine: kwctl (live) and policy-server against a real control plane
holding a generated cluster (`bench --dump`). Prints figures; asserts nothing about time.

    bench_cluster.py --dump DIR --module NAME=annotated.wasm [--module ...] [--pools 20,1000,10000]

For each pool: control-plane.sh up, load.py, then for each module:
  - cold, kwctl: `kwctl run` live (a fresh engine per run: wasm compiled, reflectors made);
  - cold, policy-server: a fresh policy-server, its first AdmissionReview (CREATE) timed;
  - warm: sequential requests to that policy-server (p50, p99);
  - writes/s (pool of 20 only): parallel clients for a few seconds;
  - reflectors: the API server's WATCH and LIST requests on HelmReleases during the cold request,
    from /metrics apiserver_request_total; policy-server's RSS after the warm series;
  - with --warm-up-namespace NS: the cold write again on fresh policy-servers that first answered
    the same object written into NS (another pool), as a warm-up after a rollout would;
  - with --permission-check: each module a second time, as deploy/ ships it: deploy/'s RBAC
    applied and `policyServerUser` set to its ServiceAccount (the dump's settings leave it out),
    so each write asks for policy-server's permissions first (SubjectAccessReviews, kept 5 s).
policy-server runs as the controller configures it (policies.yml keyed by the policy id,
contextAwareResources of deploy/, hostCapabilities ["*"], --policy-timeout as given), with the
control plane's admin kubeconfig, TLS from the run's CA, and is fed over HTTPS at
/validate/<policy id>.
"""
import argparse
import copy
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

import requests
import urllib3

urllib3.disable_warnings()

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
POLICY_ID = "clusterwide-tenant-reservation"
CONTEXT_AWARE = [
    {"apiVersion": "cozystack.io/v1alpha1", "kind": "ApplicationDefinition"},
    {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease"},
    {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": "VirtualMachineClusterInstancetype"},
    {"apiVersion": "reservations.cozystack.io/v1alpha1", "kind": "PoolReservation"},
]


def tool(name):
    return subprocess.run(["bash", os.path.join(HERE, "find-tool.sh"), name],
                          capture_output=True, text=True, check=True).stdout.strip()


def apply_deployed_rbac(env):
    """deploy/policyserver.yaml's ServiceAccount, ClusterRole and binding, applied; the
    ServiceAccount's user name (what deploy/clusteradmissionpolicy.yaml sets as policyServerUser)."""
    import yaml
    docs = [d for d in yaml.safe_load_all(open(os.path.join(REPO, "deploy", "policyserver.yaml")))
            if d and d["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")]
    account = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": account["namespace"]}}
    subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [namespace] + docs}), text=True,
        env=dict(os.environ, **env), check=True, stdout=subprocess.DEVNULL)
    return f"system:serviceaccount:{account['namespace']}:{account['name']}"


def store_summaries(env, ledger, settings, work):
    """Every pool's PoolReservation as `ledger --summaries` computes it from the loaded cluster,
    stored with deploy/pool-summary's CRD (object, then status), as the controller will keep
    them; the seconds the ledger took."""
    kube = dict(os.environ, **env)
    run = lambda *cmd, **kw: subprocess.run(list(cmd), env=kube, check=True, **kw)
    run("kubectl", "apply", "-f", os.path.join(REPO, "deploy", "pool-summary", "poolreservation-crd.yaml"),
        stdout=subprocess.DEVNULL)
    run("kubectl", "wait", "--for", "condition=established", "--timeout=60s",
        "crd/poolreservations.reservations.cozystack.io", stdout=subprocess.DEVNULL)
    settings_file = os.path.join(work, "summary-settings.json")
    with open(settings_file, "w") as f:
        json.dump(settings, f)
    t = time.monotonic()
    out = run(ledger, "ledger", "--kubeconfig", env["KUBECONFIG"], "--settings", settings_file,
              "--summaries", "-o", "json", capture_output=True, text=True).stdout
    took = time.monotonic() - t
    path = os.path.join(work, "summaries.json")
    with open(path, "w") as f:
        f.write(out)
    run("kubectl", "apply", "--server-side", "-f", path, stdout=subprocess.DEVNULL)
    run("kubectl", "apply", "--server-side", "--subresource=status", "-f", path, stdout=subprocess.DEVNULL)
    return took, len(out)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def source_env(path):
    env = {}
    for line in open(path):
        m = re.match(r'export (\w+)="(.*)"', line.strip())
        if m:
            env[m.group(1)] = m.group(2)
    return env


def seconds(xs):
    return "/".join(f"{x:.2f}" for x in xs)


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    k = min(len(v) - 1, max(0, int(round(p / 100 * len(v) + 0.5)) - 1))
    return v[k]


def metrics(env):
    """apiserver_request_total for HelmReleases, by verb."""
    r = requests.get(env["APISERVER_URL"] + "/metrics", verify=False,
                     headers={"Authorization": "Bearer " + env["ADMIN_TOKEN"]}, timeout=30)
    out = {}
    for line in r.text.splitlines():
        value = line.rsplit(" ", 1)[-1]
        if line.startswith("apiserver_request_total{"):
            out["ALL"] = out.get("ALL", 0) + float(value)
            if 'resource="helmreleases"' in line:
                verb = re.search(r'verb="(\w+)"', line).group(1)
                out[verb] = out.get(verb, 0) + float(value)
        elif (line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line
              and 'resource="helmreleases"' in line):
            out["WATCHES_OPEN"] = out.get("WATCHES_OPEN", 0) + float(value)
    return out


def delta(after, before):
    """Requests made in between (WATCH: the HelmRelease watches opened, i.e. reflectors)."""
    out = {k: int(after.get(k, 0) - before.get(k, 0)) for k in ("LIST", "ALL")}
    out["WATCH"] = int(after.get("WATCHES_OPEN", 0) - before.get("WATCHES_OPEN", 0))
    return out


def verdict(body):
    resp = body.get("response", {})
    if resp.get("allowed"):
        return "allowed"
    msg = (resp.get("status") or {}).get("message", "")
    return "REFUSED: " + msg[:120]


class PolicyServer:
    def __init__(self, cp_dir, env, module, settings, timeout, tag):
        self.dir = os.path.join(cp_dir, "ps-" + tag)
        os.makedirs(self.dir, exist_ok=True)
        pki = os.path.join(cp_dir, "pki")
        if not os.path.exists(os.path.join(pki, "policy-server.crt")):
            subprocess.run(["bash", os.path.join(HERE, "serving-cert.sh"), pki, "policy-server",
                            "127.0.0.1", "localhost"], check=True)
        policies = {POLICY_ID: {
            "namespacedName": {"Namespace": "", "Name": "tenant-reservation"},
            "module": "file://" + os.path.abspath(module),
            "policyMode": "protect", "allowedToMutate": False,
            "contextAwareResources": CONTEXT_AWARE, "settings": settings,
            "hostCapabilities": ["*"]}}
        with open(os.path.join(self.dir, "policies.yml"), "w") as f:
            json.dump(policies, f)
        self.port, ready = free_port(), free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        cmd = [tool("policy-server"), "--policies", os.path.join(self.dir, "policies.yml"),
               "--policies-download-dir", self.dir, "--addr", "127.0.0.1",
               "--port", str(self.port), "--readiness-probe-port", str(ready),
               "--cert-file", os.path.join(pki, "policy-server.crt"),
               "--key-file", os.path.join(pki, "policy-server.key"),
               "--policy-timeout", str(timeout), "--log-level", "warn",
               "--sigstore-trust-config", os.path.join(os.path.dirname(tool("kwctl")), "offline-trust-config.json"),
               "--sigstore-cache-dir", os.path.join(self.dir, "sigstore")]
        penv = dict(os.environ, KUBECONFIG=env["KUBECONFIG"])
        self.log = open(os.path.join(self.dir, "policy-server.log"), "w")
        self.proc = subprocess.Popen(cmd, env=penv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"policy-server exited; see {self.log.name}")
            try:
                if requests.get(f"http://127.0.0.1:{ready}/readiness", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
        else:
            raise SystemExit("policy-server not ready in 120 s")
        self.session = requests.Session()

    def review(self, body):
        # The engine's known stall (a reflector's initial LIST hanging until kube-rs's 290 s
        # watch timeout; a blocked host call is not interrupted) is a figure, not a crash.
        t = time.monotonic()
        try:
            r = self.session.post(f"{self.url}/validate/{POLICY_ID}", data=body, verify=False,
                                  headers={"Content-Type": "application/json"}, timeout=120)
        except requests.exceptions.ReadTimeout:
            return float("inf"), "policy-server stalled (no answer in 120 s)"
        return time.monotonic() - t, verdict(r.json())

    def rss_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def kwctl_cold(env, module, dump, runs):
    times, verdicts = [], []
    for _ in range(runs):
        t = time.monotonic()
        try:
            p = subprocess.run([tool("kwctl"), "run", "--allow-context-aware",
                                "-r", os.path.join(dump, "create-request.json"),
                                "-s", os.path.join(dump, "settings.json"),
                                "file://" + os.path.abspath(module)],
                               env=dict(os.environ, KUBECONFIG=env["KUBECONFIG"]),
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            times.append(float("inf"))
            verdicts.append("kwctl stalled (timeout 120 s)")
            continue
        times.append(time.monotonic() - t)
        try:
            last = json.loads(p.stdout.strip().splitlines()[-1])
            verdicts.append("allowed" if last.get("allowed") else "REFUSED: " + str(last.get("status", {}).get("message", ""))[:120])
        except (ValueError, IndexError):
            verdicts.append("kwctl failed: " + p.stderr[-200:])
    return times, verdicts


def moved(review, namespace):
    """The review's object written into another namespace (a warm-up request)."""
    r = copy.deepcopy(review)
    req = r["request"]
    req["namespace"] = namespace
    req["uid"] = req.get("uid", "") + "-warm-up"
    for key in ("object", "oldObject"):
        if isinstance(req.get(key), dict):
            req[key].setdefault("metadata", {})["namespace"] = namespace
    return json.dumps(r).encode()


def throughput(ps, body, clients, seconds):
    done, lat, stop = [0], [], time.monotonic() + seconds
    lock = threading.Lock()

    def client():
        s = requests.Session()
        while time.monotonic() < stop:
            t = time.monotonic()
            r = s.post(f"{ps.url}/validate/{POLICY_ID}", data=body, verify=False,
                       headers={"Content-Type": "application/json"}, timeout=60)
            ok = r.json().get("response", {}).get("allowed")
            with lock:
                done[0] += 1 if ok else 0
                lat.append(time.monotonic() - t)

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0] / (time.monotonic() - start), lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--work", default="/tmp/bench-cluster")
    ap.add_argument("--module", action="append", required=True, help="NAME=annotated.wasm")
    ap.add_argument("--pools", default="20,1000,10000")
    ap.add_argument("--kwctl-runs", type=int, default=2)
    ap.add_argument("--cold-runs", type=int, default=2)
    ap.add_argument("--warm", type=int, default=40)
    ap.add_argument("--policy-timeout", type=int, default=2)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--permission-check", action="store_true",
                    help="also run each module with deploy/'s policyServerUser and RBAC")
    ap.add_argument("--summaries", metavar="LEDGER",
                    help="also run each module reading pools from PoolReservations that this "
                    "ledger binary (tools/target/release/tenant-reservation) computes and stores "
                    "(poolSummary required; maxAgeSeconds 600: nothing renews them)")
    ap.add_argument("--warm-up-namespace", help="also time each cold write after a warm-up: one "
                    "review of the same object into this namespace (another pool) first")
    a = ap.parse_args()
    modules = [m.split("=", 1) for m in a.module]
    rows = []
    cp = os.path.join(REPO, "scripts", "cluster", "control-plane.sh")
    # Paths relative to the checkout: the output is committed (docs/bench-cluster.txt).
    def shown(path):
        return os.path.relpath(path, REPO) if path else "(none)"
    print(f"engine: kwctl {shown(tool('kwctl'))}, policy-server {shown(tool('policy-server'))}; "
          f"--policy-timeout {a.policy_timeout} s; {os.cpu_count()} CPUs", flush=True)
    for pool in [int(p) for p in a.pools.split(",")]:
        dump = os.path.join(a.dump, f"pool-{pool}")
        shape = json.load(open(os.path.join(dump, "shape.json")))
        review = json.load(open(os.path.join(dump, "create.json")))
        with open(os.path.join(dump, "create-request.json"), "w") as f:
            json.dump(review["request"], f)
        body = json.dumps(review).encode()
        settings = json.load(open(os.path.join(dump, "settings.json")))
        cp_dir = os.path.join(a.work, f"cp-{pool}")
        subprocess.run(["bash", cp, "down", cp_dir], capture_output=True)
        subprocess.run(["rm", "-rf", cp_dir])
        subprocess.run(["bash", cp, "up", cp_dir], check=True, stdout=subprocess.DEVNULL)
        env = source_env(os.path.join(cp_dir, "env"))
        try:
            subprocess.run([sys.executable, os.path.join(HERE, "load.py"), dump],
                           env=dict(os.environ, **env), check=True)
            runs = [(name, module, settings) for name, module in modules]
            if a.permission_check:
                user = apply_deployed_rbac(env)
                runs += [(name + "+check", module, dict(settings, policyServerUser=user))
                         for name, module in modules]
            if a.summaries:
                took, size = store_summaries(env, a.summaries, settings, cp_dir)
                print(f"summaries: computed in {took:.1f} s, {size / 1e6:.1f} MB as JSON", flush=True)
                summary = {"mode": "required", "maxAgeSeconds": 600, "maxClockSkewSeconds": 10}
                runs += [(name + "+summary", module, dict(settings, poolSummary=summary))
                         for name, module in modules]
            for name, module, settings in runs:
                row = {"pool": pool, "cluster": shape["cluster"],
                       "namespaces": shape["pool_namespaces"], "module": name}
                kt, kv = kwctl_cold(env, module, dump, a.kwctl_runs)
                row["kwctl_cold_s"], row["kwctl_verdicts"] = kt, kv
                cold, cold_v, reads = [], [], []
                for i in range(a.cold_runs):
                    ps = PolicyServer(cp_dir, env, module, settings, a.policy_timeout, f"{name}-{i}")
                    try:
                        m0 = metrics(env)
                        t, v = ps.review(body)
                        reads.append(delta(metrics(env), m0))
                        cold.append(t)
                        cold_v.append(v)
                        if i == a.cold_runs - 1:
                            warm, warm_v = [], set()
                            for _ in range(a.warm):
                                t, v = ps.review(body)
                                warm.append(t)
                                warm_v.add(v)
                            row["warm_p50_s"], row["warm_p99_s"] = pct(warm, 50), pct(warm, 99)
                            row["warm_verdicts"] = sorted(warm_v)
                            if pool <= 20:
                                rate, lat = throughput(ps, body, a.clients, a.seconds)
                                row["writes_per_s"] = rate
                                row["throughput_p99_s"] = pct(lat, 99)
                            row["rss_mb"] = ps.rss_mb()
                    finally:
                        ps.stop()
                row["ps_cold_s"], row["ps_cold_verdicts"], row["helmrelease_requests_cold"] = cold, cold_v, reads
                if a.warm_up_namespace:
                    # The same cold write on fresh policy-servers that first answered one write
                    # into another pool: the lists every request shares are then synced.
                    warmed = moved(review, a.warm_up_namespace)
                    for i in range(a.cold_runs):
                        ps = PolicyServer(cp_dir, env, module, settings, a.policy_timeout, f"{name}-w{i}")
                        try:
                            wt, wv = ps.review(warmed)
                            t, v = ps.review(body)
                        finally:
                            ps.stop()
                        row.setdefault("warm_up_s", []).append(wt)
                        row.setdefault("ps_cold_after_warm_up_s", []).append(t)
                        row.setdefault("warm_up_verdicts", []).append(wv)
                        row.setdefault("ps_cold_after_warm_up_verdicts", []).append(v)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            subprocess.run(["bash", cp, "down", cp_dir], capture_output=True)
    print()
    print(f"{'module':<14} {'pool':>6} {'ns':>4} {'kwctl cold s':>14} {'ps cold s':>14} "
          f"{'warm p50 ms':>11} {'warm p99 ms':>11} {'HR LIST/WATCH/API':>17} {'RSS MB':>7} {'writes/s':>8}  verdicts")
    for r in rows:
        hr = r["helmrelease_requests_cold"][0] if r["helmrelease_requests_cold"] else {}
        verdicts = sorted(set(r["kwctl_verdicts"] + r["ps_cold_verdicts"] + r.get("warm_verdicts", [])))
        print(f"{r['module']:<14} {r['pool']:>6} {r['namespaces']:>4} {seconds(r['kwctl_cold_s']):>14} "
              f"{seconds(r['ps_cold_s']):>14} {r.get('warm_p50_s', float('nan'))*1000:>11.1f} "
              f"{r.get('warm_p99_s', float('nan'))*1000:>11.1f} "
              f"{'/'.join(str(hr.get(k, '-')) for k in ('LIST', 'WATCH', 'ALL')):>17} "
              f"{r.get('rss_mb', float('nan')):>7.0f} {r.get('writes_per_s', float('nan')):>8.0f}  {'; '.join(verdicts)}")
    for r in rows:
        if "warm_up_s" in r:
            print(f"{r['module']:<14} {r['pool']:>6}: cold {seconds(r['ps_cold_s'])} s; after a warm-up "
                  f"into {a.warm_up_namespace} ({seconds(r['warm_up_s'])} s): {seconds(r['ps_cold_after_warm_up_s'])} s  "
                  f"{'; '.join(sorted(set(r['warm_up_verdicts'] + r['ps_cold_after_warm_up_verdicts'])))}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
