"""An in-process scheduler for unit tests: real cache, queue, framework and loop; the testing
kit's FakeApi and FakeRecorder.

The plugins here are deliberately tiny (cpu fit, most-free-cpu score, a binder) so tests of the
scheduling core do not depend on the in-tree plugins' details.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.api.objects import Pod, PodDisruptionBudget
from scheduler.backend.cache import Cache, Snapshot
from scheduler.backend.queue import QueueProfile, SchedulingQueue
from scheduler.clock import FakeClock
from scheduler.explain.record import ExplainStore
from scheduler.features import FeatureGates
from scheduler.framework import signers
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.dra import DRAManager, StaticDRA
from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.framework.gang import StaticGangs
from scheduler.framework.interface import Handle
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.profile_spec import PluginRef, PluginSetSpec, ProfileSpec
from scheduler.framework.registry import PluginSpec, Registry
from scheduler.framework.runtime import Framework, FrameworkServices
from scheduler.framework.signers import SignFragment
from scheduler.framework.status import Code, Status
from scheduler.framework.storage import StaticStorage
from scheduler.framework.types import NodeInfo, QueuedPodInfo
from scheduler.scheduler import Scheduler
from scheduler.testing import FakeApi, FakeRecorder

PROFILE = "kube-pysched"


class SortByPriority:
    name = "Sort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return bool(self.sort_key(a) < self.sort_key(b))

    def sort_key(self, info: QueuedPodInfo) -> Any:
        return (-info.pod.priority, info.timestamp)


class CpuFit:
    """Rejects nodes without enough free cpu; batch and per-node forms agree."""

    name = "CpuFit"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        free = node_info.allocatable.milli_cpu - node_info.requested.milli_cpu
        if pod.requests.milli_cpu > free:
            return Status(Code.UNSCHEDULABLE, "Insufficient cpu")
        return None

    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        result: BoolColumn = (table.alloc_cpu - table.req_cpu) >= pod.requests.milli_cpu
        return result

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        return [SignFragment(signers.RESOURCES, signers.resources(pod))], None


class MostFreeCpu:
    """Free millicores / 100, capped at 100: prefers the emptiest node in absolute terms."""

    name = "MostFreeCpu"

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        free = node_info.allocatable.milli_cpu - node_info.requested.milli_cpu
        return min(max(free, 0) // 100, 100)

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.int64] | None:
        free = table.alloc_cpu[rows] - table.req_cpu[rows]
        scores: npt.NDArray[np.int64] = np.minimum(np.maximum(free, 0) // 100, 100).astype(np.int64)
        return scores

    def score_extensions(self) -> None:
        return None

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        return [SignFragment(signers.RESOURCES, signers.resources(pod))], None


class Binder:
    name = "Binder"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            self.handle.api.bind(pod, node_name)
        except Exception as err:
            return Status.as_error(err)
        return None


def registry() -> Registry:
    return Registry(
        {
            "Sort": PluginSpec(lambda args, h: SortByPriority()),
            "CpuFit": PluginSpec(lambda args, h: CpuFit()),
            "MostFreeCpu": PluginSpec(lambda args, h: MostFreeCpu()),
            "Binder": PluginSpec(lambda args, h: Binder(h)),
        }
    )


def profile_spec(name: str = PROFILE, *, score: bool = True) -> ProfileSpec:
    enabled = [PluginRef("Sort"), PluginRef("CpuFit"), PluginRef("Binder")]
    if score:
        enabled.append(PluginRef("MostFreeCpu", 1))
    return ProfileSpec(name, plugins={"multiPoint": PluginSetSpec(enabled=tuple(enabled))})


class Harness:
    """Everything wired as the app wires it, with pods and nodes fed straight to the handlers."""

    def __init__(
        self,
        spec: ProfileSpec | None = None,
        *,
        plugins: Registry | None = None,
        features: FeatureGates | None = None,
        storage: StaticStorage | None = None,
        gangs: StaticGangs | None = None,
        dra: StaticDRA | None = None,
        watch_gangs: bool = True,
        binding_workers: int | None = 2,
        explain: ExplainStore | None = None,
    ) -> None:
        """`explain`: where the scheduler records each pod's latest attempt (None: it does not).
        `watch_gangs=False`: Handle.watched_gangs() is None, as in a process whose profiles
        have no gang plugin (preemption then never looks at pods' groups).
        `binding_workers=None`: the Scheduler's own default pool."""
        self.clock = FakeClock()
        self.storage = storage if storage is not None else StaticStorage()
        self.dra = DRAManager(dra if dra is not None else StaticDRA())
        # Pods added through add_pod / add_assigned_pod become members here, as the pod
        # informer's member index would count them.
        self.gangs = gangs if gangs is not None else StaticGangs()
        self.api = FakeApi()
        self.recorder = FakeRecorder()
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.pods: dict[str, Pod] = {}
        self.pdbs: list[PodDisruptionBudget] = []
        features = features or FeatureGates()
        services = FrameworkServices(
            snapshot=lambda: self.snapshot,
            api=self.api,
            event_recorder=self.recorder,
            features=features,
            pdbs=lambda: list(self.pdbs),
            pod_lookup=self.pods.get,
            storage=lambda: self.storage,
            dra=lambda: self.dra,
            gangs=lambda: self.gangs,
            gang_members=self.cache.gang_members,
            watched_gangs=(lambda: self.gangs) if watch_gangs else (lambda: None),
            clock=self.clock,
        )
        self.fwk = Framework(spec or profile_spec(), plugins or registry(), services)
        sort = self.fwk.queue_sort_plugins[0]
        self.queue = SchedulingQueue(
            clock=self.clock,
            less=sort.less,
            sort_key=sort.sort_key,
            profiles={
                self.fwk.profile_name: QueueProfile(
                    pre_enqueue=self.fwk.pre_enqueue_plugins,
                    events_to_register=self.fwk.events_to_register(),
                    sign_pod=self.fwk.sign_pod,
                )
            },
            features=features,
        )
        self.fwk.set_queue(self.queue.nominator, self.queue.activate)
        pool = {} if binding_workers is None else {"binding_workers": binding_workers}
        self.scheduler = Scheduler(
            cache=self.cache,
            queue=self.queue,
            profiles={self.fwk.profile_name: self.fwk},
            snapshot=self.snapshot,
            api=self.api,
            recorder=self.recorder,
            pod_lookup=self.pods.get,
            clock=self.clock,
            api_workers=1,
            explain=explain,
            **pool,
        )

    def add_node(self, node: Any) -> None:
        self.cache.add_node(node)

    def add_pod(self, pod: Pod) -> None:
        self.pods[pod.key] = pod
        self.gangs.add(pod)
        self.queue.add(pod)

    def add_assigned_pod(self, pod: Pod) -> None:
        """A pod already running on its node (as the pod informer would report it)."""
        self.pods[pod.key] = pod
        self.gangs.add(pod)
        self.cache.add_pod(pod)

    def schedule_next(self) -> None:
        assert self.scheduler.schedule_one()

    def close(self) -> None:
        self.scheduler.stop()


def poll(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Polls with a deadline, for state that worker threads change on their own time."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)
