"""The framework of one profile: it builds the profile's plugins, is the `Handle` they receive,
and runs them at each extension point (the runners are in filter_points, score_points and
binding_points; the Filter over all nodes is a FilterPass)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from scheduler.api.gang import GangRef
from scheduler.api.namespace import Namespace
from scheduler.api.objects import Pod, PodDisruptionBudget
from scheduler.api.spread import Service, Workload
from scheduler.clock import Clock, RealClock
from scheduler.features import FeatureGates
from scheduler.framework import signers
from scheduler.framework.dra import DRAManager, StaticDRA
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.evictions import Evictions
from scheduler.framework.gang import (
    NO_MEMBERS,
    GangLister,
    GangMembers,
    PodGroupInfo,
    StaticGangs,
)
from scheduler.framework.interface import (
    ApiActions,
    EventRecorder,
    Plugin,
    PodGroupPlugin,
    PodGroupPostFilterPlugin,
    PodNominator,
    QueueSortPlugin,
    SnapshotLister,
    StorageLister,
)
from scheduler.framework.profile_spec import ProfileSpec
from scheduler.framework.registry import Registry
from scheduler.framework.runtime.batch import OpportunisticBatch, signing_plugins
from scheduler.framework.runtime.binding_points import BindingPoints
from scheduler.framework.runtime.calls import SIGN
from scheduler.framework.runtime.filter_points import FilterPoints
from scheduler.framework.runtime.profile import build_profile
from scheduler.framework.runtime.score_points import ScorePoints
from scheduler.framework.status import Code, Status
from scheduler.framework.storage import StaticStorage
from scheduler.framework.types import NodeInfo, QueuedPodInfo
from scheduler.framework.waiting_pods import WaitingPod, WaitingPods

log = structlog.get_logger(__name__)


@dataclass
class FrameworkServices:
    """What plugins reach through the Handle; the scheduler provides these."""

    snapshot: Callable[[], SnapshotLister]
    api: ApiActions
    event_recorder: EventRecorder
    features: FeatureGates
    pdbs: Callable[[], list[PodDisruptionBudget]] = list
    pod_lookup: Callable[[str], Pod | None] = lambda _key: None
    namespace_lookup: Callable[[str], Namespace | None] = lambda _name: None
    namespace_list: Callable[[], list[Namespace]] = list
    services: Callable[[str], list[Service]] = lambda _namespace: []
    workload: Callable[[str, str, str], Workload | None] = lambda _kind, _ns, _name: None
    # Called when a plugin first asks for storage objects (the process then watches them).
    storage: Callable[[], StorageLister] = StaticStorage
    # Called when a plugin first asks for DRA objects (the process then watches them); the
    # same manager on every call.
    dra: Callable[[], DRAManager] = field(default_factory=lambda: _static_dra())  # noqa: PLW0108 (defined below)
    # Called when a plugin first asks for pod groups (the process then watches PodGroups).
    gangs: Callable[[], GangLister] = StaticGangs
    gang_members: Callable[[GangRef], GangMembers] = lambda _ref: NO_MEMBERS
    # The scheduler cache's node now (a copy), for queueing hints.
    node_now: Callable[[str], NodeInfo | None] = lambda _name: None
    node_generation: Callable[[str], int | None] = lambda _name: None
    # The evictions preemption asked for, one memory for all profiles.
    evictions: Evictions = field(default_factory=Evictions)
    # The pod groups if some plugin asked for them (never starts a watch).
    watched_gangs: Callable[[], GangLister | None] = lambda: None
    # Opportunistic batching's clock (the age of its kept nodes), and gang timers'.
    clock: Clock = field(default_factory=RealClock)
    # The seed of the random choices (ties among best nodes, preemption's start offset).
    seed: int | None = None


def _static_dra() -> Callable[[], DRAManager]:
    """One empty DRA manager, made on first use: the default without DRA informers."""
    made: list[DRAManager] = []

    def get() -> DRAManager:
        if not made:
            made.append(DRAManager(StaticDRA()))
        return made[0]

    return get


class Framework(FilterPoints, ScorePoints, BindingPoints):
    """A profile's plugins by extension point, and the code that runs them."""

    def __init__(self, spec: ProfileSpec, registry: Registry, services: FrameworkServices) -> None:
        super().__init__(spec.scheduler_name)
        self.features = services.features
        self.clock = services.clock
        self.seed = services.seed
        self.percentage_of_nodes_to_score = spec.percentage_of_nodes_to_score
        self._services = services
        self._activate: Callable[[Iterable[Pod]], None] | None = None
        self.waiting_pods = WaitingPods(services.clock)
        profile = build_profile(spec, registry, self)
        self.plugins: dict[str, Plugin] = profile.by_name
        self._set_profile(profile)
        #: The plugins that define pod groups (empty in a profile without gang scheduling:
        #: then the loop never looks further).
        self.pod_group_plugins: tuple[PodGroupPlugin, ...] = tuple(
            p for p in self.plugins.values() if isinstance(p, PodGroupPlugin)
        )
        #: The PostFilter plugins that can make room for a whole group (DefaultPreemption).
        self.pod_group_post_filter_plugins: tuple[PodGroupPostFilterPlugin, ...] = tuple(
            p for p in self.post_filter_plugins if isinstance(p, PodGroupPostFilterPlugin)
        )
        self._signers = signing_plugins(
            [profile.pre_filter, profile.filter, profile.pre_score, profile.score]
        )
        #: Opportunistic batching's state, with the OpportunisticBatching gate on.
        self.batch: OpportunisticBatch | None = None
        if self.features.enabled("OpportunisticBatching"):
            self.batch = OpportunisticBatch(self, services.clock, services.seed)

    def set_queue(self, nominator: PodNominator, activate: Callable[[Iterable[Pod]], None]) -> None:
        """Connects the queue once it exists (the queue needs the frameworks first)."""
        self._nominator = nominator
        self._activate = activate

    # --- Handle -----------------------------------------------------------------------------

    def snapshot(self) -> SnapshotLister:
        return self._services.snapshot()

    @property
    def api(self) -> ApiActions:
        return self._services.api

    @property
    def nominator(self) -> PodNominator:
        assert self._nominator is not None, "framework used before the queue was connected"
        return self._nominator

    @property
    def event_recorder(self) -> EventRecorder:
        return self._services.event_recorder

    def pdbs(self) -> list[PodDisruptionBudget]:
        return self._services.pdbs()

    def get_pod(self, key: str) -> Pod | None:
        return self._services.pod_lookup(key)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        namespace = self._services.namespace_lookup(name)
        return namespace.labels if namespace is not None else None

    def namespaces(self) -> list[Namespace]:
        return self._services.namespace_list()

    def services(self, namespace: str) -> list[Service]:
        return self._services.services(namespace)

    def workload(self, kind: str, namespace: str, name: str) -> Workload | None:
        return self._services.workload(kind, namespace, name)

    def storage(self) -> StorageLister:
        return self._services.storage()

    def dra(self) -> DRAManager:
        return self._services.dra()

    def gangs(self) -> GangLister:
        return self._services.gangs()

    def gang_members(self, ref: GangRef) -> GangMembers:
        return self._services.gang_members(ref)

    def node_now(self, name: str) -> NodeInfo | None:
        return self._services.node_now(name)

    def node_generation(self, name: str) -> int | None:
        return self._services.node_generation(name)

    @property
    def evictions(self) -> Evictions:
        return self._services.evictions

    def watched_gangs(self) -> GangLister | None:
        return self._services.watched_gangs()

    def activate(self, pods: Iterable[Pod]) -> None:
        if self._activate is not None:
            self._activate(pods)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None:
        for waiting in self.waiting_pods.all():
            fn(waiting)

    def reject_waiting_pod(self, uid: str) -> bool:
        waiting = self.waiting_pods.get(uid)
        if waiting is None:
            return False
        waiting.reject("", "removed")
        return True

    def close(self) -> None:
        """Lets plugins that hold resources (threads, connections) release them, as
        kube-scheduler closes each plugin implementing io.Closer when the scheduler stops."""
        for name, plugin in self.plugins.items():
            close = getattr(plugin, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception:  # one plugin's failure must not keep the others open
                log.exception("closing plugin failed", plugin=name, profile=self.profile_name)

    # --- signatures -------------------------------------------------------------------------

    @property
    def signs_pods(self) -> bool:
        """Whether every PreFilter, Filter, PreScore and Score plugin can sign pods."""
        return self._signers is not None

    def sign_pod(self, pod: Pod) -> bytes | None:
        """The pod's signature (KEP-5598): the scheduler name and every plugin's fragments,
        one per key; None when the profile cannot sign or a plugin refuses this pod
        (frameworkImpl.SignPod)."""
        start = time.perf_counter()
        try:
            if self._signers is None:
                return None
            signature: dict[str, Any] = {signers.SCHEDULER_NAME: pod.scheduler_name}
            for pl in self._signers:
                t0 = time.perf_counter()
                try:
                    fragments, status = pl.sign_pod(pod)
                except Exception as err:
                    fragments, status = None, Status.as_error(err)
                self._observe_plugin(SIGN, pl.name, status, t0)
                if status is not None and status.code != Code.SUCCESS:
                    if status.code == Code.ERROR:
                        log.error("SignPod failed", plugin=pl.name, error=status.message())
                    return None
                for fragment in fragments or ():
                    signature[fragment.key] = fragment.value
            return signers.marshal(signature)
        finally:
            # Upstream reports this extension point's status as Success whatever happened.
            self._observe(SIGN, None, start)

    # --- queue integration ------------------------------------------------------------------

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """plugin name -> its events, for every plugin that registers any."""
        result: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            register = getattr(plugin, "events_to_register", None)
            if callable(register):
                result[name] = list(register())
        return result

    def queue_sort(self) -> QueueSortPlugin:
        return self.queue_sort_plugins[0]

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return bool(self.queue_sort_plugins[0].less(a, b))

    # --- what the loop asks of a profile ----------------------------------------------------

    def pod_group(self, pod: Pod) -> PodGroupInfo | None:
        """The pod's group as the profile's PodGroupPlugins define it; None for a pod
        scheduled on its own."""
        for plugin in self.pod_group_plugins:
            info = plugin.pod_group(pod)
            if info is not None:
                return info
        return None

    def group_failed(self, info: PodGroupInfo) -> None:
        for plugin in self.pod_group_plugins:
            if plugin.name == info.plugin:
                plugin.group_failed(info.key)

    def group_placed(self, info: PodGroupInfo) -> None:
        for plugin in self.pod_group_plugins:
            if plugin.name == info.plugin:
                plugin.group_placed(info.key)

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)
