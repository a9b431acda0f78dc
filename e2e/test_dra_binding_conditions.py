"""Device binding conditions (DRADeviceBindingConditions, beta and on in v1.37), run by
kube-scheduler and by kube-pysched on one control plane with the test DRA driver publishing a
GPU that has `bindingConditions` and `bindingFailureConditions` (its `binding` configuration).

* Ready: the driver reports nothing at first, so the pod stays in PreBind (the claim allocated
  and reserved for it, the pod not bound, a `BindingConditionsPending` event); once the driver
  sets the binding condition on the claim's `status.devices`, the pod is bound.
* Failed: the driver sets the failure condition; PreBind fails (`device binding failed`), the
  next attempt finds the claim unavailable and PostFilter deallocates it; with the driver then
  reporting success, the pod is bound on a fresh allocation of the same device.

Both sides must show the same: the same device, the same event reasons, the same messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from e2e import test_dra_scenarios as scenarios
from e2e.cluster import wait_for
from e2e.dra.driver import PROFILE_LABEL
from e2e.dra.objects import Resources
from e2e.test_dra_scenarios import CONFIG, GPU_CLASS, Env, TestDriver
from e2e.test_scheduling import create, unique
from e2e.workload import pod_manifest

# The scenarios' fixtures (driver process, device classes, kube-pysched, env), used by name.
dra_driver = scenarios.dra_driver
classes = scenarios.classes
pysched_name = scenarios.pysched_name
env = scenarios.env

ATTACHED = "e2e.kube-pysched.io/attached"
FAILED = "e2e.kube-pysched.io/failed"


def _binding(nodes: list[str], outcome: str) -> dict[str, Any]:
    """gpu-0 of every node with binding conditions and the given outcome."""
    spec = {"conditions": [ATTACHED], "failureConditions": [FAILED], "outcome": outcome}
    return {**CONFIG, "binding": {f"{n}/gpu-0": spec for n in nodes}}


def _published(res: Resources, nodes: list[str], outcome_seen: Callable[[Any], bool]) -> bool:
    devices = [
        d
        for s in res.list("resourceslices")
        if s["spec"].get("nodeName") in nodes
        for d in s["spec"].get("devices", [])
        if d["name"] == "gpu-0"
    ]
    return len(devices) == len(nodes) and all(outcome_seen(d) for d in devices)


def _sides(sides_env: Env, driver: TestDriver, outcome: str) -> list[tuple[str, str, str]]:
    """(scheduler, node, claim name) per side: one node each, gpu-0 configured, one claim."""
    core, res, namespace, kwok_nodes, pysched = sides_env
    sides = []
    groups = {}
    for scheduler in ("default-scheduler", pysched):
        group = unique("g")
        (node,) = kwok_nodes(1, labels={"g": group, PROFILE_LABEL: "two-gpus"})
        groups[node.metadata.name] = group
        sides.append((scheduler, node.metadata.name, unique("claim")))
    nodes = [n for _, n, _ in sides]
    driver.reconfigure(_binding(nodes, outcome))
    wait_for(
        lambda: _published(res, nodes, lambda d: d.get("bindingConditions") == [ATTACHED]),
        timeout=60,
        what="gpu-0 published with binding conditions",
    )
    for scheduler, node, claim in sides:
        request = {"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS}}
        body = {"metadata": {"name": claim}, "spec": {"devices": {"requests": [request]}}}
        res.create("resourceclaims", body, namespace)
        pod = pod_manifest(claim, scheduler_name=scheduler, node_selector={"g": groups[node]})
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        create(core, namespace, [pod])
    return sides


def _claim(res: Resources, namespace: str, name: str) -> dict[str, Any]:
    (found,) = [c for c in res.list("resourceclaims", namespace) if c["metadata"]["name"] == name]
    return found


def _reasons(core: k8s.CoreV1Api, namespace: str, pod: str) -> list[str]:
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}")
    return sorted({e.reason for e in events.items})


def _messages(core: k8s.CoreV1Api, namespace: str, pod: str, reason: str) -> list[str]:
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}")
    return sorted({e.message for e in events.items if e.reason == reason})


def _bound_device(core: k8s.CoreV1Api, res: Resources, namespace: str, name: str) -> str:
    wait_for(
        lambda: bool(core.read_namespaced_pod(name, namespace).spec.node_name),
        timeout=120,
        what=f"{name} bound",
    )
    allocation = _claim(res, namespace, name)["status"]["allocation"]
    (result,) = allocation["devices"]["results"]
    return str(result["device"])


def test_the_pod_waits_in_pre_bind_until_the_driver_reports_the_device_attached(
    env: Env, dra_driver: TestDriver
) -> None:
    core, res, namespace = env[0], env[1], env[2]
    sides = _sides(env, dra_driver, "pending")
    try:
        for _, _, name in sides:
            # PreBind wrote the allocation and the reservation, then waits: the pod is unbound.
            def waiting(name: str = name) -> bool:
                status = _claim(res, namespace, name).get("status") or {}
                reserved = [r["name"] for r in status.get("reservedFor") or []]
                return bool(status.get("allocation")) and reserved == [name]

            wait_for(waiting, timeout=120, what=f"{name} allocated and reserved")
            wait_for(
                lambda name=name: "BindingConditionsPending" in _reasons(core, namespace, name),
                timeout=60,
                what=f"{name}: BindingConditionsPending",
            )
            assert not core.read_namespaced_pod(name, namespace).spec.node_name
        dra_driver.reconfigure(_binding([n for _, n, _ in sides], "ready"))
        devices = [_bound_device(core, res, namespace, name) for _, _, name in sides]
    finally:
        dra_driver.reconfigure(CONFIG)
    assert devices == ["gpu-0", "gpu-0"]
    for _, _, name in sides:
        conditions = _claim(res, namespace, name)["status"]["devices"][0]["conditions"]
        assert [(c["type"], c["status"]) for c in conditions] == [(ATTACHED, "True")]
    (ks, py) = [_reasons(core, namespace, name) for _, _, name in sides]
    assert py == ks
    (ks_msg, py_msg) = [
        _messages(core, namespace, name, "BindingConditionsPending") for _, _, name in sides
    ]
    nodes = [node for _, node, _ in sides]
    assert [m.replace(nodes[1], nodes[0]) for m in py_msg] == ks_msg


def test_a_binding_failure_deallocates_the_claim_and_the_pod_is_scheduled_again(
    env: Env, dra_driver: TestDriver
) -> None:
    core, res, namespace = env[0], env[1], env[2]
    sides = _sides(env, dra_driver, "failed")
    nodes = [n for _, n, _ in sides]
    try:
        for _, _, name in sides:
            wait_for(
                lambda name=name: any(
                    "device binding failed" in m
                    for m in _messages(core, namespace, name, "FailedScheduling")
                ),
                timeout=120,
                what=f"{name}: a FailedScheduling event for the binding failure",
            )
        # The claims are deallocated by PostFilter and allocated again; with the driver now
        # reporting success, the pods are bound.
        dra_driver.reconfigure(_binding(nodes, "ready"))
        devices = [_bound_device(core, res, namespace, name) for _, _, name in sides]
    finally:
        dra_driver.reconfigure(CONFIG)
    assert devices == ["gpu-0", "gpu-0"]
    failures = []
    for _, node, name in sides:
        messages = _messages(core, namespace, name, "FailedScheduling")
        failures.append(
            sorted(
                {
                    m.replace(node, "<node>").replace(name, "<claim>")
                    for m in messages
                    if "device binding failed" in m
                }
            )
        )
        status = _claim(res, namespace, name)["status"]
        conditions = status["devices"][0]["conditions"]
        # A fresh allocation: the failure condition went with the old one.
        assert [c["type"] for c in conditions] == [ATTACHED]
    (ks, py) = failures
    assert ks and py == ks
