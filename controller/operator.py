"""The kopf wiring: indices of PodGroups and member pods, handlers that reconcile a group.

Every PodGroup event and every member pod event reconciles that one group from two kopf
indices (groups by key, member pods by group), so a reconcile never lists the API. The rules
are controller.podgroup's pure functions; this module only feeds them and writes their result:
a status-subresource merge patch when the status changes, an event per phase transition, and
the release of a finished group's pending unbound members.

Reconciles of one group are serialised by a per-group lock, and each sees the newest status
known - the index's, or the one our own last patch returned if that is newer - so two pod events
arriving together cannot write the same transition twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import kopf

from controller.metrics import Metrics
from controller.podgroup import (
    FAILED,
    GROUP,
    PLURAL,
    VERSION,
    Group,
    Member,
    Outcome,
    next_status,
    releasable,
    release_message,
    transition_message,
)
from scheduler.api.gang import POD_GROUP_LABEL

logger = logging.getLogger("kube_pysched_controller")

Key = tuple[str, str]
#: (group, event type, reason, message) -> posts an event on the PodGroup.
EventSink = Callable[[Group, str, str, str], None]

#: Seconds before retrying a reconcile whose API call failed (then doubling, capped).
RETRY_INITIAL = 1.0
RETRY_MAX = 60.0


class GroupApi(Protocol):
    """The API calls a reconcile makes (blocking; run on a worker thread)."""

    def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> Any:
        """Merge-patch the PodGroup's status subresource; the new object, or None if gone."""

    def delete_pod(self, namespace: str, name: str, uid: str) -> bool:
        """Delete the pod if it is still the one with this uid; False if it was gone."""


def kopf_event(group: Group, type_: str, reason: str, message: str) -> None:
    """Posts through kopf's event queue (needs a handler's context, as reconciles have)."""
    body = kopf.Body(cast(kopf.RawBody, group.reference()))
    kopf.event(body, type=type_, reason=reason, message=message)


def _newer(indexed: Group | None, written: Group | None) -> Group | None:
    """The fresher of the index's copy and the one our last patch returned."""
    if indexed is None:
        return None  # deleted: the index is the authority on existence
    if written is None or written.uid != indexed.uid:
        return indexed
    try:
        return written if int(written.resource_version) > int(indexed.resource_version) else indexed
    except ValueError:
        return indexed


class PodGroupController:
    """The reconcile and the little state it keeps between reconciles."""

    def __init__(
        self,
        api: GroupApi,
        *,
        post_event: EventSink = kopf_event,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        metrics: Metrics | None = None,
    ) -> None:
        self.api = api
        self.post_event = post_event
        self.clock = clock
        #: (namespace, name) -> the phase last seen; the podgroups gauge reads it.
        self.phases: dict[Key, str] = {}
        self.metrics = metrics if metrics is not None else Metrics(lambda: self.phases)
        #: False once the API server dropped status.scheduled (a CRD without the field).
        self.scheduled_kept = True
        self._groups: Mapping[Key, Any] = {}
        self._pods: Mapping[Key, Any] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        self._written: dict[Key, Group] = {}
        self._timeouts_reported: set[Key] = set()
        self._pod_groups: dict[str, Key] = {}
        self._retries: dict[Key, float] = {}
        self.retry_initial = RETRY_INITIAL

    def bind(self, groups: Mapping[Key, Any], pods: Mapping[Key, Any]) -> None:
        """The kopf indices (live views; the same objects on every call)."""
        self._groups = groups
        self._pods = pods

    def forget(self, key: Key) -> None:
        """Drops what is kept about a group that no longer exists."""
        self.phases.pop(key, None)
        self._written.pop(key, None)
        self._timeouts_reported.discard(key)
        lock = self._locks.get(key)
        if lock is not None and not lock.locked():
            del self._locks[key]

    def pod_moved(self, uid: str, key: Key | None) -> list[Key]:
        """The groups a pod event concerns: its group now and the one it left, if any."""
        keys: list[Key] = []
        before = self._pod_groups.pop(uid, None) if key is None else self._pod_groups.get(uid)
        if key is not None:
            self._pod_groups[uid] = key
            keys.append(key)
        if before is not None and before != key:
            keys.append(before)
        return keys

    def current(self, key: Key) -> Group | None:
        store = self._groups.get(key)
        indexed = next(iter(store), None) if store is not None else None
        return _newer(indexed, self._written.get(key))

    def members(self, key: Key) -> list[Member]:
        return list(self._pods.get(key) or ())

    async def reconcile(self, key: Key) -> None:
        """One group: status, events, release. API errors schedule a retry with backoff."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            try:
                await self._reconcile(key)
            except Exception:
                self.metrics.reconciles.labels(result="error").inc()
                self._schedule_retry(key)
                logger.exception("reconcile of PodGroup %s/%s failed", *key)
            else:
                self._retries.pop(key, None)

    def _schedule_retry(self, key: Key) -> None:
        delay = min(self._retries.get(key, self.retry_initial / 2) * 2, RETRY_MAX)
        self._retries[key] = delay
        loop = asyncio.get_running_loop()
        # A timer, not a synchronisation: the next attempt after a failed API call.
        loop.call_later(delay, lambda: loop.create_task(self.reconcile(key)))

    async def _reconcile(self, key: Key) -> None:
        group = self.current(key)
        if group is None:
            self.forget(key)
            return
        members = self.members(key)
        outcome = next_status(group, members, self.clock())
        if not self.scheduled_kept:
            kept = replace(outcome.status, scheduled=outcome.previous.scheduled)
            outcome = Outcome(outcome.previous, kept, outcome.timed_out)
        self.phases[key] = outcome.status.phase
        if outcome.timed_out:
            if key not in self._timeouts_reported:
                self._timeouts_reported.add(key)
                self.post_event(group, "Warning", "Timeout", "schedule time longer than 48 hours")
            self.metrics.reconciles.labels(result="unchanged").inc()
            return
        result = "unchanged"
        if outcome.changed:
            written = await asyncio.to_thread(
                self.api.patch_status, group.namespace, group.name, outcome.status.to_dict()
            )
            if written is None:  # deleted meanwhile
                self.forget(key)
                return
            self._written[key] = Group.from_body(written)
            self.scheduled_kept = "scheduled" in (written.get("status") or {})
            result = "changed"
            if outcome.transition:
                phase = outcome.status.phase
                logger.info(
                    "PodGroup %s/%s: %s", *key, transition_message(group, outcome, len(members))
                )
                self.metrics.transitions.labels(phase=phase).inc()
                kind = "Warning" if phase == FAILED else "Normal"
                self.post_event(
                    group, kind, phase, transition_message(group, outcome, len(members))
                )
        await self._release(group, outcome.status.phase, members)
        self.metrics.reconciles.labels(result=result).inc()

    async def _release(self, group: Group, phase: str, members: list[Member]) -> None:
        candidates = releasable(phase, members)
        if not candidates:
            return
        released = [
            member
            for member in candidates
            if await asyncio.to_thread(
                self.api.delete_pod, group.namespace, member.name, member.uid
            )
        ]
        if released:
            logger.info(
                "PodGroup %s/%s: %s", group.namespace, group.name, release_message(released)
            )
            self.metrics.released.inc(len(released))
            self.post_event(group, "Normal", "Released", release_message(released))


def register(registry: kopf.OperatorRegistry, controller: PodGroupController) -> None:
    """Declares the indices and handlers on ``registry`` (not kopf's global one)."""

    @kopf.index(GROUP, VERSION, PLURAL, id="podgroups_by_key", registry=registry)
    def podgroups_by_key(body: kopf.Body, **_: Any) -> dict[Key, Group]:
        group = Group.from_body(body)
        return {group.key: group}

    # The watch itself is narrowed to labelled pods server-side (settings.watching); the filter
    # here also drops a pod from the index once its label is removed.
    @kopf.index(
        "v1", "pods", labels={POD_GROUP_LABEL: kopf.PRESENT}, id="pods_by_group", registry=registry
    )
    def pods_by_group(
        body: kopf.Body, namespace: str | None, labels: Mapping[str, str], **_: Any
    ) -> dict[Key, Member]:
        return {(namespace or "", labels[POD_GROUP_LABEL]): Member.from_pod(body)}

    def bind(indices: Mapping[str, Any]) -> None:
        controller.bind(indices["podgroups_by_key"], indices["pods_by_group"])

    @kopf.on.event(GROUP, VERSION, PLURAL, id="podgroup", registry=registry)
    async def podgroup_changed(type: str, name: str, namespace: str | None, **kwargs: Any) -> None:
        bind(kwargs)
        key = (namespace or "", name)
        if type == "DELETED":
            controller.forget(key)
            return
        await controller.reconcile(key)

    @kopf.on.event("v1", "pods", id="member", registry=registry)
    async def member_changed(
        type: str, uid: str, namespace: str | None, labels: Mapping[str, str], **kwargs: Any
    ) -> None:
        bind(kwargs)
        label = labels.get(POD_GROUP_LABEL)
        deleted = type == "DELETED"
        key = (namespace or "", label) if label and not deleted else None
        groups = controller.pod_moved(uid, key)
        if deleted and label and (namespace or "", label) not in groups:
            groups.append((namespace or "", label))
        for group in groups:
            await controller.reconcile(group)
