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

#: sigs.k8s.io/scheduler-plugins release whose kube-scheduler (cmd/scheduler, with the
#: Coscheduling plugin) the gang benchmark runs beside kube-pysched. The newest release tag the
#: module proxy serves (v0.35.0 is refused); it links k8s.io/kubernetes v1.34.7, so it runs
#: three minors behind the v1.37 kube-apiserver (the APIs it uses are all stable v1).
SCHEDULER_PLUGINS_VERSION = "v0.34.7"

#: Replaces in scheduler-plugins' go.mod whose v0.34.7 target the module proxy refuses here,
#: moved to the control plane's staging version (served, and built by `make cluster-build`).
#: The build lists which of them cmd/scheduler links (stamp: overridden_linked); the others
#: only complete the module graph and change nothing in the binary.
SCHEDULER_PLUGINS_REPLACE_OVERRIDES = {
    f"k8s.io/{name}": "v0.37.2"
    for name in (
        "cli-runtime",
        "cluster-bootstrap",
        "cri-api",
        "cri-client",
        "csi-translation-lib",
        "endpointslice",
        "externaljwt",
        "kube-aggregator",
        "kube-controller-manager",
        "kube-proxy",
        "kubectl",
        "pod-security-admission",
        "sample-apiserver",
    )
}

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
