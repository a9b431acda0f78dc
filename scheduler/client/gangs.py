"""GangInformers: the PodGroup informer and an index of pods by the group they name, as a
framework GangLister. Built only when a plugin asks for groups (Handle.gangs()), so a profile
without gang plugins never lists PodGroups.

The CRD may not be installed: its list then answers 404. That is not a reason to stop the
process (or to wait for a sync that never comes): the informer counts as synced with no groups,
an error is logged once, `unavailable` says why members are held, and the list is retried in
the background, so installing the CRD later needs no restart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from scheduler.api.gang import (
    Gang,
    GangRef,
    GangSource,
    api_not_installed,
    gang_from_pod_group,
    gang_ref,
    parse_pod_group,
)
from scheduler.api.json_types import Json
from scheduler.api.objects import Pod
from scheduler.client.informer import Informer
from scheduler.client.reflector import ListWatchSpec
from scheduler.client.rest import RestClient

#: scheduler-plugins' PodGroups; optional: the CRD may not be installed.
POD_GROUPS = ListWatchSpec("/apis/scheduling.x-k8s.io/v1alpha1/podgroups", optional=True)


def _gang(obj: Json) -> Gang:
    """Stored as the Gang the plugins read (parsed and converted once per change)."""
    return gang_from_pod_group(parse_pod_group(obj))


class MemberIndex:
    """Pods by the group they name, kept by the pod informer's handlers (registered before
    the scheduler's own, so a pod is counted by the time the queue sees it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[GangRef, dict[str, Pod]] = {}

    def handlers(
        self,
    ) -> tuple[Callable[[Pod], None], Callable[[Pod, Pod], None], Callable[[Pod], None]]:
        return self.add, self.update, self.delete

    def add(self, pod: Pod) -> None:
        ref = gang_ref(pod)
        if ref is not None:
            with self._lock:
                self._pods.setdefault(ref, {})[pod.uid] = pod

    def update(self, old: Pod, new: Pod) -> None:
        if gang_ref(old) != gang_ref(new):
            self.delete(old)
        self.add(new)

    def delete(self, pod: Pod) -> None:
        ref = gang_ref(pod)
        if ref is None:
            return
        with self._lock:
            pods = self._pods.get(ref)
            if pods is not None:
                pods.pop(pod.uid, None)
                if not pods:
                    del self._pods[ref]

    def members(self, ref: GangRef) -> list[Pod]:
        with self._lock:
            pods = self._pods.get(ref)
            return list(pods.values()) if pods else []


class GangInformers:
    """A framework.gang.GangLister over the PodGroup informer and the member index."""

    def __init__(self, rest: RestClient, **kwargs: Any) -> None:
        self.informer: Informer[Gang] = Informer(
            rest, POD_GROUPS, _gang, name="podgroups", **kwargs
        )
        self.index = MemberIndex()

    def gang(self, ref: GangRef) -> Gang | None:
        if ref.source != GangSource.SCHEDULER_PLUGINS:
            return None
        return self.informer.get(ref.key)

    def unavailable(self, source: GangSource) -> str:
        if source == GangSource.SCHEDULER_PLUGINS and not self.informer.reflector.served:
            return api_not_installed(source)
        return ""

    def members(self, ref: GangRef) -> list[Pod]:
        return self.index.members(ref)
