"""PodGroups in e2e tests: the chart's CRDs installed, scheduler-plugins' PodGroup created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes.client as k8s
import yaml

from e2e.cluster.readiness import wait_for
from e2e.pysched import REPO_ROOT

CRDS = REPO_ROOT / "charts" / "kube-pysched" / "crds"
PODGROUP_CRD = CRDS / "scheduling.x-k8s.io_podgroups.yaml"
GROUP, VERSION, PLURAL = "scheduling.x-k8s.io", "v1alpha1", "podgroups"
LABEL = "scheduling.x-k8s.io/pod-group"


def apply_crds(api_client: k8s.ApiClient, path: Path) -> list[str]:
    """Creates the CRDs in `path` (existing ones kept) and waits until they are Established."""
    ext = k8s.ApiextensionsV1Api(api_client)
    names = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        names.append(doc["metadata"]["name"])
        try:
            ext.create_custom_resource_definition(doc)
        except k8s.ApiException as exc:
            if exc.status != 409:
                raise
    for name in names:

        def established(name: str = name) -> bool | str:
            crd = ext.read_custom_resource_definition(name)
            conditions = {c.type: c.status for c in crd.status.conditions or []}
            return conditions.get("Established") == "True" or f"{name} not established"

        wait_for(established, timeout=30, what=f"CRD {name} established")
    return names


def create_podgroup(
    api_client: k8s.ApiClient, namespace: str, name: str, min_member: int, **spec: Any
) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }
    created: dict[str, Any] = k8s.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, body
    )
    return created
