"""GangInformers: the PodGroup informer and an index of pods by the group they name, as a
framework GangLister. Built only when a plugin asks for groups (Handle.gangs()), so a profile
without gang plugins never lists PodGroups.

Two sources (scheduler/api/gang.py), one informer each:

* scheduler-plugins' scheduling.x-k8s.io/v1alpha1 PodGroups, always;
* Kubernetes' scheduling.k8s.io/v1beta1 PodGroups, only when the scheduler runs with
  GenericWorkload=true (as kube-scheduler, which watches them only then). With the gate off
  nothing lists them, and pods' spec.schedulingGroup is ignored by the pod parser.

Either API may not be served (the CRD not installed; kube-apiserver without GenericWorkload or
without --runtime-config=scheduling.k8s.io/v1beta1=true): its list then answers 404. That is
not a reason to stop the process (or to wait for a sync that never comes): the informer counts
as synced with no groups, an error is logged once, `unavailable` says why members are held, and
the list is retried in the background, so serving the API later needs no restart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from scheduler.api.gang import (
    GENERIC_WORKLOAD,
    Gang,
    GangRef,
    GangSource,
    api_not_installed,
    gang_from_kube_pod_group,
    gang_from_pod_group,
    gang_ref,
    gate_disabled,
    parse_kube_pod_group,
    parse_pod_group,
)
from scheduler.api.json_types import Json
from scheduler.api.objects import Pod
from scheduler.client.informer import Informer
from scheduler.client.reflector import ListWatchSpec
from scheduler.client.rest import RestClient
from scheduler.features import FeatureGates

#: scheduler-plugins' PodGroups; optional: the CRD may not be installed.
POD_GROUPS = ListWatchSpec("/apis/scheduling.x-k8s.io/v1alpha1/podgroups", optional=True)
#: Kubernetes' PodGroups (gate GenericWorkload); optional: a beta API, off by default.
KUBE_POD_GROUPS = ListWatchSpec("/apis/scheduling.k8s.io/v1beta1/podgroups", optional=True)


def _gang(obj: Json) -> Gang:
    """Stored as the Gang the plugins read (parsed and converted once per change)."""
    return gang_from_pod_group(parse_pod_group(obj))


def _kube_gang(obj: Json) -> Gang:
    return gang_from_kube_pod_group(parse_kube_pod_group(obj))


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
    """A framework.gang.GangLister over the PodGroup informers and the member index.

    `informers` has one informer per source read: scheduler-plugins' always, Kubernetes' with
    GenericWorkload on (`features`; None: the defaults, gate off)."""

    def __init__(
        self, rest: RestClient, features: FeatureGates | None = None, **kwargs: Any
    ) -> None:
        self.informer: Informer[Gang] = Informer(
            rest, POD_GROUPS, _gang, name="podgroups", **kwargs
        )
        self.informers: dict[GangSource, Informer[Gang]] = {
            GangSource.SCHEDULER_PLUGINS: self.informer
        }
        if (features or FeatureGates()).enabled(GENERIC_WORKLOAD):
            self.informers[GangSource.KUBERNETES] = Informer(
                rest, KUBE_POD_GROUPS, _kube_gang, name="podgroups.scheduling.k8s.io", **kwargs
            )
        self.index = MemberIndex()

    def gang(self, ref: GangRef) -> Gang | None:
        informer = self.informers.get(ref.source)
        return informer.get(ref.key) if informer is not None else None

    def invalid(self, ref: GangRef) -> str:
        informer = self.informers.get(ref.source)
        return informer.store.rejected(ref.key) if informer is not None else ""

    def unavailable(self, source: GangSource) -> str:
        informer = self.informers.get(source)
        if informer is None:
            return gate_disabled(source)
        if not informer.reflector.served:
            return api_not_installed(source)
        return ""

    def members(self, ref: GangRef) -> list[Pod]:
        return self.index.members(ref)
