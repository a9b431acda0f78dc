"""PreemptionBasic in process: the scheduling loop and the informer side of a preemption burst.

`python -m e2e.bench.preemption_loop --nodes 1000 --preemptors 300 [--profile out.prof]`

The real cache, queue, framework (kube-scheduler's default profile) and loop with a recording
API, driven on one thread in virtual time: preemptors are created at `--create-rate` per second,
each attempt takes `--attempt-ms` of virtual time, and every victim deletion the scheduler asks
for comes back from the "informer" as an update (deletionTimestamp) `--terminate-ms` later and as
a delete `--delete-ms` later, one handler call per event, as the pod informer delivers them; a
binding comes back as the pod's update to assigned. Nodes of 4 CPU each hold four 900m
priority-0 pods, the preemptors need 3970m at priority 1000: the PreemptionBasic workload of
e2e/bench/workloads. Prints the CPU seconds of the process (loop, handlers and the preemption
threads) and the victims and nominations, so two commits can be compared on the same outcome.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import heapq
import itertools
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scheduler.api.objects import Pod, replace_pod
from scheduler.config.load import load_config
from scheduler.eventhandlers import EventHandlers
from scheduler.features import FeatureGates
from scheduler.logging import configure_logging
from scheduler.plugins.default_preemption.plugin import DefaultPreemption
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import make_node, make_pod
from scheduler.testing.harness import Harness


@dataclass(order=True)
class _Due:
    when: float
    seq: int
    action: Callable[[], None] = field(compare=False)


class World:
    """The harness plus a virtual-time agenda of informer deliveries."""

    def __init__(self, args: argparse.Namespace) -> None:
        registry = in_tree_registry()
        config = load_config(None, set(registry))
        spec = config.profiles[0].to_spec()
        self.h = Harness(
            spec, plugins=registry, features=FeatureGates(), watch_gangs=args.watch_gangs
        )
        self.h.scheduler.schedule_one_pod.s.algorithm._rng = random.Random(args.seed)
        self.profile = spec.scheduler_name
        self.handlers = EventHandlers(self.h.cache, self.h.queue, self.h.scheduler.profiles)
        plugin = self.h.fwk.plugins["DefaultPreemption"]
        assert isinstance(plugin, DefaultPreemption)
        self.plugin = plugin
        plugin._rng = random.Random(args.seed)
        self.args = args
        self.agenda: list[_Due] = []
        self.seq = itertools.count()
        self.writes_seen = 0
        self.victims: list[str] = []
        self.nominations: list[tuple[str, str]] = []

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self.agenda, _Due(when, next(self.seq), action))

    def now(self) -> float:
        return self.h.clock.now()

    def build(self) -> None:
        a = self.args
        for i in range(a.nodes):
            self.h.add_node(make_node(f"node-{i}", cpu="4", memory="32Gi"))
            for j in range(4):
                victim = make_pod(
                    f"init-{i}-{j}",
                    node_name=f"node-{i}",
                    cpu="900m",
                    memory="500Mi",
                    priority=0,
                    scheduler_name=self.profile,
                    start_time="2026-01-01T00:00:00Z",
                )
                self.h.pods[victim.key] = victim
                self.handlers.on_pod_add(victim)
        start = self.now()
        for k in range(a.preemptors):
            pod = make_pod(
                f"pre-{k}",
                cpu="3970m",
                memory="500Mi",
                priority=1000,
                scheduler_name=self.profile,
            )
            self.at(start + k / a.create_rate, lambda p=pod: self._create(p))

    def _create(self, pod: Pod) -> None:
        self.h.pods[pod.key] = pod
        self.handlers.on_pod_add(pod)

    def _terminate(self, key: str) -> None:
        old = self.h.pods.get(key)
        if old is None:
            return
        new = replace_pod(
            old, deletion_timestamp=self.now(), resource_version=old.resource_version + "x"
        )
        self.h.pods[key] = new
        self.handlers.on_pod_update(old, new)

    def _delete(self, key: str) -> None:
        pod = self.h.pods.pop(key, None)
        if pod is not None:
            self.handlers.on_pod_delete(pod)

    def _bound(self, key: str, node: str) -> None:
        old = self.h.pods[key]
        new = replace_pod(old, node_name=node, resource_version=old.resource_version + "b")
        self.h.pods[key] = new
        self.handlers.on_pod_update(old, new)

    def _collect_writes(self) -> None:
        """Turns the API writes since last time into informer deliveries."""
        executor = self.plugin.executor
        deadline = time.monotonic() + 10
        while executor._preempting and time.monotonic() < deadline:
            time.sleep(0.0005)
        api = self.h.api
        a = self.args
        with api.changed:
            writes = api.writes[self.writes_seen :]
            self.writes_seen = len(api.writes)
            binds = dict(api.binds)
        now = self.now()
        deletes = 0
        for kind, key in writes:
            if kind == "delete":
                self.victims.append(key)
                gone = now + (a.delete_ms + deletes * a.delete_spread_ms) / 1000
                deletes += 1
                self.at(now + a.terminate_ms / 1000, lambda k=key: self._terminate(k))
                self.at(gone, lambda k=key: self._delete(k))
            elif kind == "bind":
                self.at(now + a.terminate_ms / 1000, lambda k=key, n=binds[key]: self._bound(k, n))

    def run(self) -> int:
        """Runs until every preemptor is bound or nothing is left to do; returns attempts."""
        h, a = self.h, self.args
        attempts = 0
        while True:
            while self.agenda and self.agenda[0].when <= self.now():
                heapq.heappop(self.agenda).action()
            if h.queue.active_len() or (a.pop_from_backoff and h.queue.backoff_len()):
                pinfo = h.queue.pop(timeout=0)
                if pinfo is not None:
                    h.scheduler.schedule_one_pod.schedule(pinfo)
                    attempts += 1
                    nominated = h.queue.nominator.nominated_node_for(pinfo.pod.uid)
                    if nominated:
                        self.nominations.append((pinfo.pod.name, nominated))
                    self._wait_binding(pinfo.pod)
                    self._collect_writes()
                h.clock.step(a.attempt_ms / 1000)
                continue
            h.queue.flush_backoff_q_completed()
            if h.queue.active_len():
                continue
            if not self.agenda:
                if h.queue.backoff_len():
                    h.clock.step(0.1)
                    continue
                return attempts
            h.clock.set(max(self.now(), self.agenda[0].when))
            h.queue.flush_backoff_q_completed()

    def _wait_binding(self, pod: Pod) -> None:
        if self.h.cache.is_assumed_pod(pod):
            self.h.api.wait_for(lambda: pod.key in self.h.api.binds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--preemptors", type=int, default=300)
    parser.add_argument("--create-rate", type=float, default=100.0)
    parser.add_argument("--attempt-ms", type=float, default=60.0)
    parser.add_argument("--terminate-ms", type=float, default=30.0)
    parser.add_argument("--delete-ms", type=float, default=150.0)
    parser.add_argument(
        "--delete-spread-ms",
        type=float,
        default=0.0,
        help="each further victim of one preemption is deleted this much later (kwok's pace)",
    )
    parser.add_argument(
        "--pop-from-backoff",
        action="store_true",
        help="pop backoffQ when activeQ is empty, as the running scheduler does",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", help="write a cProfile of the run here")
    parser.add_argument(
        "--watch-gangs",
        action="store_true",
        help="as a process with a gang plugin in some profile: preemption reads each pod's group",
    )
    args = parser.parse_args()
    # The app's default: JSON lines at verbosity 0 (written to /dev/null here).
    configure_logging("json", 0, stream=open(os.devnull, "wb"))  # noqa: SIM115
    world = World(args)
    world.build()
    profiler = cProfile.Profile() if args.profile else None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    attempts = world.run()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    bound = len(world.h.api.binds)
    digest = hashlib.sha256(
        repr((sorted(world.h.api.binds.items()), world.victims, world.nominations)).encode()
    ).hexdigest()[:16]
    print(
        f"nodes={args.nodes} preemptors={args.preemptors} bound={bound} attempts={attempts} "
        f"victims={len(world.victims)} cpu_s={cpu:.2f} wall_s={wall:.2f} "
        f"cpu_ms_per_preemptor={1000 * cpu / max(bound, 1):.1f} outcome={digest}"
    )
    world.h.close()


if __name__ == "__main__":
    main()
