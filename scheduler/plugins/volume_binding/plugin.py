"""kube-scheduler v1.37's VolumeBinding: a pod's PersistentVolumeClaims (and generic ephemeral
volumes) must be bound, or bindable on the node, to a volume the node can reach. PreFilter
sorts the claims, Filter finds static volumes or dynamic provisioning per node, Score prefers
nodes by storage utilisation, Reserve assumes the choice, PreBind writes it and waits for the
PersistentVolume controller (on a thread of its own: see PreBindPreFlight)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from scheduler.framework import (
    CLAIM_LOST,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    NodeInfo,
    Pod,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
    SignFragment,
    Status,
    ephemeral_claim_error,
    has_claims,
    pod_claims,
    signers,
)
from scheduler.plugins.helper.storage import claim_not_found
from scheduler.plugins.volume_binding import hints
from scheduler.plugins.volume_binding.args import VolumeBindingArgs
from scheduler.plugins.volume_binding.binder import (
    BinderError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)
from scheduler.plugins.volume_binding.scoring import CapacityScorer, class_resources

NAME = "VolumeBinding"
_STATE_KEY = NAME
_SKIP = Status(Code.SKIP)


@dataclass
class _State:
    """Shared by clones (upstream's Clone returns the same pointer): Filter runs record what
    each node would get, Reserve/PreBind/Unreserve read the chosen node's."""

    claims: PodVolumeClaims | None = None
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False
    fits_every_node: bool = False
    """Every claim bound to an existing volume without node affinity: Filter passes every node
    without looking (what it would find), so such pods pay nothing per node."""
    scores: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class VolumeBinding:
    name = NAME

    def __init__(self, args: VolumeBindingArgs | None, handle: Handle) -> None:
        args = args or VolumeBindingArgs()
        self._storage = handle.storage()  # starts the storage informers
        self.binder = VolumeBinder(self._storage, handle.api, float(args.bind_timeout_seconds))
        self._scorer = CapacityScorer(args.shape)

    # --- PreFilter ------------------------------------------------------------------------

    def _claims_error(self, pod: Pod) -> str:
        """podHasPVCs' checks of each claim, against the informer."""
        for pc in pod_claims(pod):
            claim = self._storage.claim(pod.namespace, pc.name)
            if claim is None:
                if pc.ephemeral:
                    return (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{pc.name}"'
                    )
                return claim_not_found(pc.name)
            if claim.phase == CLAIM_LOST:
                return (
                    f'persistentvolumeclaim "{claim.name}" bound to non-existent '
                    f'persistentvolume "{claim.volume_name}"'
                )
            if claim.deleting:
                return f'persistentvolumeclaim "{claim.name}" is being deleted'
            if pc.ephemeral and (err := ephemeral_claim_error(pod, claim)):
                return err
        return ""

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not has_claims(pod):
            state.write(_STATE_KEY, _State())
            return None, _SKIP
        if message := self._claims_error(pod):
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        try:
            claims = self.binder.pod_volume_claims(pod)
        except BinderError as err:
            return None, Status.as_error(err)
        if claims.unbound_immediate:
            return None, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "pod has unbound immediate PersistentVolumeClaims",
            )
        fits = not claims.unbound_delay_binding and self.binder.bound_fit_every_node(claims.bound)
        state.write(_STATE_KEY, _State(claims=claims, fits_every_node=fits))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # --- Filter ---------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s: _State = state.read(_STATE_KEY)
        node = node_info.node
        if s.claims is None or node is None or s.fits_every_node:
            return None
        try:
            volumes, reasons = self.binder.find_pod_volumes(s.claims, node.name, node.labels)
        except BinderError as err:
            return Status.as_error(err)
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)
        with s.lock:
            s.by_node[node.name] = volumes
        return None

    # --- PreScore / Score -----------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Scores every feasible node at once; Skip when all would score 0 (no claims, or no
        volume with a known capacity), which adds exactly what Score would have."""
        s: _State | None = state.get(_STATE_KEY)
        if s is None or not s.by_node:
            return _SKIP
        scores = {}
        for info in nodes:
            volumes = s.by_node.get(info.name)
            if volumes is not None:
                scores[info.name] = self._scorer(class_resources(volumes))
        if not any(scores.values()):
            return _SKIP
        s.scores = scores
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int | Status:
        s: _State = state.read(_STATE_KEY)
        return s.scores.get(node_info.name, 0)

    def score_extensions(self) -> ScoreExtensions | None:
        return None

    # --- Reserve / Unreserve --------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s: _State = state.read(_STATE_KEY)
        volumes = s.by_node.get(node_name)
        if volumes is None:
            s.all_bound = True  # the pod has no claims
            return None
        try:
            s.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        except BinderError as err:
            return Status.as_error(err)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s: _State | None = state.get(_STATE_KEY)
        volumes = s.by_node.get(node_name) if s is not None else None
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # --- PreBindPreFlight / PreBind -------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Skip when every claim is bound: PreBind has nothing to write or wait for."""
        s: _State = state.read(_STATE_KEY)
        if s.all_bound:
            return _SKIP
        if node_name not in s.by_node:
            return Status(Code.ERROR, f'no pod volume found for node "{node_name}"')
        return None

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s: _State = state.read(_STATE_KEY)
        if s.all_bound:
            return None
        volumes = s.by_node.get(node_name)
        if volumes is None:
            return Status(Code.ERROR, f'no pod volume found for node "{node_name}"')
        try:
            self.binder.bind_pod_volumes(pod, node_name, volumes)
        except BinderError as err:
            return Status.as_error(err)
        return None

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """Feasibility and score depend on the volume sources (configMap and secret aside)."""
        return [SignFragment(signers.VOLUMES, signers.volumes(pod))], None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return hints.events_to_register()
