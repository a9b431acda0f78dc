"""Reserve/Unreserve, Permit (and waiting on it), PreBind, Bind and PostBind."""

from __future__ import annotations

import time
from collections.abc import Mapping

import structlog

from scheduler import metrics
from scheduler.api.objects import Pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PreBindPreFlightPlugin
from scheduler.framework.runtime.base import FrameworkBase
from scheduler.framework.runtime.calls import (
    BIND,
    PERMIT,
    POST_BIND,
    PRE_BIND,
    PRE_BIND_PRE_FLIGHT,
    RESERVE,
    UNRESERVE,
    plugin_error,
    rejection_or_error,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import MAX_PERMIT_TIMEOUT, WaitingPod, WaitingPods

log = structlog.get_logger(__name__)


class BindingPoints(FrameworkBase):
    waiting_pods: WaitingPods

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
                    status = rejection_or_error("Reserve", pl.name, s)
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
                status = plugin_error("Permit", pl.name, s)
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
        self.waiting_pods.add(WaitingPod(pod, dict(waits), self.waiting_pods.clock))

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

    def run_pre_bind_pre_flights(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> Status | None:
        """RunPreBindPreFlights: None when some PreBind plugin has work for the pod, Skip when
        none has (those that said Skip are then skipped by PreBind), an Error when one failed
        or returned anything else. A PreBind plugin without the method always has work."""
        start = time.perf_counter()
        status: Status | None = Status(Code.SKIP)
        skipped: set[str] = set()
        try:
            for pl in self.pre_bind_plugins:
                if not isinstance(pl, PreBindPreFlightPlugin):
                    status = None
                    continue
                try:
                    s = pl.pre_bind_pre_flight(state, pod, node_name)
                except Exception as err:
                    s = Status.as_error(err)
                if s is None or s.code == Code.SUCCESS:
                    status = None
                elif s.code == Code.SKIP:
                    skipped.add(pl.name)
                elif s.code == Code.ERROR:
                    status = Status(
                        Code.ERROR,
                        f'running PreBindPreFlight "{pl.name}": {s.message()}',
                        plugin=pl.name,
                        error=s.error,
                    )
                    return status
                else:
                    status = Status(
                        Code.ERROR,
                        f"PreBindPreFlight {pl.name} returned {s.code.label()!r}, which is "
                        "unsupported. It is supposed to return Success, Skip, or Error status",
                        plugin=pl.name,
                    )
                    return status
            state.skip_pre_bind_plugins = skipped
            return status
        finally:
            self._observe(PRE_BIND_PRE_FLIGHT, status, start)

    def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        start = time.perf_counter()
        status: Status | None = None
        try:
            for pl in self.pre_bind_plugins:
                if pl.name in state.skip_pre_bind_plugins:
                    continue
                try:
                    s = pl.pre_bind(state, pod, node_name)
                except Exception as err:
                    s = Status.as_error(err)
                if s is not None and s.code not in (Code.SUCCESS, Code.SKIP):
                    status = rejection_or_error("PreBind", pl.name, s)
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
                    status = rejection_or_error("Bind", pl.name, s)
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
