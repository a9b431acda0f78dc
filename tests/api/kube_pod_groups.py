"""scheduling.k8s.io/v1beta1 PodGroups (gate GenericWorkload) for tests."""

from __future__ import annotations

from typing import Any


def kube_pod_group_json(
    name: str,
    *,
    min_count: int | None = 2,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    """A v1beta1 PodGroup as the API server returns it; min_count None: a basic policy."""
    policy = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"schedulingPolicy": policy, "disruptionMode": {"single": {}}, **spec},
    }
