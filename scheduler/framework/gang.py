"""What gang plugins read: the groups (GangLister, served by the PodGroup informer or, in tests
and by default, StaticGangs) and a group's placed members (GangMembers, from the scheduler
cache's index of bound and assumed pods by group)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.api.gang import (
    Gang,
    GangRef,
    GangSource,
    KubePodGroup,
    PodGroup,
    api_not_installed,
    gang_from_kube_pod_group,
    gang_from_pod_group,
    gang_ref,
)
from scheduler.api.objects import Pod


class GangLister(Protocol):
    """The groups the informers hold and the pods that name them. A plugin's first
    Handle.gangs() call is what makes the process watch PodGroups."""

    def gang(self, ref: GangRef) -> Gang | None:
        """The group `ref` names; None when it does not exist (or its API is not served)."""
        ...

    def invalid(self, ref: GangRef) -> str:
        """Why the group `ref` names exists but cannot be used (e.g. a minResources quantity
        that does not parse); "" when it can, or does not exist."""
        ...

    def unavailable(self, source: GangSource) -> str:
        """Why the groups of `source` cannot be read (its API is not served); "" when they can."""
        ...

    def members(self, ref: GangRef) -> list[Pod]:
        """The non-terminal pods (pending and bound) that name the group, as the pod informer
        last saw them."""
        ...


@dataclass(frozen=True, slots=True)
class GangMembers:
    """A group's members the scheduler cache counts on nodes: bound ones (the informer saw
    them assigned) and assumed ones (placed by this scheduler, binding not yet confirmed, those
    waiting at Permit included)."""

    bound: tuple[Pod, ...] = ()
    assumed: tuple[Pod, ...] = ()

    @property
    def placed(self) -> int:
        """What counts towards the quorum."""
        return len(self.bound) + len(self.assumed)


NO_MEMBERS = GangMembers()


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """What the scheduling loop knows of a pod's group (PodGroupPlugin.pod_group): enough to
    run the group cycle without importing the plugin that defines groups."""

    #: The group's key (Handle.gangs().members / Handle.gang_members take it).
    key: GangRef
    #: How many members must be placed (bound + assumed) for any of them to bind.
    min_member: int
    #: How messages name the group: `namespace/name`.
    name: str
    #: The plugin that defines the group: the rejector a failed group's members are requeued by.
    plugin: str

    @property
    def kubernetes_api(self) -> bool:
        """A Kubernetes scheduling.k8s.io/v1beta1 PodGroup: the group cycle then does what
        kube-scheduler does for its pod groups (its member messages, the PodGroup's
        PodGroupInitiallyScheduled condition, the scheduler_podgroup_* metrics)."""
        return self.key.source == GangSource.KUBERNETES


@dataclass
class StaticGangs:
    """A GangLister over fixed dictionaries: the default when no informer is wired (no groups)
    and the lister of unit tests. `add` PodGroups (either API) / Gangs and member pods;
    `missing` marks a source whose API is not served."""

    gangs: dict[GangRef, Gang] = field(default_factory=dict)
    pods: dict[GangRef, dict[str, Pod]] = field(default_factory=dict)
    missing: set[GangSource] = field(default_factory=set)
    rejected: dict[GangRef, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, *objects: PodGroup | KubePodGroup | Gang | Pod) -> StaticGangs:
        """Adds (or replaces) groups and member pods; returns self for chaining."""
        with self._lock:
            for obj in objects:
                if isinstance(obj, Pod):
                    ref = gang_ref(obj)
                    if ref is not None:
                        self.pods.setdefault(ref, {})[obj.uid] = obj
                    continue
                if isinstance(obj, PodGroup):
                    gang = gang_from_pod_group(obj)
                elif isinstance(obj, KubePodGroup):
                    gang = gang_from_kube_pod_group(obj)
                else:
                    gang = obj
                self.gangs[gang.ref] = gang
        return self

    def remove(self, obj: Gang | Pod) -> None:
        with self._lock:
            if isinstance(obj, Gang):
                self.gangs.pop(obj.ref, None)
                return
            ref = gang_ref(obj)
            if ref is not None:
                self.pods.get(ref, {}).pop(obj.uid, None)

    def gang(self, ref: GangRef) -> Gang | None:
        if ref.source in self.missing:
            return None
        return self.gangs.get(ref)

    def invalid(self, ref: GangRef) -> str:
        return self.rejected.get(ref, "")

    def unavailable(self, source: GangSource) -> str:
        return api_not_installed(source) if source in self.missing else ""

    def members(self, ref: GangRef) -> list[Pod]:
        with self._lock:
            return list(self.pods.get(ref, {}).values())
