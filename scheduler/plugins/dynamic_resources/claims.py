"""A pod's ResourceClaims as upstream's foreachPodResourceClaim finds them (resourceclaim.Name,
IsForPod), with its error messages, and the small predicates over claims PreFilter, Filter and
PreBind share (IsReservedForPod, the consumer reference, an allocation's node selector)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework import (
    ClaimNotFoundError,
    ClaimTracker,
    NodeSelector,
    Pod,
    ResourceClaim,
    SelectorError,
)


class ClaimError(Exception):
    """The pod cannot be scheduled now: a claim is missing, being deleted or not the pod's
    (upstream returns these as UnschedulableAndUnresolvable)."""


def claim_name(pod: Pod, index: int) -> str | None:
    """resourceclaim.Name: the claim of the pod's `index`th spec.resourceClaims entry; None
    when a template was used and kube-controller-manager decided not to generate one."""
    entry = pod.pod_claims[index]
    if entry.resource_claim_name is not None:
        return entry.resource_claim_name
    if entry.resource_claim_template_name is not None:
        for name, generated in pod.resource_claim_statuses:
            if name == entry.name:
                return generated
        raise ClaimError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise ClaimError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.name}": '
        "none of the supported fields are set"
    )


def pod_claims(pod: Pod, tracker: ClaimTracker) -> list[ResourceClaim]:
    """Every claim of the pod (in spec order, skipping ungenerated ones), through the assume
    cache; raises ClaimError with upstream's message for the first claim that is not usable."""
    claims: list[ResourceClaim] = []
    for index, entry in enumerate(pod.pod_claims):
        name = claim_name(pod, index)
        if name is None:
            continue
        try:
            claim = tracker.get(pod.namespace, name)
        except ClaimNotFoundError as err:
            raise ClaimError(str(err)) from err
        if claim.deleting:
            raise ClaimError(f'resourceclaim "{claim.name}" is being deleted')
        if entry.resource_claim_name is None and claim.controller_uid != pod.uid:
            raise ClaimError(
                f"ResourceClaim {claim.namespace}/{claim.name} was not created for Pod "
                f"{pod.namespace}/{pod.name} (Pod is not owner)"
            )
        claims.append(claim)
    return claims


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    return any(ref.get("uid") == pod.uid for ref in claim.reserved_for)


def consumer(pod: Pod) -> dict[str, Any]:
    """The status.reservedFor entry for the pod (resourceclaim.BindTo without PodGroups)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def allocation_node_selector(allocation: Mapping[str, Any]) -> NodeSelector | None:
    """The allocation's nodeSelector (None: available on every node); SelectorError when the
    API server stored one kube-pysched cannot read."""
    raw = allocation.get("nodeSelector")
    return NodeSelector.parse(raw) if raw is not None else None


__all__ = [
    "ClaimError",
    "SelectorError",
    "allocation_node_selector",
    "claim_name",
    "consumer",
    "is_reserved_for_pod",
    "pod_claims",
]
