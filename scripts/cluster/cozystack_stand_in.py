#!/usr/bin/env python3
"""The stand-in for Cozystack's apps API (apps.cozystack.io/v1alpha1) used by cozystack-apps.sh.

Cozystack serves its applications from an aggregated API server that is not buildable here.
This script makes what a test needs to stand in for it on a plain kube-apiserver:

  crds DEFS_DIR          one CustomResourceDefinition per ApplicationDefinition of DEFS_DIR
                         (kind, plural, singular, namespaced, as the definition names them)
  store DEFS_DIR         reads an application as the API server stored it (JSON on stdin, or a
                         List) and prints what Cozystack's storage writes for it (JSON, one
                         document a line): the HelmRelease named spec.release.prefix + name,
                         labelled apps.cozystack.io/application.{kind,group,name} and the
                         definition's release labels, chartRef from the definition, spec.values
                         = the application's spec verbatim; for a Tenant also what the tenant
                         chart renders that the policy and the ledger read: the tenant's
                         namespace, its ResourceQuota tenant-quota and the HelmReleases of its
                         modules (info always; etcd, monitoring, ingress,
                         seaweedfs, computeplane when enabled)

  watch DEFS_DIR         what Cozystack's storage does, as a watcher: follows every
                         apps.cozystack.io kind on the API server ($APISERVER_URL, $ADMIN_TOKEN,
                         $APISERVER_CA) and writes (server-side apply, as admin) what `store`
                         prints for each application added or changed, until killed. The gap
                         between a write and its HelmRelease is then a watch event and one
                         request (Cozystack's storage has none: the application is the release).

Stdlib + PyYAML only.
"""
import json
import os
import sys
import time

import yaml

GROUP = "apps.cozystack.io"
VERSION = "v1alpha1"
LABEL = "apps.cozystack.io/application."


def definitions(defs_dir):
    out = {}
    for name in sorted(os.listdir(defs_dir)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(defs_dir, name)) as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict) and doc.get("kind") == "ApplicationDefinition":
                    out[doc["spec"]["application"]["kind"]] = doc
    return out


def crd(definition):
    app = definition["spec"]["application"]
    plural, kind = app["plural"], app["kind"]
    # The values schema is not a structural CRD schema (defaults, free-form maps, ...): spec is
    # kept verbatim, as Cozystack keeps it (its API server stores spec as the release's values).
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"cozystack.io/stand-in": "true"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": kind + "List",
                "plural": plural,
                "singular": app.get("singular", kind.lower()),
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": free,
                                "status": free,
                                "appVersion": {"type": "string"},
                            },
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def owned_namespace(parent, name):
    """Tenant `name` created in `parent` owns tenant-<name> under tenant-root, else parent-<name>."""
    return f"tenant-{name}" if parent == "tenant-root" else f"{parent}-{name}"


def release(definition, obj):
    rel = definition["spec"]["release"]
    app = definition["spec"]["application"]
    name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
    labels = dict(rel.get("labels") or {})
    labels.update({LABEL + "kind": app["kind"], LABEL + "group": GROUP, LABEL + "name": name})
    spec = {"interval": "5m", "values": obj.get("spec") or {}}
    if rel.get("chartRef"):
        spec["chartRef"] = rel["chartRef"]
    else:  # an older definition: a chart from a source
        chart = rel.get("chart") or {}
        spec["chart"] = {
            "spec": {
                "chart": chart.get("name", app["kind"].lower()),
                "sourceRef": chart.get("sourceRef")
                or {"kind": "HelmRepository", "name": "cozystack-apps", "namespace": "cozy-public"},
            }
        }
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": rel["prefix"] + name, "namespace": ns, "labels": labels},
        "spec": spec,
    }


# The tenant chart's modules (charts/tenant/templates/*.yaml): value that enables it (None:
# always), kind, chartRef name.
TENANT_MODULES = [
    (None, "Info", "info", "cozystack-info-application-default-info"),
    ("etcd", "Etcd", "etcd", "cozystack-etcd-application-default-etcd"),
    ("monitoring", "Monitoring", "monitoring", "cozystack-monitoring-application-default-monitoring"),
    ("ingress", "Ingress", "ingress", "cozystack-ingress-application-default-ingress"),
    ("seaweedfs", "SeaweedFS", "seaweedfs", "cozystack-seaweedfs-application-default-seaweedfs"),
    ("computeplane", "ComputePlane", "computeplane", "cozystack-computeplane-application-kubevirt-computeplane"),
]


# cozy-lib's rawQuotaKeys (_resources.tpl, resources.flattenResource): object counts, keyed as
# themselves in a ResourceQuota.
RAW_QUOTA_KEYS = {
    "pods", "services", "services.loadbalancers", "services.nodeports", "services.clusterip",
    "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas",
}
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def to_float(value):
    """cozy-lib.resources.toFloat: a quantity as a float."""
    text = str(value)
    for suffix, unit in {**BINARY, **DECIMAL}.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * unit
    return float(text)


def quota_hard(quotas):
    """What charts/tenant/templates/quota.yaml renders from resourceQuotas (cozy-lib's
    resources.flatten over resources.sanitize, allocation ratios at their defaults: cpu 10,
    memory 1, ephemeral-storage 40)."""
    hard = {}
    for key, value in quotas.items():
        limit = str(value)
        if key == "cpu":
            request = repr(to_float(value) / 10)
        elif key == "memory":
            request = str(int(to_float(value)))
        elif key == "ephemeral-storage":
            request = str(int(to_float(value) / 40))
        else:
            request = value
        for section, quantity in (("requests", request), ("limits", limit)):
            if section == "limits" and key == "storage":
                continue
            if key in RAW_QUOTA_KEYS:
                if section == "limits":
                    hard[key] = str(quantity)
                continue
            hard[f"{section}.{key}"] = str(quantity)
    return hard


def tenant_tree(obj):
    name, parent = obj["metadata"]["name"], obj["metadata"]["namespace"]
    ns = owned_namespace(parent, name)
    values = obj.get("spec") or {}
    yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    if values.get("resourceQuotas"):
        yield {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "tenant-quota", "namespace": ns},
            "spec": {"hard": quota_hard(values["resourceQuotas"])},
        }
    for key, kind, module, chart in TENANT_MODULES:
        if key is not None and not values.get(key):
            continue
        yield {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {
                "name": module,
                "namespace": ns,
                "labels": {
                    "sharding.fluxcd.io/key": "tenants",
                    "internal.cozystack.io/tenantmodule": "true",
                    "app.kubernetes.io/instance": f"tenant-{name}",
                    "app.kubernetes.io/managed-by": "Helm",
                    LABEL + "kind": kind,
                    LABEL + "group": GROUP,
                    LABEL + "name": module,
                },
            },
            "spec": {
                "chartRef": {"kind": "ExternalArtifact", "name": chart, "namespace": "cozy-system"},
                "interval": "5m",
                "valuesFrom": [{"kind": "Secret", "name": "cozystack-values"}],
            },
        }


def api(method, path, body=None, content_type="application/json"):
    import ssl
    import urllib.request

    ctx = ssl.create_default_context(cafile=os.environ["APISERVER_CA"])
    req = urllib.request.Request(
        os.environ["APISERVER_URL"] + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + os.environ["ADMIN_TOKEN"], "Content-Type": content_type},
    )
    return urllib.request.urlopen(req, context=ctx, timeout=None)


def resource_path(doc):
    group_version = doc["apiVersion"]
    prefix = "/api/v1" if group_version == "v1" else "/apis/" + group_version
    # Every kind tenant_tree and release emit (a kind missing here stopped the watcher from
    # storing a Tenant's tree, its own release included: the pool went unbounded).
    plural = {"HelmRelease": "helmreleases", "Namespace": "namespaces",
              "ResourceQuota": "resourcequotas"}[doc["kind"]]
    ns = doc["metadata"].get("namespace")
    where = f"/namespaces/{ns}" if ns else ""
    return f"{prefix}{where}/{plural}/{doc['metadata']['name']}"


def apply_doc(doc):
    path = resource_path(doc) + "?fieldManager=cozystack-stand-in&force=true"
    api("PATCH", path, doc, "application/apply-patch+yaml").read()


def watch_kind(definition):
    import urllib.error

    plural = definition["spec"]["application"]["plural"]
    version = ""
    while True:
        try:
            path = f"/apis/{GROUP}/{VERSION}/{plural}?watch=1&allowWatchBookmarks=true"
            if version:
                path += "&resourceVersion=" + version
            with api("GET", path) as stream:
                for line in stream:
                    event = json.loads(line)
                    obj = event.get("object", {})
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") not in ("ADDED", "MODIFIED"):
                        continue
                    docs = [release(definition, obj)]
                    if obj.get("kind") == "Tenant":
                        docs = [*tenant_tree(obj), *docs]
                    for doc in docs:
                        try:
                            apply_doc(doc)
                        except urllib.error.HTTPError as e:
                            print(f"stand-in: {doc['kind']} {doc['metadata']['name']}: {e.read()[:300]}", file=sys.stderr)
        except Exception as e:  # a closed watch or an expired version: start again
            print(f"stand-in: watch {plural}: {e}", file=sys.stderr)
            version = ""
            # The API server may be down (fault tests restart it): do not spin.
            time.sleep(0.2)


def main():
    cmd, defs_dir = sys.argv[1], sys.argv[2]
    defs = definitions(defs_dir)
    if cmd == "crds":
        for d in defs.values():
            print(json.dumps(crd(d)))
    elif cmd == "store":
        data = json.load(sys.stdin)
        items = data.get("items", []) if data.get("kind", "").endswith("List") else [data]
        for obj in items:
            if not obj.get("apiVersion", "").startswith(GROUP + "/"):
                continue
            d = defs.get(obj["kind"])
            if d is None:
                sys.exit(f"cozystack stand-in: no ApplicationDefinition for kind {obj['kind']}")
            print(json.dumps(release(d, obj)))
            if obj["kind"] == "Tenant":
                for doc in tenant_tree(obj):
                    print(json.dumps(doc))
    elif cmd == "watch":
        import threading

        for d in defs.values():
            threading.Thread(target=watch_kind, args=(d,), daemon=True).start()
        print("stand-in: watching", len(defs), "kinds", file=sys.stderr, flush=True)
        threading.Event().wait()
    else:
        sys.exit(f"usage: {sys.argv[0]} crds|store|watch DEFS_DIR")


if __name__ == "__main__":
    main()
