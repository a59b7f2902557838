#!/usr/bin/env python3
"""Loads a cluster written by `bench --dump` into a real API server, fast: namespaces first,
then every other object created in parallel (HTTP keep-alive, one session per thread).

    load.py DUMP_DIR        (the control plane's DIR/env sourced: APISERVER_URL, ADMIN_TOKEN,
                             APISERVER_CA)
"""
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
import threading

import requests
import urllib3

urllib3.disable_warnings()

ROUTES = {
    "Namespace": "/api/v1/namespaces",
    "ApplicationDefinition": "/apis/cozystack.io/v1alpha1/applicationdefinitions",
    "VirtualMachineClusterInstancetype": "/apis/instancetype.kubevirt.io/v1beta1/virtualmachineclusterinstancetypes",
    "HelmRelease": "/apis/helm.toolkit.fluxcd.io/v2/namespaces/{ns}/helmreleases",
}
ORDER = ["namespace.json", "applicationdefinition.json",
         "virtualmachineclusterinstancetype.json", "helmrelease.json"]

local = threading.local()


def session():
    if not hasattr(local, "s"):
        s = requests.Session()
        s.headers["Authorization"] = "Bearer " + os.environ["ADMIN_TOKEN"]
        # Loopback, a per-run CA: Python's ssl rejects the test CA (no key usage), so the
        # loader does not verify; nothing but this test cluster is reached.
        s.verify = False
        local.s = s
    return local.s


def create(obj):
    url = os.environ["APISERVER_URL"] + ROUTES[obj["kind"]].format(
        ns=obj["metadata"].get("namespace", ""))
    for attempt in range(5):
        r = session().post(url, json=obj, timeout=60, verify=False)
        if r.status_code in (201, 409):
            return
        if r.status_code in (429, 500, 503, 504):
            time.sleep(0.2 * (attempt + 1))
            continue
        raise SystemExit(f"load: {obj['kind']} {obj['metadata']['name']}: {r.status_code} {r.text[:300]}")
    raise SystemExit(f"load: {obj['kind']} {obj['metadata']['name']}: gave up")


def main():
    dump = sys.argv[1]
    start = time.monotonic()
    total = 0
    with ThreadPoolExecutor(max_workers=int(os.environ.get("LOAD_THREADS", "16"))) as pool:
        for name in ORDER:
            path = os.path.join(dump, name)
            if not os.path.exists(path):
                continue
            objects = [o for o in json.load(open(path)) if o["kind"] in ROUTES]
            list(pool.map(create, objects))
            total += len(objects)
    print(f"load: {total} objects from {dump} in {time.monotonic() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
