"""A fake framework Handle, a snapshot builder and a plugin builder for plugin unit tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.api.gang import GangRef
from scheduler.api.namespace import Namespace
from scheduler.api.objects import Node, Pod, PodDisruptionBudget
from scheduler.api.spread import Service, Workload
from scheduler.backend.cache import Cache, Snapshot
from scheduler.clock import FakeClock
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.dra import DRAManager, StaticDRA
from scheduler.framework.evictions import Evictions
from scheduler.framework.gang import GangMembers, StaticGangs
from scheduler.framework.interface import CountingCheck, Handle, Plugin, WaitingPod
from scheduler.framework.registry import PluginSpec
from scheduler.framework.status import Status
from scheduler.framework.storage import StaticStorage
from scheduler.framework.types import NodeInfo
from scheduler.framework.waiting_pods import WaitingPods
from scheduler.testing.fakes import FakeApi, FakeNominator, FakeRecorder


def make_snapshot(nodes: Iterable[Node] = (), pods: Iterable[Pod] = ()) -> Snapshot:
    """A real Snapshot (and NodeTable) built through the cache, as the scheduler builds it.

    Pods must carry `spec.nodeName` (they are the pods already running on those nodes).
    """
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
    """Implements `scheduler.framework.Handle` with in-memory fakes; nothing talks to a cluster.

    `snap` is what `snapshot()` serves, `pods` what `get_pod()` finds (by namespace/name),
    `pdb_list` what `pdbs()` returns, `namespace_list` the namespaces `namespace_labels()` and
    `namespaces()` know, `service_list` and `workloads` what `services()` and `workload()`
    find, `static_storage` what `storage()` serves, `static_gangs` what `gangs()` serves,
    `static_dra` what `dra()` serves;
    `cache` is what `gang_members()` counts (assume pods into it) and `node_now()` and
    `node_generation()` read; `evicted` is what `evictions` remembers;
    `waiting` holds the pods waiting at Permit (their timeouts run on `clock`); `activated`
    collects pods passed to `activate()`.
    The nominated-pods and PreFilter-extension runners succeed without running anything: a
    plugin that needs them is tested with the in-process scheduler, not a fake handle.
    """

    features: FeatureGates = field(default_factory=FeatureGates)
    profile_name: str = "default-scheduler"
    seed: int | None = None
    snap: Snapshot = field(default_factory=Snapshot)
    fake_api: FakeApi = field(default_factory=FakeApi)
    fake_nominator: FakeNominator = field(default_factory=FakeNominator)
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    pdb_list: list[PodDisruptionBudget] = field(default_factory=list)
    pods: dict[str, Pod] = field(default_factory=dict)
    namespace_list: list[Namespace] = field(default_factory=list)
    service_list: list[Service] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    static_storage: StaticStorage = field(default_factory=StaticStorage)
    static_gangs: StaticGangs = field(default_factory=StaticGangs)
    static_dra: StaticDRA = field(default_factory=StaticDRA)
    dra_manager: DRAManager | None = None
    cache: Cache = field(default_factory=Cache)
    clock: FakeClock = field(default_factory=FakeClock)
    evicted: Evictions = field(default_factory=Evictions)
    waiting: WaitingPods | None = None
    activated: list[Pod] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.waiting is None:
            self.waiting = WaitingPods(self.clock)

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

    def get_pod(self, key: str) -> Pod | None:
        return self.pods.get(key)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        for namespace in self.namespace_list:
            if namespace.name == name:
                return namespace.labels
        return None

    def namespaces(self) -> list[Namespace]:
        return list(self.namespace_list)

    def services(self, namespace: str) -> list[Service]:
        return [s for s in self.service_list if s.namespace == namespace]

    def workload(self, kind: str, namespace: str, name: str) -> Workload | None:
        for w in self.workloads:
            if (w.kind, w.namespace, w.name) == (kind, namespace, name):
                return w
        return None

    def storage(self) -> StaticStorage:
        return self.static_storage

    def dra(self) -> DRAManager:
        """A manager over `static_dra`, made on first use (add claims and slices first)."""
        if self.dra_manager is None:
            self.dra_manager = DRAManager(self.static_dra)
        return self.dra_manager

    def gangs(self) -> StaticGangs:
        return self.static_gangs

    def gang_members(self, ref: GangRef) -> GangMembers:
        return self.cache.gang_members(ref)

    def node_now(self, name: str) -> NodeInfo | None:
        return self.cache.node_now(name)

    def node_generation(self, name: str) -> int | None:
        return self.cache.node_generation(name)

    @property
    def evictions(self) -> Evictions:
        return self.evicted

    def watched_gangs(self) -> StaticGangs:
        return self.static_gangs

    def activate(self, pods: Iterable[Pod]) -> None:
        self.activated.extend(pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        assert self.waiting is not None
        return self.waiting.get(uid)

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        assert self.waiting is not None
        for waiting in self.waiting.all():
            fn(waiting)

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        return None

    def counting_filter(self, state: CycleState, pod: Pod) -> CountingCheck | None:
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
    """Decodes raw args as the profile's `pluginConfig` would and builds the plugin.

    Returns Any so a test can call the plugin's own methods without casts; the ArgsError of a
    bad `raw_args` propagates, as it would fail the config.
    """
    args = spec.decode_args(raw_args) if spec.decode_args is not None else None
    plugin: Plugin = spec.factory(args, handle if handle is not None else FakeHandle())
    return plugin


if TYPE_CHECKING:

    def _fake_handle_is_a_handle(handle: FakeHandle) -> Handle:
        """mypy checks here that FakeHandle keeps up with the Handle Protocol."""
        return handle
