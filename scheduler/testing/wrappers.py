"""Fluent pod and node builders in the style of kube-scheduler's testing/wrappers.go.

    pod = PodWrapper("web").req(cpu="1").label("app", "web").node_selector({"disk": "ssd"}).obj()
    node = NodeWrapper("n1").capacity(cpu="4", memory="8Gi").label("disk", "ssd").obj()

Each wrapper collects keyword arguments of `pod_json`/`node_json` and parses the result with
the real parser, so a wrapper and the keyword builders can never disagree about a field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from scheduler.api.objects import Node, Pod
from scheduler.api.parse import parse_node, parse_pod
from scheduler.testing.builders import node_json, pod_json

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class PodWrapper:
    """Builds one pod; every method returns the wrapper, `obj()` the parsed Pod."""

    def __init__(self, name: str = "pod", namespace: str = "default") -> None:
        self._name = name
        self._namespace = namespace
        self._kw: dict[str, Any] = {}

    def uid(self, uid: str) -> Self:
        self._kw["uid"] = uid
        return self

    def scheduler_name(self, name: str) -> Self:
        self._kw["scheduler_name"] = name
        return self

    def req(
        self,
        resources: Mapping[str, str] | None = None,
        *,
        cpu: str | None = None,
        memory: str | None = None,
    ) -> Self:
        """Requests of the pod's container; extended resources go in `resources`."""
        reqs: dict[str, str] = self._kw.setdefault("requests", {})
        reqs.update(resources or {})
        if cpu is not None:
            reqs["cpu"] = cpu
        if memory is not None:
            reqs["memory"] = memory
        return self

    def label(self, key: str, value: str) -> Self:
        self._kw.setdefault("labels", {})[key] = value
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when_unsatisfiable: str,
        selector: Mapping[str, Any] | None,
        **extra: Any,
    ) -> Self:
        """A topologySpreadConstraint; `selector` is the labelSelector object (None: nil),
        `extra` the optional fields by their API names (minDomains, nodeAffinityPolicy...)."""
        constraint: dict[str, Any] = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": when_unsatisfiable,
            **extra,
        }
        if selector is not None:
            constraint["labelSelector"] = dict(selector)
        self._kw.setdefault("topology_spread_constraints", []).append(constraint)
        return self

    def owner(self, kind: str, name: str, api_version: str = "apps/v1") -> Self:
        """A controller owner reference."""
        ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
        self._kw.setdefault("owner_references", []).append({**ref, "controller": True})
        return self

    def terminating(self, timestamp: str = "2026-01-01T00:00:00Z") -> Self:
        self._kw["deletion_timestamp"] = timestamp
        return self

    def priority(self, value: int) -> Self:
        self._kw["priority"] = value
        return self

    def node(self, name: str) -> Self:
        """spec.nodeName: the pod is bound (or asks for that node)."""
        self._kw["node_name"] = name
        return self

    def nominated_node_name(self, name: str) -> Self:
        self._kw["nominated_node_name"] = name
        return self

    def node_selector(self, selector: Mapping[str, str]) -> Self:
        self._kw.setdefault("node_selector", {}).update(selector)
        return self

    def node_affinity_in(self, key: str, values: list[str]) -> Self:
        """A required node affinity term `key In values` (ANDed into the first term)."""
        self._node_terms().append({"key": key, "operator": "In", "values": list(values)})
        return self

    def node_affinity_not_in(self, key: str, values: list[str]) -> Self:
        self._node_terms().append({"key": key, "operator": "NotIn", "values": list(values)})
        return self

    def preferred_node_affinity(self, weight: int, key: str, values: list[str]) -> Self:
        """A preferred term `key In values` with the given weight."""
        node_affinity = self._kw.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        node_affinity.setdefault(_PREFERRED, []).append(
            {
                "weight": weight,
                "preference": {
                    "matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]
                },
            }
        )
        return self

    def _node_terms(self) -> list[dict[str, Any]]:
        node_affinity = self._kw.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        terms = node_affinity.setdefault(_REQUIRED, {"nodeSelectorTerms": [{}]})
        expressions: list[dict[str, Any]] = terms["nodeSelectorTerms"][0].setdefault(
            "matchExpressions", []
        )
        return expressions

    def toleration(
        self, key: str = "", value: str = "", effect: str = "", operator: str = "Equal"
    ) -> Self:
        """A toleration; `operator="Exists"` with no key tolerates every taint."""
        toleration = {"key": key, "operator": operator, "value": value, "effect": effect}
        self._kw.setdefault("tolerations", []).append(
            {k: v for k, v in toleration.items() if v or k == "operator"}
        )
        return self

    def host_port(self, port: int) -> Self:
        self._kw.setdefault("host_ports", []).append(port)
        return self

    def scheduling_gates(self, *names: str) -> Self:
        self._kw.setdefault("scheduling_gates", []).extend(names)
        return self

    def preemption_policy(self, policy: str) -> Self:
        self._kw["preemption_policy"] = policy
        return self

    def start_time(self, timestamp: str) -> Self:
        """status.startTime (and phase Running), as for a pod already running."""
        self._kw["start_time"] = timestamp
        return self

    def creation_timestamp(self, timestamp: str) -> Self:
        self._kw["creation_timestamp"] = timestamp
        return self

    def json(self) -> dict[str, Any]:
        """The pod as the API server would return it."""
        return pod_json(self._name, self._namespace, **self._kw)

    def obj(self) -> Pod:
        """The pod parsed as the scheduler's informers parse it."""
        return parse_pod(self.json())


class NodeWrapper:
    """Builds one node (4 cpu, 32Gi, 110 pods unless changed); `obj()` the parsed Node."""

    def __init__(self, name: str = "node") -> None:
        self._name = name
        self._kw: dict[str, Any] = {}

    def capacity(
        self,
        resources: Mapping[str, str] | None = None,
        *,
        cpu: str | None = None,
        memory: str | None = None,
        pods: int | None = None,
        ephemeral_storage: str | None = None,
    ) -> Self:
        """Allocatable (and capacity); extended resources go in `resources`."""
        for key, value in (
            ("cpu", cpu),
            ("memory", memory),
            ("pods", pods),
            ("ephemeral_storage", ephemeral_storage),
        ):
            if value is not None:
                self._kw[key] = value
        if resources:
            self._kw.setdefault("extended", {}).update(resources)
        return self

    def label(self, key: str, value: str) -> Self:
        self._kw.setdefault("labels", {})[key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._kw.setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def unschedulable(self, value: bool = True) -> Self:
        """spec.unschedulable, as `kubectl cordon` sets it."""
        self._kw["unschedulable"] = value
        return self

    def json(self) -> dict[str, Any]:
        return node_json(self._name, **self._kw)

    def obj(self) -> Node:
        return parse_node(self.json())
