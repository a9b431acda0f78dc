"""Binding cycles of pods that wait at Permit, parked until the wait ends.

The live process runs a binding cycle on a worker that blocks in WaitOnPermit until every
plugin that said Wait allows the pod, one rejects it, or the Permit timeout passes on the
clock. A simulation runs binding cycles in line, on the loop's thread, where such a block would
never end: the fake clock moves only when the loop moves it. So a binding cycle whose pod is
waiting is parked here instead, and run (in the order it was parked) once the pod's wait has
ended: a sibling's Permit allowed it, or the loop moved the clock past its timeout and the
timer rejected it. Either way the binding cycle then goes on as the live one would: bind, or
unreserve and send the pod back to the queue with the rejection.

Which pod a binding cycle is for is read from the frameworks' waiting pods: `permit_and_bind`
adds the waiting pod and starts its binding cycle in the same call on the loop's thread, so the
one waiting pod not yet parked is the one being started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

from scheduler.framework.runtime import Framework
from scheduler.framework.waiting_pods import WaitingPod

P = ParamSpec("P")
T = TypeVar("T")


class PermitParking(Executor):
    """The binding pool and the `spawn` of a simulation: a binding cycle runs at once unless
    its pod waits at Permit, in which case it is parked until `run_finished` finds the wait
    over."""

    def __init__(self, frameworks: Callable[[], Iterable[Framework]]) -> None:
        self._frameworks = frameworks
        #: pod uid -> (its waiting pod, its binding cycle), in the order parked.
        self._parked: dict[str, tuple[WaitingPod, Callable[[], object]]] = {}

    def __len__(self) -> int:
        return len(self._parked)

    def _new_waiting(self) -> WaitingPod | None:
        for fwk in self._frameworks():
            for waiting in fwk.waiting_pods.all():
                if waiting.pod.uid not in self._parked and not waiting.finished():
                    return waiting
        return None

    def _start(self, work: Callable[[], object]) -> None:
        waiting = self._new_waiting()
        if waiting is None:
            work()
        else:
            self._parked[waiting.pod.uid] = (waiting, work)

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def work() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as err:
                future.set_exception(err)

        self._start(work)
        return future

    def spawn(self, work: Callable[[], None], name: str) -> None:
        """A binding cycle with PreBind work (its volume and claim writes are answered in
        memory, so nothing but Permit can make it wait)."""
        self._start(work)

    def run_finished(self) -> int:
        """Runs the parked binding cycles whose pods no longer wait; returns how many."""
        done = [uid for uid, (waiting, _) in self._parked.items() if waiting.finished()]
        for uid in done:
            _, work = self._parked.pop(uid)
            work()
        return len(done)
