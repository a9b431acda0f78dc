"""Plugin interfaces for every extension point, and the Handle plugins receive.

A plugin is any object with a `name` attribute that implements one or more of these methods;
the runtime finds them with isinstance checks once, when a profile is built. Hot-path methods
return None for success. The optional `filter_batch`/`score_batch` methods compute a whole
column at once from the NodeTable; the runtime falls back to the per-node method when a plugin
has no batch form or returns None from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from scheduler.api.dra import ResourceClaim
from scheduler.api.gang import Gang, GangRef
from scheduler.api.json_types import Json
from scheduler.api.namespace import Namespace
from scheduler.api.objects import Pod, PodDisruptionBudget
from scheduler.api.resources import Resource
from scheduler.api.spread import Service, Workload
from scheduler.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.dra import DRAManager
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.evictions import Evictions
from scheduler.framework.gang import GangLister, GangMembers, PodGroupInfo
from scheduler.framework.node_table import BoolColumn, NodeTable
from scheduler.framework.nominations import Nominations
from scheduler.framework.signers import SignFragment
from scheduler.framework.status import Status
from scheduler.framework.status_column import StatusColumn
from scheduler.framework.types import (
    NodeInfo,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

if TYPE_CHECKING:
    from scheduler.clock import Clock
    from scheduler.features import FeatureGates

ScoreColumn = npt.NDArray[np.int64]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...

    def sort_key(self, info: QueuedPodInfo) -> Any:
        """A key such that key(a) < key(b) iff less(a, b); lets the heap avoid cmp_to_key."""
        ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEventWithHint]: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class PodCountingFilter(Protocol):
    """A Filter plugin whose verdict reads a node only through these three values."""

    name: str

    def filter_counts(
        self, state: CycleState, pod: Pod, allocatable: Resource, requested: Resource, pods: int
    ) -> Status | None: ...


@runtime_checkable
class RequestFitFilter(PodCountingFilter, Protocol):
    """A counting filter whose verdict is a room check: the pod passes on a node exactly when
    the node has room for one more pod (pods + 1 <= allocatable pods) and, for every resource
    `fit_request` names with a positive amount, requested + that amount <= allocatable. Lets
    preemption's dry run decide many nodes at once with column arithmetic. Where it rejects,
    its Status depends only on the node's allocatable and on which of those checks fail: the
    dry run words one node per such case and gives the others the same Status."""

    def fit_request(self, state: CycleState, pod: Pod) -> Resource: ...


class CountingCheck(Protocol):
    """A cycle's Filter as a function of a node's pod count and requests
    (framework/runtime/counting_filter.py)."""

    def nominated_by_node(self, pod: Pod) -> Mapping[str, Sequence[Pod]]: ...

    def nominated_pods(self, pod: Pod, node_name: str) -> Sequence[Pod]: ...

    def fit_requests(self, state: CycleState, pod: Pod) -> list[Resource] | None:
        """Each counting plugin's `RequestFitFilter.fit_request`, or None when one of them
        has no room rule."""
        ...

    def node_only_status(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """The first rejection among the plugins that read only the Node, in order."""
        ...

    def node_only_passes(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """Per row of `table`, whether every plugin that reads only the Node passes; None
        when one of them has no batch column for this pod."""
        ...

    def with_nominated(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        requested: Resource,
        pods: int,
        nominated: Sequence[Pod] | None = None,
        counts_only: bool = False,
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    def filter_batch(self, state: CycleState, pod: Pod, table: NodeTable) -> BoolColumn | None:
        """True where `filter` would succeed, for every row; None to fall back to `filter`."""
        ...


@runtime_checkable
class BatchFilterStatusesPlugin(BatchFilterPlugin, Protocol):
    def filter_batch_statuses(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> StatusColumn | None:
        """What `filter` returns for each of `rows` (rows its column rejects), for the
        diagnosis of a pod that fits nowhere; None to fall back to `filter` per node."""
        ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None: ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: ScoreColumn) -> Status | None:
        """Rewrites `scores` (one per feasible node, in order) in place into [0, 100]."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        """Scores of the given rows; None to fall back to `score`."""
        ...


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """The pod's signature fragments (KEP-5598), or a status refusing to sign it:
        Unschedulable when the plugin's Filter or Score depend on more than the pod and the
        node (the pod then is never batched), Error when signing failed. A profile signs pods
        only if every PreFilter, Filter, PreScore and Score plugin implements this."""
        ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(
        self, state: CycleState, pod: Pod, node_name: str
    ) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PreBindPreFlightPlugin(PreBindPlugin, Protocol):
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Whether PreBind has work for this pod (None), nothing to do (Skip), or failed
        (Error); cheap, called on the scheduling loop before the binding cycle is started."""
        ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PodGroupPlugin(Plugin, Protocol):
    """A plugin that defines pod groups (Coscheduling, GangScheduling): the loop asks it
    whether a popped pod is a member of a group, and then schedules the group's pending members
    in one step, all or none (the group cycle, docs/gang.md)."""

    def pod_group(self, pod: Pod) -> PodGroupInfo | None:
        """The pod's group, or None when the pod is scheduled on its own (no group, or a group
        that does not exist: PreEnqueue / PreFilter deal with those)."""
        ...

    def group_failed(self, key: GangRef) -> None:
        """A group cycle ended below minMember and reverted what it placed: the group's
        failure and backoff bookkeeping."""
        ...

    def group_placed(self, key: GangRef) -> None:
        """A group cycle reached minMember: the group's placed members go on to Permit."""
        ...


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """A pending member of a group and the node the algorithm found for it, with the cycle
    state it was found with (what a preemption plugin re-checks the member's filters on)."""

    pod: Pod
    node_name: str
    state: CycleState


@dataclass(frozen=True, slots=True)
class GroupAssignments:
    """Where a group's pending members would go (members that fit nowhere have none) and
    whether that reaches the group's quorum (`status` None) or why not."""

    assignments: tuple[ProposedAssignment, ...]
    status: Status | None


@runtime_checkable
class PodGroupPostFilterPlugin(Plugin, Protocol):
    """A plugin that makes room for a whole group (kube-scheduler's PodGroupPostFilter):
    called when a group cycle ended below the quorum, with the group's pending members."""

    def post_filter_pod_group(
        self,
        group: PodGroupInfo,
        members: list[Pod],
        schedule_group: Callable[[], GroupAssignments],
    ) -> tuple[dict[str, str] | None, Status]:
        """Member uid -> nominated node and Success when room is being made (victims evicted),
        else None and why not. Runs inside the loop's snapshot simulation: the plugin may add
        and remove pods on `Handle.snapshot()` (all undone after); `schedule_group` places
        the members on the snapshot as it is then."""
        ...


class WaitingPod(Protocol):
    pod: Pod

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...

    def preempt(self, plugin: str, message: str) -> bool:
        """Rejects the pod if it is still waiting; True when it was (preemption in memory)."""
        ...

    def pending_plugins(self) -> list[str]: ...


class SnapshotLister(Protocol):
    """Read access to the current scheduling cycle's snapshot."""

    def list(self) -> list[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    @property
    def table(self) -> NodeTable: ...

    def add_pod(self, pod: Pod, node_name: str) -> NodeInfo:
        """Only inside the loop's simulation (group preemption): undone when it ends."""
        ...

    def remove_pod(self, pod: Pod, node_name: str) -> NodeInfo:
        """Only inside the loop's simulation (group preemption): undone when it ends."""
        ...


class PodNominator(Protocol):
    def add_nominated_pod(self, pod: Pod, nominated_node_name: str) -> None: ...

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    def nominated_pods_by_node(self) -> Mapping[str, Sequence[Pod]]:
        """nominated_pods_for_node of every node that has nominated pods (read-only)."""
        ...

    def nominations(self) -> Nominations:
        """Every nomination at one instant (read-only)."""
        ...

    def nominated_node_for(self, uid: str) -> str | None: ...


class ApiActions(Protocol):
    """The API calls plugins may make; implemented by the client layer (scheduler/client)."""

    def bind(self, pod: Pod, node_name: str) -> None: ...

    def delete_pod(self, pod: Pod, grace_period_seconds: int | None = None) -> None: ...

    def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None: ...

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic merge patch on a scheduling.k8s.io/v1beta1 podgroups/status."""
        ...

    def update_persistent_volume(self, volume: Json) -> Json: ...

    def update_persistent_volume_claim(self, claim: Json) -> Json: ...

    def reserve_resource_claim(
        self,
        claim: ResourceClaim,
        allocation: Mapping[str, Any] | None,
        consumer: Mapping[str, Any],
        allocation_timestamp: bool,
    ) -> ResourceClaim:
        """DynamicResources' PreBind (bindClaim): the delete-protection finalizer and the
        allocation (when given), `consumer` appended to status.reservedFor; the claim the
        API server answered. Raises with upstream's wording when the claim was deleted or
        allocated elsewhere meanwhile."""
        ...

    def unreserve_resource_claim(self, claim: ResourceClaim, consumer_uid: str) -> None:
        """Removes `consumer_uid` from the claim's status.reservedFor."""
        ...

    def deallocate_resource_claim(self, claim: ResourceClaim) -> None:
        """Clears the claim's reservedFor, allocation and devices (at its resourceVersion)."""
        ...

    def create_resource_claim(self, namespace: str, body: Mapping[str, Any]) -> ResourceClaim:
        """Creates a claim (`body` as the API takes it, metadata.generateName allowed); the
        stored claim."""
        ...

    def delete_resource_claim(self, claim: ResourceClaim) -> None:
        """Removes the delete-protection finalizer, then deletes the claim (gone is fine)."""
        ...


class StorageLister(Protocol):
    """The storage objects the informers hold (PersistentVolumeClaims, PersistentVolumes,
    StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments), read by
    the volume plugins. A plugin's first Handle.storage() call is what starts those informers,
    as a plugin's listers do in kube-scheduler's informer factory."""

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None: ...

    def volume(self, name: str) -> PersistentVolume | None: ...

    def volumes(self) -> list[PersistentVolume]: ...

    def storage_class(self, name: str) -> StorageClass | None: ...

    def csi_node(self, name: str) -> CSINode | None: ...

    def csi_driver(self, name: str) -> CSIDriver | None: ...

    def capacities(self) -> list[CSIStorageCapacity]: ...

    def volume_attachments(self) -> list[VolumeAttachment]: ...

    def revision(self) -> int:
        """A number that changes whenever a volume, storage class or CSINode changes, or a
        claim is added, deleted, or changes its volume, class or owner: what a plugin derives
        from those may be cached under it. A claim's status (phase, conditions) does not move
        it."""
        ...


class EventRecorder(Protocol):
    def eventf(
        self,
        regarding: Pod,
        related: Pod | Gang | None,
        event_type: str,
        reason: str,
        action: str,
        message: str,
    ) -> None: ...


class Handle(Protocol):
    """What the framework gives every plugin at construction."""

    profile_name: str
    features: FeatureGates
    #: The seed of the profile's random choices (None: unseeded); `kube-pysched simulate
    #: --seed` sets it so that a run can be repeated exactly.
    seed: int | None

    @property
    def clock(self) -> Clock:
        """The scheduler's time: Permit timeouts and plugins' own timers run on it."""
        ...

    def snapshot(self) -> SnapshotLister: ...

    @property
    def api(self) -> ApiActions: ...

    @property
    def nominator(self) -> PodNominator: ...

    @property
    def event_recorder(self) -> EventRecorder: ...

    def pdbs(self) -> list[PodDisruptionBudget]: ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of namespace `name` as the informer last saw them; None if unknown."""
        ...

    def namespaces(self) -> list[Namespace]:
        """Every namespace the informer knows: a namespaceSelector is resolved against them."""
        ...

    def services(self, namespace: str) -> list[Service]:
        """The Services of a namespace (their selectors), for default topology spreading."""
        ...

    def workload(self, kind: str, namespace: str, name: str) -> Workload | None:
        """The ReplicationController, ReplicaSet or StatefulSet namespace/name (None if
        unknown), for default topology spreading."""
        ...

    def storage(self) -> StorageLister:
        """The storage objects (see StorageLister); calling it makes the process watch them."""
        ...

    def dra(self) -> DRAManager:
        """The DRA objects and the claim tracker shared by all profiles; calling it makes the
        process watch ResourceClaims, ResourceSlices, DeviceClasses and DeviceTaintRules."""
        ...

    def gangs(self) -> GangLister:
        """The pod groups (see GangLister); calling it makes the process watch PodGroups."""
        ...

    def watched_gangs(self) -> GangLister | None:
        """The pod groups if a plugin made the process watch them (a gang plugin in some
        profile), else None; unlike gangs() it never starts a watch (preemption reads groups
        only where they exist)."""
        ...

    def gang_members(self, ref: GangRef) -> GangMembers:
        """The group's members bound or assumed in the scheduler cache, now (not as of the
        cycle's snapshot: a pod assumed in this cycle counts)."""
        ...

    def get_pod(self, key: str) -> Pod | None:
        """The informer's current version of the pod namespace/name (None if unknown)."""
        ...

    def node_now(self, name: str) -> NodeInfo | None:
        """A copy of the node as the scheduler cache holds it now (None if unknown): for
        queueing hints, which run on the event's thread, not in a cycle with its snapshot."""
        ...

    def node_generation(self, name: str) -> int | None:
        """The generation of node_now(name) (None if unknown), without copying the node."""
        ...

    @property
    def evictions(self) -> Evictions:
        """The pods whose deletion a preemption of this process asked for (all profiles')."""
        ...

    def activate(self, pods: Iterable[Pod]) -> None: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_over_waiting_pods(self, fn: Callable[[WaitingPod], None]) -> None: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def counting_filter(self, state: CycleState, pod: Pod) -> CountingCheck | None:
        """The cycle's Filter as a function of a node's pod count and requests, when only
        counting plugins look at pods (see framework/runtime/counting_filter.py)."""
        ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None: ...


# A plugin factory: (decoded args or None, handle) -> plugin instance.
PluginFactory = Callable[[Any, Handle], Plugin]
