"""The pod groups of a simulation after its run: each placed whole or pending, and why.

The reason is what the live scheduler writes where a user looks for it: a v1beta1 PodGroup's
`PodGroupInitiallyScheduled` condition (the group cycle's message, written through the
in-memory API); for a scheduler-plugins PodGroup, which has no condition, the message every
member's FailedScheduling event carries (the group cycle gives them all the group's message);
for a group none of whose members was tried, the PreEnqueue plugin's message that holds them
(a missing PodGroup, fewer pods than minMember, a group backing off).
"""

from __future__ import annotations

from collections import defaultdict

from scheduler.api.gang import GangRef, gang_ref
from scheduler.api.objects import Pod
from scheduler.simulate.engine import Simulation
from scheduler.simulate.report import PodGroupOutcome

CONDITION = "PodGroupInitiallyScheduled"


def _message(sim: Simulation, ref: GangRef, pending: list[Pod]) -> str:
    condition = sim.api.pod_group_conditions.get(f"{ref.namespace}/{ref.name}", {}).get(CONDITION)
    if condition is not None and condition.get("status") == "False":
        return str(condition.get("message") or condition.get("reason") or "")
    for pod in pending:
        message = sim.recorder.failed.get(pod.key)
        if message:
            return message
    for pod in pending:
        message = sim.held_reason(pod)
        if message:
            return message
    return ""


def pod_groups(sim: Simulation) -> list[PodGroupOutcome]:
    """Every group that has member pods in the cluster (placed ones included), by key."""
    members: dict[GangRef, list[Pod]] = defaultdict(list)
    for pod in sim.api.pods.values():
        ref = gang_ref(pod)
        if ref is not None:
            members[ref].append(pod)
    out: list[PodGroupOutcome] = []
    for ref, pods in sorted(members.items(), key=lambda item: (item[0].key, item[0].source)):
        gang = sim.gangs.gang(ref)
        min_member = gang.min_member if gang is not None else 0
        bound = sum(1 for p in pods if p.node_name)
        pending = sorted((p for p in pods if not p.node_name), key=lambda p: p.key)
        whole = gang is not None and bound >= min_member and not pending
        placed = gang is not None and bound >= min_member
        state = "placed" if placed else "pending"
        message = ""
        if not whole:
            message = _message(sim, ref, pending)
            if gang is None and not message:
                message = f"{ref.source.kind_path} {ref.namespace}/{ref.name} does not exist"
        out.append(
            PodGroupOutcome(
                group=f"{ref.namespace}/{ref.name}",
                api=ref.source.value,
                min_member=min_member,
                members=len(pods),
                placed=bound,
                state=state,
                message=message,
            )
        )
    return out
