"""The one place where the pinned control-plane versions are stated.

Everything else (the generated Go wrapper module, the cache directory name, the docs'
examples) derives from these constants, so bumping Kubernetes or kwok is a one-line change.
"""

from __future__ import annotations

#: Kubernetes release whose kube-apiserver, kube-controller-manager, kube-scheduler and
#: kubectl are built; etcd comes from the same dependency graph (go.etcd.io/etcd/server/v3).
KUBERNETES_VERSION = "v1.37.2"

#: sigs.k8s.io/kwok release that simulates nodes and the pod lifecycle.
KWOK_VERSION = "v0.8.0"

#: Helm v3 release built from its Go module (helm.sh/helm/v3/cmd/helm) for the chart's e2e
#: test (e2e/test_chart.py) and for rendering deploy/ from the chart.
HELM_VERSION = "v3.22.0"

#: Go language version written into the generated wrapper go.mod.
GO_DIRECTIVE = "1.26.0"


def staging_version(kubernetes_version: str = KUBERNETES_VERSION) -> str:
    """Map a Kubernetes release (v1.X.Y) to its staging-module version (v0.X.Y)."""
    major, minor, patch = kubernetes_version.removeprefix("v").split(".", 2)
    if major != "1":
        raise ValueError(f"unsupported Kubernetes version {kubernetes_version!r}")
    return f"v0.{minor}.{patch}"


def cache_key(
    kubernetes_version: str = KUBERNETES_VERSION, kwok_version: str = KWOK_VERSION
) -> str:
    """Directory name that keys a build in the cache by every pinned version."""
    return f"k8s-{kubernetes_version}-kwok-{kwok_version}"
