"""Write kubeconfig files for the harness' clients (tests, components, kubectl users)."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml
from kubernetes import client as k8s

from e2e.cluster.certs import CertPair


def write_kubeconfig(
    path: Path, server: str, ca_cert: Path, client: CertPair, user: str = "admin"
) -> Path:
    """Write a single-context kubeconfig with the certificates embedded.

    Embedding (rather than referencing file paths) keeps the file usable after it is copied
    elsewhere, e.g. into a container or a CI artifact.
    """

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kube-pysched",
                "cluster": {"server": server, "certificate-authority-data": b64(ca_cert)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": b64(client.cert),
                    "client-key-data": b64(client.key),
                },
            }
        ],
        "contexts": [
            {"name": "kube-pysched", "context": {"cluster": "kube-pysched", "user": user}}
        ],
        "current-context": "kube-pysched",
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def write_token_kubeconfig(path: Path, base: Path, token: str, user: str) -> Path:
    """Write a kubeconfig for the cluster of ``base``'s current context, authenticating
    with a bearer token (e.g. a ServiceAccount's, from the TokenRequest API) instead of
    ``base``'s credentials; ``user`` only names the entry."""
    source = yaml.safe_load(base.read_text())
    current = source["current-context"]
    context = next(c["context"] for c in source["contexts"] if c["name"] == current)
    cluster = next(c for c in source["clusters"] if c["name"] == context["cluster"])
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": cluster["name"], "user": user}}],
        "current-context": user,
        "preferences": {},
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def service_account_token(core_v1: k8s.CoreV1Api, namespace: str, name: str) -> str:
    """A new ServiceAccount's token (TokenRequest, ten minutes), to act as that account."""
    core_v1.create_namespaced_service_account(
        namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name=name))
    )
    request = k8s.AuthenticationV1TokenRequest(
        spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    result = core_v1.create_namespaced_service_account_token(name, namespace, request)
    token: str = result.status.token
    return token
