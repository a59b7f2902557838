#!/usr/bin/env python3
"""Signs a pushed OCI artifact as `cosign sign --key` does (cosign's legacy "simple signing"
format, the one kwctl and policy-server verify), for tests on a machine without cosign:

    cosign_sign.py keygen KEY.pem PUB.pem
    cosign_sign.py sign KEY.pem REGISTRY REPOSITORY sha256:DIGEST     (plain-HTTP registry)

`sign` pushes the signature manifest to REPOSITORY:sha256-<hex>.sig: one layer, the payload
{"critical": {"identity": {"docker-reference": REGISTRY/REPOSITORY}, "image":
{"docker-manifest-digest": DIGEST}, "type": "cosign container image signature"}, "optional":
null}, media type application/vnd.dev.cosign.simplesigning.v1+json, whose annotation
dev.cosignproject.cosign/signature is the base64 ECDSA P-256/SHA-256 signature of the payload.
"""
import base64, hashlib, json, sys, urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec


def keygen(key_path, pub_path):
    key = ec.generate_private_key(ec.SECP256R1())
    open(key_path, "wb").write(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    open(pub_path, "wb").write(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def push_blob(base, repo, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    req = urllib.request.Request(f"{base}/v2/{repo}/blobs/uploads/", method="POST", data=b"")
    with urllib.request.urlopen(req) as r:
        location = r.headers["Location"]
    if location.startswith("/"):
        location = base + location
    sep = "&" if "?" in location else "?"
    req = urllib.request.Request(f"{location}{sep}digest={digest}", method="PUT", data=data,
                                 headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(req).close()
    return digest


def sign(key_path, registry, repo, digest):
    key = serialization.load_pem_private_key(open(key_path, "rb").read(), password=None)
    payload = json.dumps({
        "critical": {
            "identity": {"docker-reference": f"{registry}/{repo}"},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": None,
    }, separators=(",", ":")).encode()
    signature = base64.b64encode(key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    base = f"http://{registry}"
    layer = push_blob(base, repo, payload)
    config = json.dumps({
        "architecture": "", "os": "", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [layer]},
    }).encode()
    config_digest = push_blob(base, repo, config)
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "size": len(config), "digest": config_digest},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "size": len(payload), "digest": layer,
            "annotations": {"dev.cosignproject.cosign/signature": signature},
        }],
    }).encode()
    tag = digest.replace(":", "-") + ".sig"
    req = urllib.request.Request(f"{base}/v2/{repo}/manifests/{tag}", method="PUT", data=manifest,
                                 headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"})
    urllib.request.urlopen(req).close()
    print(f"{registry}/{repo}:{tag}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["keygen"] and len(sys.argv) == 4:
        keygen(*sys.argv[2:])
    elif sys.argv[1:2] == ["sign"] and len(sys.argv) == 6:
        sign(*sys.argv[2:])
    else:
        sys.exit(__doc__)
