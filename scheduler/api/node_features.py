"""The node features a pod requires, as component-helpers' nodedeclaredfeatures infers them.

kube-scheduler v1.37 asks `ndf.DefaultFramework.InferForPodScheduling` (k8s.io/component-helpers
v0.37.2); of the nine registered features only these three infer anything for scheduling (the
others are about pod updates or node-side operations). Computed once when a pod is parsed.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.api.json_types import JsonView

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def _containers(spec: JsonView, *groups: str) -> Iterable[JsonView]:
    for group in groups:
        yield from spec.get(group) or ()


def _restarts_all_containers(spec: JsonView) -> bool:
    """A container or init container with a restart rule whose action is RestartAllContainers."""
    return any(
        rule.get("action") == "RestartAllContainers"
        for container in _containers(spec, "containers", "initContainers")
        for rule in container.get("restartPolicyRules") or ()
    )


def _host_network_user_namespace(spec: JsonView) -> bool:
    """hostNetwork with hostUsers explicitly false (an unset hostUsers is not false)."""
    return bool(spec.get("hostNetwork")) and spec.get("hostUsers") is False


def _bind_mount_options(spec: JsonView) -> bool:
    """A volume mount of any container (ephemeral ones included) with bindMountOptions."""
    return any(
        mount.get("bindMountOptions")
        for container in _containers(spec, "containers", "initContainers", "ephemeralContainers")
        for mount in container.get("volumeMounts") or ()
    )


_INFERRERS = (
    (RESTART_ALL_CONTAINERS, _restarts_all_containers),
    (USER_NAMESPACES_HOST_NETWORK, _host_network_user_namespace),
    (VOLUME_BIND_MOUNT_OPTIONS, _bind_mount_options),
)


def infer_for_scheduling(spec: JsonView) -> frozenset[str]:
    """The declared features a node must have for this pod spec to run there."""
    return frozenset(name for name, infer in _INFERRERS if infer(spec))
