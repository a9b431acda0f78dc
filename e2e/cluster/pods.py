"""Wait for a pod to reach a state by watching it (with a deadline), not by sleeping."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client as k8s
from kubernetes import watch

from e2e.cluster.readiness import NotReadyError

PodPredicate = Callable[[k8s.V1Pod | None], bool]


def wait_for_pod(
    api: k8s.CoreV1Api,
    namespace: str,
    name: str,
    predicate: PodPredicate,
    *,
    timeout: float = 60.0,
    what: str = "condition",
) -> k8s.V1Pod | None:
    """Return the pod (None once deleted) as soon as ``predicate`` holds for it.

    Reads the pod, then watches it from that resourceVersion so no transition is missed;
    an expired or broken watch is simply re-established until the deadline.
    """
    deadline = time.monotonic() + timeout
    last: k8s.V1Pod | None = None
    while True:
        try:
            last = api.read_namespaced_pod(name, namespace)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            last = None
        if predicate(last):
            return last
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise NotReadyError(
                f"pod {namespace}/{name}: {what} not met after {timeout:.0f}s; "
                f"last seen: {_describe(last)}"
            )
        w = watch.Watch()
        try:
            for event in w.stream(
                api.list_namespaced_pod,
                namespace,
                field_selector=f"metadata.name={name}",
                resource_version=last.metadata.resource_version if last else None,
                timeout_seconds=max(1, int(remaining)),
                _request_timeout=remaining + 5,
            ):
                current = None if event["type"] == "DELETED" else event["object"]
                if event["type"] == "ERROR":
                    break
                if predicate(current):
                    return current
                last = current
        except k8s.ApiException as exc:
            if exc.status != 410:  # watch window expired: re-read and watch again
                raise
        finally:
            w.stop()


def is_running(pod: k8s.V1Pod | None) -> bool:
    """Bound, phase Running and Ready (what kwok's pod-ready stage produces)."""
    if pod is None or not pod.spec.node_name or pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def is_gone(pod: k8s.V1Pod | None) -> bool:
    return pod is None


def _describe(pod: k8s.V1Pod | None) -> str:
    if pod is None:
        return "deleted"
    return (
        f"node={pod.spec.node_name!r} phase={pod.status.phase!r} "
        f"deletionTimestamp={pod.metadata.deletion_timestamp}"
    )
