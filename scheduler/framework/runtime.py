"""The framework runtime: one per profile, it builds the profile's plugins and runs them.

It also is the `Handle` plugins receive. Extension points run as kube-scheduler's
frameworkImpl runs them (order, Skip handling, error wrapping, metrics); Filter and Score add a
column-at-a-time path through the plugins' optional batch methods, used by the scheduling loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from scheduler import metrics
from scheduler.api.objects import Pod, PodDisruptionBudget
from scheduler.features import FeatureGates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ApiActions,
    EventRecorder,
    Plugin,
    PodNominator,
    ScoreColumn,
    SnapshotLister,
)
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.profile_spec import EXTENSION_POINTS, MULTI_POINT, ProfileSpec
from scheduler.framework.registry import ArgsError, Registry
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    NodeInfo,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)
from scheduler.framework.waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod, WaitingPods

log = structlog.get_logger(__name__)

MAX_TOTAL_SCORE = 2**63 - 1

# The method that makes a plugin belong to an extension point.
_POINT_METHOD = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}
_POINT_TYPE_NAME = {
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "reserve": "ReservePlugin",
    "permit": "PermitPlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
}

# extension point label values (metrics)
PRE_FILTER = "PreFilter"
FILTER = "Filter"
PRE_FILTER_ADD_POD = "PreFilterExtensionAddPod"
PRE_FILTER_REMOVE_POD = "PreFilterExtensionRemovePod"
POST_FILTER = "PostFilter"
PRE_SCORE = "PreScore"
SCORE = "Score"
NORMALIZE_SCORE = "ScoreExtensionNormalize"
RESERVE = "Reserve"
UNRESERVE = "Unreserve"
PERMIT = "Permit"
PRE_BIND = "PreBind"
BIND = "Bind"
POST_BIND = "PostBind"


class FrameworkError(Exception):
    """A profile that cannot be built (unknown plugin, wrong extension point, bad args)."""


class PluginArgsError(FrameworkError):
    """Invalid args for one plugin; `path` is relative to the plugin's args."""

    def __init__(self, plugin: str, path: str, message: str) -> None:
        super().__init__(f"{plugin}: {path}: {message}" if path else f"{plugin}: {message}")
        self.plugin = plugin
        self.path = path
        self.message = message


@dataclass
class FrameworkServices:
    """What plugins reach through the Handle; the scheduler provides these."""

    snapshot: Callable[[], SnapshotLister]
    api: ApiActions
    event_recorder: EventRecorder
    features: FeatureGates
    pdbs: Callable[[], list[PodDisruptionBudget]] = list
    pod_lookup: Callable[[str], Pod | None] = lambda _key: None


def _run_filter_plugin(pl: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
    """One Filter plugin on one node: None when it passes, else its rejection tagged with the
    plugin, or an Error naming the plugin (also for an exception it raised)."""
    status: Status | None
    try:
        status = pl.filter(state, pod, node_info)
    except Exception as err:
        status = Status.as_error(err)
    if status is None or status.code == Code.SUCCESS:
        return None
    if not status.is_rejected():
        status = Status(
            Code.ERROR, f"running {pl.name!r} filter plugin: {status.message()}", error=status.error
        )
    status.plugin = pl.name
    return status


def _code_label(status: Status | None) -> str:
    return "Success" if status is None else status.code.label()


def _plugin_error(point: str, plugin: str, status: Status) -> Status:
    """A plugin's failure that is not a rejection, worded as kube-scheduler words it."""
    return Status(
        Code.ERROR,
        f"running {point} plugin {plugin!r}: {status.message()}",
        plugin=plugin,
        error=status.error,
    )


def _rejection_or_error(point: str, plugin: str, status: Status) -> Status:
    """A rejection keeps its code and names its plugin; anything else becomes an Error."""
    return (
        status.with_plugin(plugin) if status.is_rejected() else _plugin_error(point, plugin, status)
    )


class Framework:
    """A profile's plugins by extension point, and the code that runs them."""

    def __init__(self, spec: ProfileSpec, registry: Registry, services: FrameworkServices) -> None:
        self.profile_name = spec.scheduler_name
        self.features = services.features
        self.percentage_of_nodes_to_score = spec.percentage_of_nodes_to_score
        self._services = services
        self._nominator: PodNominator | None = None
        self._activate: Callable[[Iterable[Pod]], None] | None = None
        self.waiting_pods = WaitingPods()
        self._ext_point_timers: dict[tuple[str, str], Any] = {}
        self._plugin_timers: dict[tuple[str, str, str], Any] = {}

        self.plugins: dict[str, Plugin] = self._instantiate(spec, registry)
        lists = {point: self._plugins_for(spec, point) for point in EXTENSION_POINTS}
        self.pre_enqueue_plugins: list[Any] = lists["preEnqueue"]
        self.queue_sort_plugins: list[Any] = lists["queueSort"]
        self.pre_filter_plugins: list[Any] = lists["preFilter"]
        self.filter_plugins: list[Any] = lists["filter"]
        self.post_filter_plugins: list[Any] = lists["postFilter"]
        self.pre_score_plugins: list[Any] = lists["preScore"]
        self.score_plugins: list[Any] = lists["score"]
        self.reserve_plugins: list[Any] = lists["reserve"]
        self.permit_plugins: list[Any] = lists["permit"]
        self.pre_bind_plugins: list[Any] = lists["preBind"]
        self.bind_plugins: list[Any] = lists["bind"]
        self.post_bind_plugins: list[Any] = lists["postBind"]
        if len(self.queue_sort_plugins) != 1:
            raise FrameworkError(
                "only one queue sort plugin required for profile with scheduler name "
                f"{self.profile_name!r}, but got {len(self.queue_sort_plugins)}"
            )
        if not self.bind_plugins:
            raise FrameworkError(
                f"at least one bind plugin is needed for profile with scheduler name "
                f"{self.profile_name!r}"
            )
        self.score_weights = self._score_weights(spec)
        # Preemption dry runs call the PreFilter extensions for every pod they move.
        self._pre_filter_extensions = [
            (pl, ext) for pl in self.pre_filter_plugins if (ext := pl.pre_filter_extensions())
        ]
        self._batch_filter = {
            pl.name: callable(getattr(pl, "filter_batch", None)) for pl in self.filter_plugins
        }
        self._batch_score = {
            pl.name: callable(getattr(pl, "score_batch", None)) for pl in self.score_plugins
        }

    # --- construction -----------------------------------------------------------------------

    def _instantiate(self, spec: ProfileSpec, registry: Registry) -> dict[str, Plugin]:
        needed: list[str] = []
        for point in (MULTI_POINT, *EXTENSION_POINTS):
            for ref in spec.plugin_set(point).enabled:
                if ref.name not in needed:
                    needed.append(ref.name)
        for name in spec.plugin_args:
            if name not in needed and name not in registry:
                raise FrameworkError(f"plugin {name!r} in pluginConfig does not exist")
        plugins: dict[str, Plugin] = {}
        for name in needed:
            plugin_spec = registry.get(name)
            if plugin_spec is None:
                point = next(
                    p
                    for p in (MULTI_POINT, *EXTENSION_POINTS)
                    if any(r.name == name for r in spec.plugin_set(p).enabled)
                )
                kind = _POINT_TYPE_NAME.get(point, "plugin")
                raise FrameworkError(f"{kind} {name!r} does not exist")
            raw = spec.plugin_args.get(name)
            args: Any = None
            if plugin_spec.decode_args is not None:
                try:
                    args = plugin_spec.decode_args(raw)
                except ArgsError as err:
                    raise PluginArgsError(name, err.path, err.message) from err
            elif raw:
                raise PluginArgsError(name, "", "this plugin takes no args")
            try:
                plugins[name] = plugin_spec.factory(args, self)
            except (ArgsError, FrameworkError):
                raise
            except Exception as err:
                raise FrameworkError(f"initializing plugin {name!r}: {err}") from err
        return plugins

    def _implements(self, plugin: Plugin, point: str) -> bool:
        return callable(getattr(plugin, _POINT_METHOD[point], None))

    def _plugins_for(self, spec: ProfileSpec, point: str) -> list[Any]:
        """The plugin list of one point, with MultiPoint expanded as kube-scheduler does."""
        pset = spec.plugin_set(point)
        type_name = _POINT_TYPE_NAME[point]
        enabled: list[str] = []
        for ref in pset.enabled:
            plugin = self.plugins[ref.name]
            if not self._implements(plugin, point):
                raise FrameworkError(f"plugin {ref.name!r} does not extend {type_name} plugin")
            if ref.name in enabled:
                raise FrameworkError(f"plugin {ref.name!r} already registered as {type_name!r}")
            enabled.append(ref.name)
        disabled = {ref.name for ref in pset.disabled}
        multi = spec.plugin_set(MULTI_POINT).enabled
        if "*" in disabled or not multi:
            return [self.plugins[name] for name in enabled]
        multi_enabled: list[str] = []
        overrides: set[str] = set()
        for ref in multi:
            plugin = self.plugins[ref.name]
            if not self._implements(plugin, point) or ref.name in disabled:
                continue
            if ref.name in enabled:
                overrides.add(ref.name)
                continue
            if ref.name in multi_enabled:
                raise FrameworkError(f"plugin {ref.name!r} already registered as {type_name!r}")
            multi_enabled.append(ref.name)
        ordered = [n for n in enabled if n in overrides] + multi_enabled
        ordered += [n for n in enabled if n not in overrides]
        return [self.plugins[name] for name in ordered]

    def _score_weights(self, spec: ProfileSpec) -> dict[str, int]:
        weights: dict[str, int] = {}
        total = 0
        refs = list(spec.plugin_set("score").enabled) + list(spec.plugin_set(MULTI_POINT).enabled)
        for ref in refs:
            if not self._implements(self.plugins[ref.name], "score") or ref.name in weights:
                continue
            weights[ref.name] = ref.weight or 1
            if weights[ref.name] * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
                raise FrameworkError("score plugins: total score of Score plugins could overflow")
            total += weights[ref.name] * MAX_NODE_SCORE
        for pl in self.score_plugins:
            if weights.get(pl.name, 0) == 0:
                raise FrameworkError(f"score plugin {pl.name!r} is not configured with weight")
        return weights

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

    # --- queue integration ------------------------------------------------------------------

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """plugin name -> its events, for every plugin that registers any."""
        result: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            register = getattr(plugin, "events_to_register", None)
            if callable(register):
                result[name] = list(register())
        return result

    def queue_sort(self) -> Any:
        return self.queue_sort_plugins[0]

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return bool(self.queue_sort_plugins[0].less(a, b))

    # --- metrics ----------------------------------------------------------------------------

    def _observe(self, point: str, status: Status | None, start: float) -> None:
        key = (point, _code_label(status))
        child = self._ext_point_timers.get(key)
        if child is None:
            child = metrics.framework_extension_point_duration.labels(
                point, key[1], self.profile_name
            )
            self._ext_point_timers[key] = child
        child.observe(time.perf_counter() - start)

    def _observe_plugin(self, point: str, plugin: str, status: Status | None, start: float) -> None:
        key = (plugin, point, _code_label(status))
        child = self._plugin_timers.get(key)
        if child is None:
            child = metrics.plugin_execution_duration.labels(*key)
            self._plugin_timers[key] = child
        child.observe(time.perf_counter() - start)

    def observe_filter_duration(self, status: Status | None, start: float) -> None:
        """Filter latency covers all nodes of a cycle, so the caller reports it."""
        self._observe(FILTER, status, start)

    # --- PreFilter / Filter -----------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns (merged result, status, plugins that narrowed or rejected)."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            result, status, plugins = self._run_pre_filter(state, pod, nodes)
            return result, status, plugins
        finally:
            self._observe(PRE_FILTER, status, start)

    def _run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        skip: set[str] = set()
        state.skip_filter_plugins = skip
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        returned: Status | None = None
        record = state.record_plugin_metrics
        for pl in self.pre_filter_plugins:
            t0 = time.perf_counter() if record else 0.0
            try:
                r, s = pl.pre_filter(state, pod, nodes)
            except Exception as err:  # a plugin bug must not kill the scheduling loop
                r, s = None, Status.as_error(err)
            if record:
                self._observe_plugin(PRE_FILTER, pl.name, s, t0)
            if s is not None and s.code == Code.SKIP:
                skip.add(pl.name)
                continue
            if s is not None and s.code != Code.SUCCESS:
                s.plugin = pl.name
                if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, s, set()
                if s.code == Code.UNSCHEDULABLE:
                    returned = s
                    continue
                return None, _plugin_error("PreFilter", pl.name, s), set()
            if r is not None and not r.all_nodes():
                with_nodes.add(pl.name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                names = sorted(with_nodes)
                if len(names) == 1:
                    msg = f"node(s) didn't satisfy plugin {names[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), with_nodes
        return result, returned, with_nodes

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(
            state, pod_to_schedule, pod_to_add, node_info, add=True
        )

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(
            state, pod_to_schedule, pod_to_remove, node_info, add=False
        )

    def _run_pre_filter_extension(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, add: bool
    ) -> Status | None:
        point = PRE_FILTER_ADD_POD if add else PRE_FILTER_REMOVE_POD
        for pl, ext in self._pre_filter_extensions:
            if pl.name in state.skip_filter_plugins:
                continue
            fn = ext.add_pod if add else ext.remove_pod
            status = fn(state, pod, other, node_info)
            if status is not None and status.code != Code.SUCCESS:
                return Status(
                    Code.ERROR,
                    f"running {point} on PreFilter plugin {pl.name!r}: {status.message()}",
                    plugin=pl.name,
                )
        return None

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """All Filter plugins on one node, stopping at the first rejection."""
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            t0 = time.perf_counter() if record else 0.0
            status = _run_filter_plugin(pl, state, pod, node_info)
            if record:
                self._observe_plugin(FILTER, pl.name, status, t0)
            if status is not None:
                return status
        return None

    def nominated_pods_to_add(self, pod: Pod, node_name: str) -> list[Pod]:
        """Nominated pods on the node with priority >= pod's (other than pod itself)."""
        if self._nominator is None:
            return []
        return [
            p
            for p in self._nominator.nominated_pods_for_node(node_name)
            if p.priority >= pod.priority and p.uid != pod.uid
        ]

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        """The design doc's two passes: with higher-priority nominated pods, then without."""
        nominated = self.nominated_pods_to_add(pod, node_info.name)
        if not nominated:
            return self.run_filter_plugins(state, pod, node_info)
        info_with = node_info.snapshot()
        state_with = state.clone()
        for other in nominated:
            info_with.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_with, pod, other, info_with)
            if status is not None:
                return status
        status = self.run_filter_plugins(state_with, pod, info_with)
        if status is not None:
            return status
        return self.run_filter_plugins(state, pod, node_info)

    def filter_batch_masks(
        self, state: CycleState, pod: Pod, table: NodeTable
    ) -> tuple[BoolColumn, list[Any], list[tuple[Any, BoolColumn | None]]]:
        """AND of every batch-capable Filter plugin's column, the plugins left per-node, and
        (plugin, column or None) for every plugin in order (to find a node's first rejector)."""
        mask: BoolColumn = np.ones(table.n, np.bool_)
        per_node: list[Any] = []
        columns: list[tuple[Any, BoolColumn | None]] = []
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            column = None
            if self._batch_filter[pl.name]:
                t0 = time.perf_counter() if record else 0.0
                column = pl.filter_batch(state, pod, table)
                if record:
                    self._observe_plugin(FILTER, pl.name, None, t0)
            if column is None:
                per_node.append(pl)
            else:
                mask &= column
            columns.append((pl, column))
        return mask, per_node, columns

    def first_rejection(
        self,
        columns: Sequence[tuple[Any, BoolColumn | None]],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        row: int,
    ) -> Status | None:
        """What `run_filter_plugins` returns for the node at `row`, calling only the plugins
        whose column does not already say it passes."""
        for pl, column in columns:
            if column is not None and column[row]:
                continue
            status = _run_filter_plugin(pl, state, pod, node_info)
            if status is not None:
                return status
        return None

    def first_rejections(
        self,
        columns: Sequence[tuple[Any, BoolColumn | None]],
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
    ) -> list[Status | None]:
        """`first_rejection` for many rows: rows whose first failing column is a plugin with
        `filter_batch_statuses` get their statuses in one call; the rest go node by node."""
        result: list[Status | None] = [None] * len(rows)
        undecided = np.arange(len(rows))
        by_node: list[int] = []
        for pl, column in columns:
            if not len(undecided):
                break
            if column is None:  # may reject any of them: only per node, in plugin order
                by_node.extend(undecided.tolist())
                break
            failing = ~column[rows[undecided]]
            if not failing.any():
                continue
            positions = undecided[failing]
            undecided = undecided[~failing]
            batch = getattr(pl, "filter_batch_statuses", None)
            statuses = batch(state, pod, table, rows[positions]) if callable(batch) else None
            if statuses is None:
                by_node.extend(positions.tolist())
                continue
            for position, status in zip(positions.tolist(), statuses, strict=True):
                if status is None:  # the column and the reasons disagree: ask the node
                    by_node.append(position)
                else:
                    status.plugin = pl.name
                    result[position] = status
        infos = table.infos
        for position in by_node:
            row = int(rows[position])
            result[position] = self.first_rejection(columns, state, pod, infos[row], row)
        return result

    def run_filter_plugins_subset(
        self, plugins: Sequence[Any], state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Only the given plugins (those without a batch form) on one node."""
        for pl in plugins:
            status: Status | None
            try:
                status = pl.filter(state, pod, node_info)
            except Exception as err:
                status = Status.as_error(err)
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = pl.name
                return status
        return None

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    # --- PostFilter -------------------------------------------------------------------------

    def run_post_filter_plugins(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        start = time.perf_counter()
        status: Status | None = None
        try:
            result, status = self._run_post_filter(state, pod, node_to_status)
            return result, status
        finally:
            self._observe(POST_FILTER, status, start)

    def _run_post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter_plugins:
            try:
                r, s = pl.post_filter(state, pod, node_to_status)
            except Exception as err:
                log.exception("PostFilter plugin failed", plugin=pl.name, pod=pod.key)
                return None, Status(Code.ERROR, str(err), plugin=pl.name, error=err)
            if s.code == Code.SUCCESS:
                return r, s
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, s.with_plugin(pl.name)
            if not s.is_rejected():
                return None, Status(Code.ERROR, s.message(), plugin=pl.name, error=s.error)
            if r is not None and r.nominating_info is not None and r.nominating_info.mode != 0:
                result = r
            reasons.extend(s.reasons)
            rejector = rejector or pl.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # --- PreScore / Score -------------------------------------------------------------------

    def run_pre_score_plugins(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> Status | None:
        start = time.perf_counter()
        status: Status | None = None
        skip: set[str] = set()
        try:
            for pl in self.pre_score_plugins:
                try:
                    s = pl.pre_score(state, pod, nodes)
                except Exception as err:
                    s = Status.as_error(err)
                if s is not None and s.code == Code.SKIP:
                    skip.add(pl.name)
                    continue
                if s is not None and s.code != Code.SUCCESS:
                    status = _plugin_error("PreScore", pl.name, s)
                    return status
            state.skip_score_plugins = skip
            return None
        finally:
            self._observe(PRE_SCORE, status, start)

    def run_score_plugins(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        nodes: list[NodeInfo],
    ) -> tuple[ScoreColumn | None, Status | None]:
        """Weighted total score per feasible node (same order as `rows`/`nodes`)."""
        start = time.perf_counter()
        status: Status | None = None
        try:
            totals, status = self._run_score(state, pod, table, rows, nodes)
            return totals, status
        finally:
            self._observe(SCORE, status, start)

    def _run_score(
        self,
        state: CycleState,
        pod: Pod,
        table: NodeTable,
        rows: npt.NDArray[np.intp],
        nodes: list[NodeInfo],
    ) -> tuple[ScoreColumn | None, Status | None]:
        totals: ScoreColumn = np.zeros(len(nodes), np.int64)
        record = state.record_plugin_metrics
        for pl in self.score_plugins:
            if pl.name in state.skip_score_plugins:
                continue
            t0 = time.perf_counter() if record else 0.0
            scores = None
            if self._batch_score[pl.name]:
                scores = pl.score_batch(state, pod, table, rows)
            if scores is None:
                scores = np.empty(len(nodes), np.int64)
                for i, info in enumerate(nodes):
                    try:
                        value = pl.score(state, pod, info)
                    except Exception as err:
                        value = Status.as_error(err)
                    if isinstance(value, Status):
                        return None, Status(
                            Code.ERROR,
                            f"running Score plugins: plugin {pl.name!r} failed with: "
                            f"{value.message()}",
                            plugin=pl.name,
                        )
                    scores[i] = value
            if record:
                self._observe_plugin(SCORE, pl.name, None, t0)
            ext = pl.score_extensions()
            if ext is not None:
                s = ext.normalize_score(state, pod, scores)
                if s is not None and s.code != Code.SUCCESS:
                    return None, Status(
                        Code.ERROR,
                        f"running Normalize on Score plugins: plugin {pl.name!r} failed with: "
                        f"{s.message()}",
                        plugin=pl.name,
                    )
            if len(scores) and (scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE):
                bad = int(scores.max() if scores.max() > MAX_NODE_SCORE else scores.min())
                return None, Status(
                    Code.ERROR,
                    f"applying score defaultWeights on Score plugins: plugin {pl.name!r} returns "
                    f"an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                    plugin=pl.name,
                )
            totals += scores * self.score_weights[pl.name]
        return totals, None

    # --- Reserve / Permit -------------------------------------------------------------------

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> Status | None:
        start = time.perf_counter()
        status: Status | None = None
        try:
            for pl in self.reserve_plugins:
                try:
                    s = pl.reserve(state, pod, node_name)
                except Exception as err:
                    s = Status.as_error(err)
                if s is not None and s.code != Code.SUCCESS:
                    status = _rejection_or_error("Reserve", pl.name, s)
                    return status
            return None
        finally:
            self._observe(RESERVE, status, start)

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = time.perf_counter()
        for pl in reversed(self.reserve_plugins):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception:
                log.exception("Unreserve plugin failed", plugin=pl.name, pod=pod.key)
        self._observe(UNRESERVE, None, start)

    def run_permit_plugins(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> tuple[dict[str, float], Status | None]:
        start = time.perf_counter()
        status: Status | None = None
        try:
            waits: dict[str, float] = {}
            wait_status: Status | None = None
            for pl in self.permit_plugins:
                try:
                    s, timeout = pl.permit(state, pod, node_name)
                except Exception as err:
                    s, timeout = Status.as_error(err), 0.0
                if s is None or s.code == Code.SUCCESS:
                    continue
                if s.is_rejected():
                    status = s.with_plugin(pl.name)
                    return {}, status
                if s.code == Code.WAIT:
                    waits[pl.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                    wait_status = s
                    continue
                status = _plugin_error("Permit", pl.name, s)
                return {}, status
            if wait_status is not None:
                wait_status.reasons.append(
                    "one or more plugins asked to wait and no plugin rejected pod"
                )
                status = wait_status
                return waits, status
            return {}, None
        finally:
            self._observe(PERMIT, status, start)

    def add_waiting_pod(self, pod: Pod, waits: Mapping[str, float]) -> None:
        self.waiting_pods.add(WaitingPod(pod, dict(waits)))

    def wait_on_permit(self, pod: Pod) -> Status | None:
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return None
        start = time.perf_counter()
        try:
            status = waiting.wait()
        finally:
            self.waiting_pods.remove(pod.uid)
        metrics.permit_wait_duration.labels(status.code.label()).observe(
            time.perf_counter() - start
        )
        if status.code == Code.SUCCESS:
            return None
        if status.is_rejected():
            return status
        return Status(
            Code.ERROR, f"waiting on permit for pod: {status.message()}", plugin=status.plugin
        )

    # --- PreBind / Bind / PostBind ----------------------------------------------------------

    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = time.perf_counter()
        status: Status | None = None
        try:
            for pl in self.pre_bind_plugins:
                try:
                    s = pl.pre_bind(state, pod, node_name)
                except Exception as err:
                    s = Status.as_error(err)
                if s is not None and s.code not in (Code.SUCCESS, Code.SKIP):
                    status = _rejection_or_error("PreBind", pl.name, s)
                    return status
            return None
        finally:
            self._observe(PRE_BIND, status, start)

    def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = time.perf_counter()
        status: Status | None = Status(Code.SKIP)
        try:
            for pl in self.bind_plugins:
                try:
                    s = pl.bind(state, pod, node_name)
                except Exception as err:
                    s = Status.as_error(err)
                if s is not None and s.code == Code.SKIP:
                    continue
                if s is not None and s.code != Code.SUCCESS:
                    status = _rejection_or_error("Bind", pl.name, s)
                    return status
                status = None
                return status
            return status
        finally:
            self._observe(BIND, status, start)

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        start = time.perf_counter()
        for pl in self.post_bind_plugins:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception:
                log.exception("PostBind plugin failed", plugin=pl.name, pod=pod.key)
        self._observe(POST_BIND, None, start)
