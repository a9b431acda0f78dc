"""Pod manifests for e2e tests and the demo: plain dicts, as a user's YAML would be."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def pod_manifest(
    name: str,
    *,
    scheduler_name: str = "kube-pysched",
    cpu: str | None = "100m",
    memory: str | None = "64Mi",
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    host_port: int | None = None,
    scheduling_gates: Sequence[str] = (),
    priority_class: str | None = None,
    extra_requests: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pause pod that terminates at once when deleted."""
    requests: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    requests.update(extra_requests or {})
    container: dict[str, Any] = {"name": "app", "image": PAUSE_IMAGE}
    if requests:
        container["resources"] = {"requests": requests, "limits": dict(extra_requests or {})}
    if host_port is not None:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": g} for g in scheduling_gates]
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def pod_scheduled_condition(pod: Any) -> Any | None:
    """The PodScheduled condition of a kubernetes-client V1Pod, if any."""
    for cond in (pod.status.conditions or []) if pod.status else []:
        if cond.type == "PodScheduled":
            return cond
    return None
