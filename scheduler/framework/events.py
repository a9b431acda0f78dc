"""Cluster events: what changed in the cluster, as the queue and QueueingHints see it.

Mirrors kube-scheduler's fwk.ClusterEvent/ActionType/EventResource and the functions that turn
an object update into the narrowest UpdateXYZ events.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import Node, Pod


class ActionType(enum.IntFlag):
    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_NODE_PREEMPTION_POLICY = 1 << 8
    UPDATE_POD_LABEL = 1 << 9
    UPDATE_POD_SCALE_DOWN = 1 << 10
    UPDATE_POD_SCALE_UP = 1 << 11
    UPDATE_POD_TOLERATION = 1 << 12
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 13
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 14
    ALL = (1 << 15) - 1
    UPDATE = ALL & ~(ADD | DELETE)

    def label(self) -> str:
        """The Go String() of the action type, used in event labels and metrics."""
        return _ACTION_LABELS.get(self, "")


_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_NODE_PREEMPTION_POLICY: "UpdateNodePreemptionPolicy",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_SCALE_UP: "UpdatePodScaleUp",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}


class EventResource(enum.StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    TARGET_POD = "TargetPod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    POD_DISRUPTION_BUDGET = "policy/PodDisruptionBudget"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    #: scheduler-plugins' PodGroup, under the name its Coscheduling registers (a custom
    #: resource's `<resource>.<version>.<group>`).
    POD_GROUP = "podgroups.v1alpha1.scheduling.x-k8s.io"
    #: Kubernetes' scheduling.k8s.io/v1beta1 PodGroup (gate GenericWorkload), under
    #: kube-scheduler's name (fwk.PodGroup).
    KUBE_POD_GROUP = "scheduling.k8s.io/PodGroup"
    WILDCARD = "*"


_POD_RESOURCES = (
    EventResource.ASSIGNED_POD,
    EventResource.UNSCHEDULED_POD,
    EventResource.TARGET_POD,
)


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: EventResource
    action_type: ActionType
    custom_label: str = ""
    # Derived once: the queue reads them for every pending pod an event is checked against.
    label: str = field(init=False, compare=False, repr=False)
    """Used in logs and in the `event` label of scheduler_queue_incoming_pods_total."""
    _wildcard: bool = field(init=False, compare=False, repr=False)
    _action: int = field(init=False, compare=False, repr=False)
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        label = self.custom_label or f"{self.resource.value}{self.action_type.label()}"
        object.__setattr__(self, "label", label)
        object.__setattr__(
            self,
            "_wildcard",
            self.resource == EventResource.WILDCARD and self.action_type == ActionType.ALL,
        )
        object.__setattr__(self, "_action", int(self.action_type))
        object.__setattr__(
            self, "_hash", hash((self.resource.value, self._action, self.custom_label))
        )

    def __hash__(self) -> int:
        # Computed once: the generated hash goes through the enums' Python-level __hash__,
        # and the queue looks events up in dicts for every move.
        return self._hash

    def is_wildcard(self) -> bool:
        return self._wildcard

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether a registered event (self) covers an incoming event.

        The incoming action must not be broader than the registered one: a generic Pod/Update
        (no specific change found) does not match a plugin that registered only, say,
        UpdatePodScaleDown — kube-scheduler's MatchClusterEvents.
        """
        if self._wildcard:
            return True
        return (
            self._action & incoming._action != 0
            and incoming._action <= self._action
            and _resource_matches(self.resource, incoming.resource)
        )


def _resource_matches(registered: EventResource, incoming: EventResource) -> bool:
    if registered in (EventResource.WILDCARD, incoming):
        return True
    return registered == EventResource.POD and incoming in _POD_RESOURCES


class QueueingHint(enum.IntEnum):
    QUEUE_SKIP = 0
    QUEUE = 1


# A hint function: (pod that was rejected, old object, new object) -> hint. Raising counts as QUEUE.
QueueingHintFn = Callable[[Pod, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint_fn: QueueingHintFn | None = None


# Special event labels.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"

EVENT_ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.DELETE)
EVENT_NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD)
EVENT_NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(
    EventResource.WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT
)
EVENT_FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, FORCE_ACTIVATE)


def pod_scheduling_properties_change(
    new: Pod, old: Pod, is_target_pod: bool = False
) -> list[ClusterEvent]:
    """The UpdatePodXYZ events an update of a pod produces (at least one: generic Update)."""
    if new.node_name:
        resource = EventResource.ASSIGNED_POD
    elif is_target_pod:
        resource = EventResource.TARGET_POD
    else:
        resource = EventResource.UNSCHEDULED_POD
    actions = []
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if _scaled(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_UP)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if new.resource_claim_statuses != old.resource_claim_statuses:
        # kube-scheduler's extractPodGeneratedResourceClaimChange (DynamicResourceAllocation
        # is GA): kube-controller-manager named a claim it generated from a template.
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [ClusterEvent(resource, action) for action in actions]


def _scaled(bigger: Pod, smaller: Pod) -> bool:
    """Whether some request of `bigger` exceeds (or is missing from) `smaller`."""
    a, b = bigger.requests, smaller.requests
    if a.milli_cpu > b.milli_cpu or a.memory > b.memory:
        return True
    if a.ephemeral_storage > b.ephemeral_storage:
        return True
    return any(amount > b.scalar.get(name, 0) for name, amount in a.scalar.items())


def node_scheduling_properties_change(new: Node, old: Node) -> list[ClusterEvent]:
    """The UpdateNodeXYZ events an update of a node produces (may be empty)."""
    actions = []
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if new.allocatable != old.allocatable:
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if new.taints != old.taints:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if new.condition_statuses != old.condition_statuses:
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    if new.annotations != old.annotations:
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    if new.declared_features != old.declared_features:  # the NodeDeclaredFeatures gate is GA
        actions.append(ActionType.UPDATE_NODE_DECLARED_FEATURE)
    return [ClusterEvent(EventResource.NODE, action) for action in actions]
