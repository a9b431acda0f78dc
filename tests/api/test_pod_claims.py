"""The pod and claim fields DynamicResources reads: spec.resourceClaims, the generated claims'
names in status.resourceClaimStatuses, a claim's controller owner and status.devices, and the
UpdatePodGeneratedResourceClaim event a newly named claim produces."""

from __future__ import annotations

from scheduler.api.dra import parse_resource_claim
from scheduler.api.objects import PodResourceClaim
from scheduler.api.parse import parse_pod
from scheduler.framework.events import ActionType, pod_scheduling_properties_change


def _pod(statuses: list[dict[str, str]] | None = None) -> dict[str, object]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "containers": [{"name": "c"}],
            "resourceClaims": [
                {"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
                {"name": "nic", "resourceClaimName": "shared-nic"},
            ],
        },
        "status": {"resourceClaimStatuses": statuses} if statuses is not None else {},
    }


def test_pod_claims_and_statuses_are_parsed() -> None:
    pod = parse_pod(_pod([{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]))
    assert pod.pod_claims == (
        PodResourceClaim("gpu", None, "gpu-template"),
        PodResourceClaim("nic", "shared-nic", None),
    )
    assert pod.resource_claim_statuses == (("gpu", "p-gpu-x1"),)
    assert pod.resource_claims == ("gpu", "nic")


def test_generated_claim_named_in_status_is_an_event() -> None:
    old, new = parse_pod(_pod()), parse_pod(_pod([{"name": "gpu", "resourceClaimName": "g"}]))
    actions = [e.action_type for e in pod_scheduling_properties_change(new, old)]
    assert actions == [ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM]
    assert [e.action_type for e in pod_scheduling_properties_change(new, new)] == [
        ActionType.UPDATE
    ]


def test_claim_controller_devices_and_finalizers() -> None:
    claim = parse_resource_claim(
        {
            "metadata": {
                "name": "c",
                "namespace": "ns",
                "uid": "cu",
                "finalizers": ["resource.kubernetes.io/delete-protection"],
                "ownerReferences": [
                    {"kind": "Pod", "name": "other", "uid": "x"},
                    {"kind": "Pod", "name": "p", "uid": "u1", "controller": True},
                ],
            },
            "spec": {"devices": {"requests": []}},
            "status": {"devices": [{"driver": "d", "pool": "p", "device": "g0"}]},
        }
    )
    assert claim.controller_uid == "u1"
    assert claim.finalizers == ("resource.kubernetes.io/delete-protection",)
    assert claim.devices == ({"driver": "d", "pool": "p", "device": "g0"},)
