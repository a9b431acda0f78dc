"""The PodGroup status rules as pure functions over (PodGroup, member pods).

scheduler-plugins' controller (pkg/controllers/podgroup_controller.go) moves a group one phase
step per reconcile and relies on its own status write to trigger the next one; kube-pysched
keeps that rule so a group visits every phase (and records an event for each), but keeps the
counts current in every non-terminal phase, where upstream updates them only from Scheduling on.
Nothing here talks to the API: the kopf wiring (controller.operator) feeds these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"
KIND = "PodGroup"
API_VERSION = f"{GROUP}/{VERSION}"

PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
UNKNOWN = "Unknown"
PHASES = (PENDING, SCHEDULING, RUNNING, FINISHED, FAILED, UNKNOWN)
#: Upstream never touches a group again once it is in one of these.
TERMINAL = frozenset({FINISHED, FAILED})

#: Upstream stops reconciling a group whose scheduling started this long after its creation
#: with nothing running (its pods may have been garbage-collected meanwhile).
SCHEDULE_TIMEOUT = timedelta(hours=48)


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it (or None when absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    """metav1.Time's wire format: seconds precision, UTC, trailing Z."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class Member:
    """What the controller needs of one member pod (kept in a kopf index, so small)."""

    name: str
    uid: str = ""
    phase: str = "Pending"
    node_name: str = ""
    deleting: bool = False
    #: Owner reference names, in the pod's order.
    owners: tuple[str, ...] = ()

    @property
    def bound(self) -> bool:
        return bool(self.node_name)

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any]) -> Member:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        return cls(
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            phase=str(status.get("phase") or "Pending"),
            node_name=str(spec.get("nodeName") or ""),
            deleting=bool(meta.get("deletionTimestamp")),
            owners=tuple(
                str(ref.get("name", "")) for ref in meta.get("ownerReferences") or () if ref
            ),
        )


@dataclass(frozen=True)
class Status:
    """A PodGroup's ``status``. ``scheduled`` is kube-pysched's addition (see docs/gang.md)."""

    phase: str = ""
    occupied_by: str = ""
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str = ""

    @classmethod
    def from_dict(cls, status: Mapping[str, Any] | None) -> Status:
        status = status or {}
        return cls(
            phase=str(status.get("phase") or ""),
            occupied_by=str(status.get("occupiedBy") or ""),
            scheduled=_count(status.get("scheduled")),
            running=_count(status.get("running")),
            succeeded=_count(status.get("succeeded")),
            failed=_count(status.get("failed")),
            schedule_start_time=str(status.get("scheduleStartTime") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        """The merge patch's ``status``: counts always (0 included), strings only when set."""
        out: dict[str, Any] = {
            "scheduled": self.scheduled,
            "running": self.running,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }
        if self.phase:
            out["phase"] = self.phase
        if self.occupied_by:
            out["occupiedBy"] = self.occupied_by
        if self.schedule_start_time:
            out["scheduleStartTime"] = self.schedule_start_time
        return out

    def describe(self) -> str:
        return (
            f"scheduled {self.scheduled}, running {self.running}, "
            f"succeeded {self.succeeded}, failed {self.failed}"
        )


@dataclass(frozen=True)
class Group:
    """A PodGroup as the rules see it."""

    namespace: str
    name: str
    min_member: int = 0
    uid: str = ""
    resource_version: str = ""
    created: datetime | None = None
    status: Status = Status()

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Group:
        meta = body.get("metadata") or {}
        spec = body.get("spec") or {}
        return cls(
            namespace=str(meta.get("namespace", "")),
            name=str(meta.get("name", "")),
            min_member=_count(spec.get("minMember")),
            uid=str(meta.get("uid", "")),
            resource_version=str(meta.get("resourceVersion", "")),
            created=parse_time(meta.get("creationTimestamp")),
            status=Status.from_dict(body.get("status")),
        )

    def reference(self) -> dict[str, Any]:
        """The minimal body kopf needs to post an event about this group."""
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
        }


@dataclass(frozen=True)
class Outcome:
    """What one reconcile decides: the status to hold, and whether upstream's timeout hit."""

    previous: Status
    status: Status
    #: Scheduling started more than 48 h after creation with nothing running: left alone.
    timed_out: bool = False

    @property
    def changed(self) -> bool:
        return self.status != self.previous

    @property
    def transition(self) -> bool:
        return self.status.phase != self.previous.phase


def counts(members: Iterable[Member]) -> dict[str, int]:
    """scheduled (bound to a node), running, succeeded and failed members."""
    out = {"scheduled": 0, "running": 0, "succeeded": 0, "failed": 0}
    for member in members:
        out["scheduled"] += member.bound
        if member.phase == "Running":
            out["running"] += 1
        elif member.phase == "Succeeded":
            out["succeeded"] += 1
        elif member.phase == "Failed":
            out["failed"] += 1
    return out


def occupied_by(namespace: str, members: Sequence[Member]) -> str:
    """Upstream's ``occupiedBy``: the first member's owners as sorted ``ns/name``, comma-joined.

    Upstream takes the first pod of its List (name order); so do we.
    """
    if not members:
        return ""
    first = min(members, key=lambda m: m.name)
    return ",".join(sorted(f"{namespace}/{owner}" for owner in first.owners))


def _timed_out(group: Group) -> bool:
    status = group.status
    if status.phase not in (PENDING, SCHEDULING) or status.running != 0:
        return False
    started = parse_time(status.schedule_start_time)
    if started is None or group.created is None:
        return False
    return started - group.created > SCHEDULE_TIMEOUT


def next_status(group: Group, members: Sequence[Member], now: datetime) -> Outcome:
    """One reconcile step of scheduler-plugins' rules for ``group`` with these ``members``.

    * Finished and Failed are final: nothing changes.
    * no phase -> Pending.
    * Pending -> Scheduling once there are at least minMember members (occupiedBy is taken then).
    * from Scheduling (or Running, Unknown): fewer than minMember members -> Pending; else
      Scheduling while running + succeeded < minMember, Running once it is reached; Failed when
      any member failed and failed + running + succeeded >= minMember; Finished when
      succeeded >= minMember (Finished wins over Failed).
    * scheduleStartTime is set the first time the group enters Scheduling.
    """
    previous = group.status
    if previous.phase in TERMINAL:
        return Outcome(previous, previous)
    if _timed_out(group):
        return Outcome(previous, previous, timed_out=True)

    tally = counts(members)
    status = replace(
        previous,
        scheduled=tally["scheduled"],
        running=tally["running"],
        succeeded=tally["succeeded"],
        failed=tally["failed"],
    )
    minimum = group.min_member
    if not previous.phase:
        status = replace(status, phase=PENDING)
    elif previous.phase == PENDING:
        if len(members) >= minimum:
            status = replace(status, phase=SCHEDULING)
            owners = occupied_by(group.namespace, members)
            if owners:
                status = replace(status, occupied_by=owners)
    else:
        active = tally["running"] + tally["succeeded"]
        if len(members) < minimum:
            phase = PENDING
        else:
            phase = SCHEDULING if active < minimum else RUNNING
            if tally["failed"] and tally["failed"] + active >= minimum:
                phase = FAILED
            if tally["succeeded"] >= minimum:
                phase = FINISHED
        status = replace(status, phase=phase)
    if status.phase == SCHEDULING and not status.schedule_start_time:
        status = replace(status, schedule_start_time=format_time(now))
    return Outcome(previous, status)


def releasable(phase: str, members: Iterable[Member]) -> list[Member]:
    """The members a finished group releases: still Pending, unbound and not being deleted.

    A Finished group has done its work; such a member would only start a new, pointless run
    and hold resources meanwhile. Bound or running members are left alone.
    """
    if phase != FINISHED:
        return []
    return sorted(
        (m for m in members if m.phase == "Pending" and not m.bound and not m.deleting),
        key=lambda m: m.name,
    )


def transition_message(group: Group, outcome: Outcome, members: int) -> str:
    """The event message of a phase transition: where from, and the counts behind it."""
    before = outcome.previous.phase or "(new)"
    return (
        f"PodGroup {group.namespace}/{group.name}: {before} -> {outcome.status.phase}; "
        f"{members} members of minMember {group.min_member}; {outcome.status.describe()}"
    )


def release_message(released: Sequence[Member]) -> str:
    names = ", ".join(m.name for m in released[:10])
    more = f" and {len(released) - 10} more" if len(released) > 10 else ""
    return (
        f"Released {len(released)} pending unbound member(s) of the finished group: {names}{more}"
    )
