"""The informer side of a preemption burst in process: gated preemptors in the unschedulable
pool, each victim deletion asking every one of them whether it may fit now.

`python -m e2e.bench.queue_fanout [--pods 600] [--deletions 200] [--profile out.prof]`

DefaultPreemption gates each preemptor while its victims are deleted (its hint skips the
deletion), NodeResourcesFit's hint queues it, PreEnqueue gates it again: the path the
PreemptionBasic profile spends a third of its samples on (docs/benchmarks-history.md,
"Preemption cost").
Prints the queue's CPU per pod per deletion.
"""

from __future__ import annotations

import argparse
import cProfile
import time

from scheduler.clock import FakeClock
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.logging import configure_logging
from scheduler.testing import make_pod
from tests.backend.queue.helpers import SwitchPlugin, always, make_queue, pop_and_fail

DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=600)
    parser.add_argument("--deletions", type=int, default=200)
    parser.add_argument("--profile", help="write a cProfile of the deletions here")
    args = parser.parse_args()
    configure_logging()
    events = {
        "DefaultPreemption": [ClusterEventWithHint(DELETE, always(QueueingHint.QUEUE_SKIP))],
        "NodeResourcesFit": [ClusterEventWithHint(DELETE, always(QueueingHint.QUEUE))],
    }
    gate = SwitchPlugin("DefaultPreemption", reject=False)
    queue = make_queue(FakeClock(), events, pre_enqueue=[gate])
    for i in range(args.pods):
        queue.add(make_pod(f"p{i}", cpu="3"))
    for _ in range(args.pods):
        pop_and_fail(queue, "NodeResourcesFit")
    gate.reject = True
    victim = make_pod("victim", node_name="n1")
    queue.move_all_to_active_or_backoff_queue(DELETE, victim, None)  # the first gates them all
    assert queue.gated_len() == args.pods

    def deletions() -> None:
        for _ in range(args.deletions):
            queue.move_all_to_active_or_backoff_queue(DELETE, victim, None)

    began = time.process_time()
    if args.profile:
        cProfile.runctx("deletions()", globals(), {"deletions": deletions}, args.profile)
    else:
        deletions()
    cpu = time.process_time() - began
    per_pod_us = cpu / (args.pods * args.deletions) * 1e6
    print(
        f"pods={args.pods} deletions={args.deletions} cpu_s={cpu:.2f} us_per_pod={per_pod_us:.2f}"
    )


if __name__ == "__main__":
    main()
