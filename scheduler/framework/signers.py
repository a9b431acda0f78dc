"""Pod signature fragments (KEP-5598), as kube-scheduler's framework/signers.go: the fragment
keys and the signers several plugins share.

A signature says which pods are interchangeable for Filter and Score: pods with equal
signatures get the same feasibility and scores on the same cluster state, which is what lets
opportunistic batching (framework/runtime/batch.py) reuse the previous pod's scored nodes.
Values must be JSON-serialisable and order-insensitive where the API field is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scheduler.api.labels import NodeSelectorTerm, Requirement
from scheduler.api.objects import Pod

DYNAMIC_RESOURCES = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"
NODE_NAME = "v1.Pod.Spec.NodeName"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME = "v1.Pod.Spec.SchedulerName"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES = "v1.Pod.Spec.RequiredFeatures()"


@dataclass(frozen=True, slots=True)
class SignFragment:
    """One part of a signature; plugins returning the same key must return the same value."""

    key: str
    value: Any


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def host_ports(pod: Pod) -> list[int]:
    """The distinct host ports, sorted (HostPortsSigner)."""
    return sorted({p.port for p in pod.host_ports if p.port})


def tolerations(pod: Pod) -> list[list[Any]]:
    """The tolerations sorted by key then value (TolerationsSigner)."""
    ordered = sorted(pod.tolerations, key=lambda t: (t.key, t.value))
    return [[t.key, t.operator, t.value, t.effect, t.toleration_seconds] for t in ordered]


def volumes(pod: Pod) -> list[str]:
    """Every volume source but configMap and secret ones, which never affect scheduling and
    would make every pod's signature unique (VolumesSigner)."""
    return sorted(
        _dumps({v.source: v.spec}) for v in pod.volumes if v.source not in ("configMap", "secret")
    )


def _requirements(reqs: tuple[Requirement, ...]) -> list[str]:
    return sorted(_dumps([r.key, r.operator, sorted(r.values)]) for r in reqs)


def _term(term: NodeSelectorTerm) -> dict[str, list[str]]:
    return {
        "MatchExpressions": _requirements(term.expressions),
        "MatchFields": _requirements(term.fields),
    }


def node_affinity(pod: Pod) -> dict[str, list[str]] | None:
    """Required and preferred node affinity with every list sorted (NodeAffinitySigner)."""
    required = pod.required_node_affinity
    preferred = pod.preferred_node_affinity
    if required is None and not preferred:
        return None
    return {
        "Required": sorted(_dumps(_term(t)) for t in required.terms) if required else [],
        "Preferred": sorted(
            _dumps({"Weight": p.weight, "Preference": _term(p.term)}) for p in preferred
        ),
    }


def resources(pod: Pod) -> dict[str, Any]:
    """The pod's effective requests (containers, init containers, overhead, pod level)."""
    r = pod.requests
    return {
        "MilliCPU": r.milli_cpu,
        "Memory": r.memory,
        "EphemeralStorage": r.ephemeral_storage,
        "AllowedPodNumber": r.allowed_pod_number,
        "ScalarResources": dict(sorted(r.scalar.items())),
    }


def marshal(signature: dict[str, Any]) -> bytes | None:
    """The signature's bytes (keys sorted, as encoding/json sorts map keys); None if a value
    cannot be serialised."""
    try:
        return _dumps(signature).encode()
    except (TypeError, ValueError):
        return None
