#!/usr/bin/env python3
"""A bounded soak of the real engine (make soak): writes at half the measured throughput for
MINUTES, tenants created and deleted throughout, on a control plane made by control-plane.sh
with the stand-in's watcher storing releases and policy-server in protect mode.

    soak.py DIR MINUTES

DIR is the control plane's directory (DIR/env, DIR/policy-server/). First 20 s at full speed
(4 clients, each a VMInstance create then its delete) measure the throughput; then each of
WORKERS workers owns a tenant at a time (budget 8Gi), writes u1.small (2Gi, fits 4) and
u1.4xlarge (64Gi, never fits) VMInstances into it one at a time, and after 10-20 writes deletes
the tenant and makes a new one, paced to half the measured rate overall. Every 30 s it prints
policy-server's RSS, its reflectors (its log) and the HelmRelease watches and LISTs the API
server counts. At the end: every live pool's stored reservation against its budget and against
what was admitted (no pool over budget: each pool has one writer, so a serial run's state)."""
import json
import os
import re
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

DIR, MINUTES = sys.argv[1], float(sys.argv[2])
env = {}
for line in open(os.path.join(DIR, "env")):
    m = re.match(r'export (\w+)="?([^"]*)"?', line.strip())
    if m:
        env[m.group(1)] = m.group(2)
URL, TOKEN = env["APISERVER_URL"], env["ADMIN_TOKEN"]
CTX = ssl.create_default_context(cafile=env["APISERVER_CA"])
GROUP = "/apis/apps.cozystack.io/v1alpha1"


def api(method, path, body=None, timeout=60):
    req = urllib.request.Request(URL + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # noqa: BLE001 - a fault is a verdict here
        return 0, str(e).encode()


def app(kind, ns, name, spec):
    return {"apiVersion": "apps.cozystack.io/v1alpha1", "kind": kind,
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def create_vm(ns, name, itype):
    return api("POST", f"{GROUP}/namespaces/{ns}/vminstances", app("VMInstance", ns, name, {"instanceType": itype}))


def metrics():
    _, text = api("GET", "/metrics")
    out = {"LIST": 0, "WATCHES": 0}
    for line in text.decode(errors="replace").splitlines():
        if 'resource="helmreleases"' not in line:
            continue
        if line.startswith("apiserver_request_total{") and 'verb="LIST"' in line:
            out["LIST"] += float(line.split()[-1])
        elif line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line:
            out["WATCHES"] += float(line.split()[-1])
    return out


def ps_sample():
    pid = open(os.path.join(DIR, "policy-server", "pid")).read().strip()
    rss = 0
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) // 1024
    log = open(os.path.join(DIR, "policy-server", "policy-server.log"), errors="replace").read()
    return rss, log.count("creating new reflector")


def measure(seconds=20, clients=4):
    count = [0]
    stop = time.time() + seconds
    api("POST", f"{GROUP}/namespaces/tenant-root/tenants",
        app("Tenant", "tenant-root", "soakprobe", {"resourceQuotas": {"cpu": "1000", "memory": "10Ti", "storage": "10Ti"}}))
    time.sleep(2)

    def client(c):
        i = 0
        while time.time() < stop:
            name = f"m{c}x{i}"
            st, _ = create_vm("tenant-soakprobe", name, "u1.nano")
            if st == 201:
                count[0] += 1
                api("DELETE", f"{GROUP}/namespaces/tenant-soakprobe/vminstances/{name}")
            i += 1

    ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    api("DELETE", f"{GROUP}/namespaces/tenant-root/tenants/soakprobe")
    return count[0] / seconds


admitted = {}  # namespace -> list of instance types admitted (and not deleted)
tenants = {"made": 0, "deleted": 0}
verdicts = {"admitted": 0, "refused: policy": 0, "refused: other": 0, "wrongly admitted": 0}
others = []
lock = threading.Lock()


def worker(w, interval, stop):
    gen = 0
    while time.time() < stop:
        gen += 1
        t = f"soak{w}g{gen}"
        ns = f"tenant-{t}"
        st, body = api("POST", f"{GROUP}/namespaces/tenant-root/tenants",
                       app("Tenant", "tenant-root", t, {"resourceQuotas": {"cpu": "100", "memory": "8Gi", "storage": "1Ti"}}))
        if st != 201:
            with lock:
                others.append(f"tenant {t}: {st} {body[:200]!r}")
            time.sleep(interval)
            continue
        for _ in range(100):
            if api("GET", f"/api/v1/namespaces/{ns}")[0] == 200:
                break
            time.sleep(0.1)
        with lock:
            admitted[ns] = []
            tenants["made"] += 1
        fits = 0
        for i in range(10 + (w + gen) % 11):
            if time.time() >= stop:
                break
            big = i % 3 == 2
            itype = "u1.4xlarge" if big else "u1.small"
            t0 = time.time()
            st, body = create_vm(ns, f"vm{i}", itype)
            with lock:
                if st == 201:
                    verdicts["admitted"] += 1
                    admitted[ns].append(itype)
                    if big or fits >= 4:
                        verdicts["wrongly admitted"] += 1
                    fits += 1
                elif b"denied the request" in body:
                    verdicts["refused: policy"] += 1
                else:
                    verdicts["refused: other"] += 1
                    others.append(f"{ns}/vm{i}: {st} {body[:200]!r}")
            # Let the stand-in store the release before the next write (Cozystack's storage
            # writes it in the request itself).
            if st == 201:
                rel = f"/apis/helm.toolkit.fluxcd.io/v2/namespaces/{ns}/helmreleases/vm-instance-vm{i}"
                for _ in range(100):
                    if api("GET", rel)[0] == 200:
                        break
                    time.sleep(0.05)
            time.sleep(max(0.0, interval - (time.time() - t0)))
        # Most tenants are deleted (with their applications); one in four stays for the final check.
        if gen % 4:
            api("DELETE", f"{GROUP}/namespaces/tenant-root/tenants/{t}")
            with lock:
                del admitted[ns]
                tenants["deleted"] += 1
            for i in range(25):
                api("DELETE", f"/apis/helm.toolkit.fluxcd.io/v2/namespaces/{ns}/helmreleases/vm-instance-vm{i}")
            # The stand-in does not cascade: the Tenant's own release and namespace go too.
            api("DELETE", f"/apis/helm.toolkit.fluxcd.io/v2/namespaces/tenant-root/helmreleases/{ns}")
            api("DELETE", f"/api/v1/namespaces/{ns}")


def main():
    rate = measure()
    target = rate / 2
    workers = 4
    interval = workers / target if target else 1.0
    print(f"soak: measured {rate:.1f} writes/s (4 clients, create+delete); running {MINUTES} min at {target:.1f} writes/s "
          f"({workers} workers, one write each {interval:.2f} s)", flush=True)
    stop = time.time() + MINUTES * 60
    ts = [threading.Thread(target=worker, args=(w, interval, stop)) for w in range(workers)]
    for t in ts:
        t.start()
    start = time.time()
    print(f"{'min':>5} {'RSS MB':>7} {'reflectors':>10} {'HR watches':>10} {'HR LISTs':>8} {'tenants':>8}  verdicts", flush=True)
    first = None
    while any(t.is_alive() for t in ts):
        rss, refl = ps_sample()
        m = metrics()
        with lock:
            v = dict(verdicts)
            gone = tenants["deleted"]
        if first is None:
            first = (rss, refl, m["WATCHES"], gone)
        print(f"{(time.time() - start) / 60:5.1f} {rss:7d} {refl:10d} {int(m['WATCHES']):10d} {int(m['LIST']):8d} {gone:8d}  {v}",
              flush=True)
        for _ in range(30):
            if not any(t.is_alive() for t in ts):
                break
            time.sleep(1)
    for t in ts:
        t.join()
    time.sleep(2)
    # The end: each live pool as stored, against its budget and what was admitted.
    _, types = api("GET", "/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes")
    size = {}
    for it in json.loads(types)["items"]:
        g = it["spec"]["memory"]["guest"]
        size[it["metadata"]["name"]] = float(g[:-2]) if g.endswith("Gi") else float(g[:-2]) / 1024
    bad = 0
    for ns, kinds in sorted(admitted.items()):
        _, rels = api("GET", f"/apis/helm.toolkit.fluxcd.io/v2/namespaces/{ns}/helmreleases")
        stored = [r["spec"]["values"].get("instanceType") for r in json.loads(rels)["items"]
                  if r["metadata"].get("labels", {}).get("apps.cozystack.io/application.kind") == "VMInstance"]
        reserved = sum(size.get(x, 0) for x in stored)
        ok = reserved <= 8 and sorted(stored) == sorted(kinds)
        bad += not ok
        print(f"end: {ns}: {reserved:g}Gi of 8Gi by {len(stored)} releases; admitted {len(kinds)}: {'ok' if ok else 'MISMATCH'}")
    rss, refl = ps_sample()
    m = metrics()
    print(f"soak: {verdicts}; {len(admitted)} live pools checked, {bad} wrong; policy-server RSS {rss} MB, {refl} reflectors")
    gone = tenants["deleted"] - first[3]
    if gone:
        print(f"soak: {tenants['made']} tenants made, {tenants['deleted']} deleted; from the first sample to the end, per "
              f"tenant that came and went: {(rss - first[0]) / gone:+.2f} MB RSS, {(refl - first[1]) / gone:+.2f} reflectors, "
              f"{(m['WATCHES'] - first[2]) / gone:+.2f} open HelmRelease watches")
    for o in others[:10]:
        print("other refusal:", o)
    sys.exit(1 if bad or verdicts["wrongly admitted"] else 0)


if __name__ == "__main__":
    main()
