"""A small fake framework Handle for plugin unit tests: records API calls, serves a snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import Node, Pod, PodDisruptionBudget
from scheduler.backend.cache import Cache, Snapshot
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import WaitingPod
from scheduler.framework.registry import PluginSpec
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo


class FakeApi:
    """Records binds, deletes and status patches; `fail_with` makes every call raise it."""

    def __init__(self) -> None:
        self.binds: list[tuple[str, str]] = []
        self.deletes: list[str] = []
        self.patches: list[tuple[str, Mapping[str, Any]]] = []
        self.fail_with: Exception | None = None

    def _check(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    def bind(self, pod: Pod, node_name: str) -> None:
        self._check()
        self.binds.append((pod.key, node_name))

    def delete_pod(self, pod: Pod, grace_period_seconds: int | None = None) -> None:
        self._check()
        self.deletes.append(pod.key)

    def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        self._check()
        self.patches.append((pod.key, patch))


class FakeNominator:
    def __init__(self) -> None:
        self.by_node: dict[str, list[Pod]] = {}

    def add_nominated_pod(self, pod: Pod, nominated_node_name: str) -> None:
        self.by_node.setdefault(nominated_node_name, []).append(pod)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        for pods in self.by_node.values():
            pods[:] = [p for p in pods if p.uid != pod.uid]

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self.by_node.get(node_name, ()))

    def nominated_node_for(self, uid: str) -> str | None:
        for node, pods in self.by_node.items():
            if any(p.uid == uid for p in pods):
                return node
        return None


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def eventf(
        self,
        regarding: Pod,
        related: Pod | None,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None:
        self.events.append((event_type, reason, action, message))


def make_snapshot(nodes: Iterable[Node] = (), pods: Iterable[Pod] = ()) -> Snapshot:
    """A real Snapshot (and NodeTable) built through the cache, as the scheduler builds it."""
    cache = Cache()
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        cache.add_pod(pod)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


@dataclass
class FakeHandle:
    """Implements framework.interface.Handle with in-memory fakes; nothing talks to a cluster."""

    features: FeatureGates = field(default_factory=FeatureGates)
    profile_name: str = "default-scheduler"
    snap: Snapshot = field(default_factory=Snapshot)
    fake_api: FakeApi = field(default_factory=FakeApi)
    fake_nominator: FakeNominator = field(default_factory=FakeNominator)
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    pdb_list: list[PodDisruptionBudget] = field(default_factory=list)
    activated: list[Pod] = field(default_factory=list)

    def snapshot(self) -> Snapshot:
        return self.snap

    @property
    def api(self) -> FakeApi:
        return self.fake_api

    @property
    def nominator(self) -> FakeNominator:
        return self.fake_nominator

    @property
    def event_recorder(self) -> FakeRecorder:
        return self.recorder

    def pdbs(self) -> list[PodDisruptionBudget]:
        return self.pdb_list

    def activate(self, pods: Iterable[Pod]) -> None:
        self.activated.extend(pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return None

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        return None

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return None


def build_plugin(
    spec: PluginSpec,
    raw_args: Mapping[str, Any] | None = None,
    handle: FakeHandle | None = None,
) -> Any:
    """Decodes raw args (if the plugin has any) and builds the plugin with a fake handle."""
    args = spec.decode_args(raw_args) if spec.decode_args is not None else None
    return spec.factory(args, handle or FakeHandle())
