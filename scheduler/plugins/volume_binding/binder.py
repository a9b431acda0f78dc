"""The volume binder of kube-scheduler's VolumeBinding (binder.go): sorts a pod's claims,
finds the static volumes or dynamic provisioning each unbound claim gets on a node, assumes
those decisions in the assume caches, writes them to the API server and waits for the
PersistentVolume controller to finish binding."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from scheduler.framework import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    NO_PROVISIONER,
    ApiActions,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    StorageLister,
    ephemeral_claim_error,
    parse_claim,
    parse_volume,
    pod_claims,
)
from scheduler.plugins.volume_binding.assume_cache import AssumeCache, pv_key, pvc_key
from scheduler.plugins.volume_binding.matching import (
    bind_volume_to_claim,
    check_node_affinity,
    find_matching_volume,
    matches_allowed_topologies,
    node_has_access,
    volume_limit,
    with_selected_node,
)

log = structlog.get_logger(__name__)

# ConflictReasons, in the order FindPodVolumes appends them.
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

DEFAULT_POLL_INTERVAL = 1.0


class BinderError(Exception):
    """A failure the plugin reports as an Error status (upstream's returned errors)."""


@dataclass
class BindingInfo:
    """A claim and the static volume chosen for it (after Reserve: the volume as assumed)."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume


@dataclass
class DynamicProvision:
    """A claim to provision; `node_capacity` is the CSIStorageCapacity that showed room."""

    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


@dataclass
class PodVolumes:
    """What Filter found for one node, used by Score, Reserve, PreBind and Unreserve."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)
    node_labels: Mapping[str, str] = field(default_factory=dict)
    """The node's labels when it was filtered: what PreBind checks volume affinity against."""


@dataclass
class PodVolumeClaims:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    volumes_by_class: dict[str, list[PersistentVolume]] = field(default_factory=dict)
    """The (assumed) volumes of each unbound delayed claim's class, listed once in PreFilter."""


def is_claim_fully_bound(claim: PersistentVolumeClaim) -> bool:
    """isPVCFullyBound: the PV controller has finished (volumeName and bind-completed)."""
    return bool(claim.volume_name) and ANN_BIND_COMPLETED in claim.annotations


class VolumeBinder:
    def __init__(self, storage: StorageLister, api: ApiActions, bind_timeout: float) -> None:
        self.storage = storage
        self.api = api
        self.bind_timeout = bind_timeout
        self.poll_interval = DEFAULT_POLL_INTERVAL
        self.pv_cache: AssumeCache[PersistentVolume] = AssumeCache(
            "persistentvolumes", storage.volume, pv_key
        )
        self.pvc_cache: AssumeCache[PersistentVolumeClaim] = AssumeCache(
            "persistentvolumeclaims", self._claim_by_key, pvc_key
        )

    def _claim_by_key(self, key: str) -> PersistentVolumeClaim | None:
        namespace, _, name = key.partition("/")
        return self.storage.claim(namespace, name)

    # --- PreFilter ------------------------------------------------------------------------

    def _claim_of(self, pod: Pod, name: str) -> PersistentVolumeClaim:
        key = f"{pod.namespace}/{name}"
        claim = self.pvc_cache.get(key)
        if claim is None:
            raise BinderError(
                f'error getting PVC "{key}": persistentvolumeclaims "{name}" not found'
            )
        return claim

    def _is_delay_binding(self, claim: PersistentVolumeClaim) -> bool:
        """volume.IsDelayBindingMode: no class, or a class not found, means immediate."""
        if not claim.storage_class:
            return False
        sc = self.storage.storage_class(claim.storage_class)
        return sc is not None and sc.binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER

    def pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """GetPodVolumeClaims: the pod's claims split into bound, delayed and immediate."""
        claims = PodVolumeClaims()
        for pc in pod_claims(pod):
            claim = self._claim_of(pod, pc.name)
            if pc.ephemeral and (err := ephemeral_claim_error(pod, claim)):
                raise BinderError(err)
            if is_claim_fully_bound(claim):
                claims.bound.append(claim)
            elif self._is_delay_binding(claim) and not claim.volume_name:
                claims.unbound_delay_binding.append(claim)
            else:
                claims.unbound_immediate.append(claim)
        for claim in claims.unbound_delay_binding:
            cls = claim.storage_class
            if cls not in claims.volumes_by_class:
                claims.volumes_by_class[cls] = [
                    self.pv_cache.replace_assumed(pv)
                    for pv in self.storage.volumes()
                    if pv.storage_class == cls
                ]
        return claims

    def all_bound(self, pod: Pod) -> bool:
        """arePodVolumesBound, against the assume cache."""
        for pc in pod_claims(pod):
            claim = self.pvc_cache.get(f"{pod.namespace}/{pc.name}")
            if claim is None or not is_claim_fully_bound(claim):
                return False
            if pc.ephemeral and ephemeral_claim_error(pod, claim):
                return False
        return True

    # --- Filter ---------------------------------------------------------------------------

    def find_pod_volumes(
        self, claims: PodVolumeClaims, node_name: str, node_labels: Mapping[str, str]
    ) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: the bindings and provisioning that fit the pod on the node, and the
        conflict reasons when it does not fit. Raises BinderError as upstream errors."""
        volumes = PodVolumes(node_labels=node_labels)
        bound_ok = unbound_ok = storage_ok = pvs_found = True
        if claims.bound:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound, node_labels)
        if claims.unbound_delay_binding:
            unbound_ok, storage_ok = self._find_unbound(claims, node_name, node_labels, volumes)
        reasons = []
        if not bound_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(REASON_PV_NOT_EXIST)
        return volumes, reasons

    def bound_fit_every_node(self, claims: list[PersistentVolumeClaim]) -> bool:
        """Whether _check_bound_claims passes on any node: every volume exists and has no
        node affinity."""
        for claim in claims:
            pv = self.pv_cache.get(claim.volume_name)
            if pv is None or pv.node_affinity is not None:
                return False
        return True

    def _check_bound_claims(
        self, claims: list[PersistentVolumeClaim], node_labels: Mapping[str, str]
    ) -> tuple[bool, bool]:
        """(node affinity satisfied, every bound volume exists)."""
        for claim in claims:
            pv = self.pv_cache.get(claim.volume_name)
            if pv is None:
                return True, False
            if not check_node_affinity(pv, node_labels):
                return False, True
        return True, True

    def _find_unbound(
        self,
        claims: PodVolumeClaims,
        node_name: str,
        node_labels: Mapping[str, str],
        out: PodVolumes,
    ) -> tuple[bool, bool]:
        """(unbound claims satisfied, enough storage); fills `out`."""
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims.unbound_delay_binding:
            selected = claim.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node_name:
                    return False, True
                to_provision.append(claim)
            else:
                to_match.append(claim)
        satisfied = True
        if to_match:
            chosen: dict[str, PersistentVolume] = {}
            # Smallest claims first (a stable sort, as sort.Sort on few claims behaves).
            for claim in sorted(to_match, key=lambda c: c.request):
                pv = find_matching_volume(
                    claim, claims.volumes_by_class.get(claim.storage_class, ()), node_labels, chosen
                )
                if pv is None:
                    to_provision.append(claim)
                    satisfied = False
                    continue
                chosen[pv.name] = pv
                out.static_bindings.append(BindingInfo(claim, pv))
        if to_provision:
            return self._check_provisions(to_provision, node_labels, out)
        return satisfied, True

    def _check_provisions(
        self,
        claims: list[PersistentVolumeClaim],
        node_labels: Mapping[str, str],
        out: PodVolumes,
    ) -> tuple[bool, bool]:
        """checkVolumeProvisions: (provisioning possible, enough capacity)."""
        provisions: list[DynamicProvision] = []
        for claim in claims:
            class_name = claim.storage_class
            if not class_name:
                raise BinderError(f'no class for claim "{claim.key}"')
            sc = self.storage.storage_class(class_name)
            if sc is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            if not sc.provisioner or sc.provisioner == NO_PROVISIONER:
                return False, True
            if not matches_allowed_topologies(sc, node_labels):
                return False, True
            sufficient, capacity = self._has_enough_capacity(claim, sc, node_labels)
            if not sufficient:
                return True, False
            provisions.append(DynamicProvision(claim, capacity))
        out.dynamic_provisions = provisions
        return True, True

    def _has_enough_capacity(
        self, claim: PersistentVolumeClaim, sc: StorageClass, node_labels: Mapping[str, str]
    ) -> tuple[bool, CSIStorageCapacity | None]:
        """hasEnoughCapacity: only drivers that publish storage capacity are checked."""
        requests = ((claim.raw.get("spec") or {}).get("resources") or {}).get("requests") or {}
        if "storage" not in requests:
            return True, None
        driver = self.storage.csi_driver(sc.provisioner)
        if driver is None or not driver.storage_capacity:
            return True, None
        for capacity in self.storage.capacities():
            limit = volume_limit(capacity)
            if (
                capacity.storage_class == sc.name
                and limit is not None
                and limit >= claim.request
                and node_has_access(capacity, node_labels)
            ):
                return True, capacity
        return False, None

    # --- Reserve / Unreserve --------------------------------------------------------------

    def assume_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """AssumePodVolumes: True when every claim is already bound (nothing to do); else the
        chosen bindings and provisioning go into the assume caches and `volumes` is rewritten
        to hold the assumed objects. Raises BinderError (nothing stays assumed)."""
        if self.all_bound(pod):
            return True
        bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except Exception as err:
                    self._revert_pvs(bindings)
                    raise BinderError(str(err)) from err
            bindings.append(BindingInfo(binding.pvc, new_pv))
        provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions:
            claim = with_selected_node(provision.pvc, node_name)
            try:
                self.pvc_cache.assume(claim)
            except Exception as err:
                self._revert_pvs(bindings)
                self._revert_pvcs([p.pvc for p in provisions])
                raise BinderError(str(err)) from err
            provisions.append(DynamicProvision(claim))
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs([p.pvc for p in volumes.dynamic_provisions])

    def _revert_pvs(self, bindings: list[BindingInfo]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv)

    def _revert_pvcs(self, claims: list[PersistentVolumeClaim]) -> None:
        for claim in claims:
            self.pvc_cache.restore(claim)

    # --- PreBind --------------------------------------------------------------------------

    def bind_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> None:
        """BindPodVolumes: the API updates, then a poll of the informers (every
        `poll_interval`, first after one interval) until the PV controller has bound every
        claim; BinderError on a failed update, an undone binding or the deadline."""
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions]
        self._bind_api_update(bindings, claims)
        deadline = time.monotonic() + self.bind_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining > 0:
                time.sleep(min(self.poll_interval, remaining))
            if time.monotonic() >= deadline:
                log.info(
                    "volumes not bound before the deadline",
                    pod=pod.key,
                    claims=self._unbound_claims(bindings, claims),
                )
                raise BinderError("binding volumes: context deadline exceeded")
            try:
                if self._check_bindings(node_name, volumes.node_labels, bindings, claims):
                    return
            except BinderError as err:
                raise BinderError(f"binding volumes: {err}") from err

    def _bind_api_update(
        self, bindings: list[BindingInfo], claims: list[PersistentVolumeClaim]
    ) -> None:
        """bindAPIUpdate: PUT the volumes' claimRefs, then the claims' selected node; what was
        not written is no longer assumed when it fails."""
        done_pvs = done_pvcs = 0
        try:
            for binding in bindings:
                binding.pv = parse_volume(self.api.update_persistent_volume(dict(binding.pv.raw)))
                done_pvs += 1
            for i, claim in enumerate(claims):
                claims[i] = parse_claim(self.api.update_persistent_volume_claim(dict(claim.raw)))
                done_pvcs += 1
        except Exception as err:
            raise BinderError(str(err)) from err
        finally:
            self._revert_pvs(bindings[done_pvs:])
            self._revert_pvcs(claims[done_pvcs:])

    def _check_bindings(
        self,
        node_name: str,
        node_labels: Mapping[str, str],
        bindings: list[BindingInfo],
        claims: list[PersistentVolumeClaim],
    ) -> bool:
        """checkBindings: True when done, False to poll again, BinderError when undone."""
        for binding in bindings:
            pv = self.pv_cache.get_api_obj(binding.pv.name)
            if pv is None:
                raise BinderError(
                    f'failed to check binding: persistentvolumes "{binding.pv.name}" not found'
                )
            claim = self.pvc_cache.get_api_obj(binding.pvc.key)
            if claim is None:
                raise BinderError(
                    f'failed to check binding: persistentvolumeclaims "{binding.pvc.key}" not found'
                )
            if _newer(binding.pv.resource_version, pv.resource_version):
                return False
            if not check_node_affinity(pv, node_labels):
                raise BinderError(
                    f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": '
                    "no matching NodeSelectorTerms"
                )
            if pv.claim_ref is None or not pv.claim_ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{pv.name}"')
            if not is_claim_fully_bound(claim):
                return False
        for sent in claims:
            claim = self.pvc_cache.get_api_obj(sent.key)
            if claim is None:
                raise BinderError(
                    "failed to check provisioning pvc: persistentvolumeclaims "
                    f'"{sent.key}" not found'
                )
            if _newer(sent.resource_version, claim.resource_version):
                return False
            selected = claim.annotations.get(ANN_SELECTED_NODE)
            if selected is None and not claim.annotations:
                raise BinderError(f'selectedNode annotation reset for PVC "{claim.name}"')
            if selected != node_name:
                raise BinderError(f'provisioning failed for PVC "{claim.name}"')
            if claim.volume_name:
                pv = self.pv_cache.get_api_obj(claim.volume_name)
                if pv is None:
                    return False
                if not check_node_affinity(pv, node_labels):
                    raise BinderError(
                        f'pv "{pv.name}" node affinity doesn\'t match node "{node_name}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_claim_fully_bound(claim):
                return False
        return True

    def _unbound_claims(
        self, bindings: list[BindingInfo], claims: list[PersistentVolumeClaim]
    ) -> list[str]:
        keys = [b.pvc.key for b in bindings] + [c.key for c in claims]
        out = []
        for key in keys:
            claim = self.pvc_cache.get_api_obj(key)
            if claim is None or not is_claim_fully_bound(claim):
                out.append(key)
        return out


def _newer(a: str, b: str) -> bool:
    """storage.APIObjectVersioner.CompareResourceVersion(a, b) > 0: versions as integers."""
    try:
        return int(a or 0) > int(b or 0)
    except ValueError:
        return False
