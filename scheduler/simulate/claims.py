"""What kube-controller-manager's resourceclaim controller does for a pod of a simulation: the
ResourceClaims of its ResourceClaimTemplates, and the devices the run allocated to its claims.

In a live cluster a pod whose `spec.resourceClaims` names a template waits (DynamicResources'
PreEnqueue: "ResourceClaim not created yet") until the controller has created a claim from the
template and recorded it in `status.resourceClaimStatuses`. The simulator does the same before
the pod reaches the queue: the claim gets the template's `spec.spec`, the labels and
annotations of its `spec.metadata`, the annotation `resource.kubernetes.io/pod-claim-name`,
the pod as controlling owner, and a name made as the controller asks the API server to make it
(`generateName` `<pod>-<claim name>-`, both parts shortened in proportion past 57 characters,
then five random characters of the API server's alphabet, drawn from the simulation's seed).
A template that does not exist leaves the pod without its claim, as the controller would
(it fails and retries): the pod then stays pending, held by DynamicResources' PreEnqueue.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable

from scheduler.api.dra import ResourceClaim, parse_resource_claim
from scheduler.api.json_types import Json
from scheduler.api.objects import Pod
from scheduler.framework.dra import StaticDRA
from scheduler.simulate.report import AllocatedDevice

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
#: The characters the API server draws a generated name's suffix from (utilrand.String).
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_BASE_LEN = 57


def generate_name(pod: str, claim: str) -> str:
    """The resourceclaim controller's generateName for a pod's claim."""
    base = f"{pod}-{claim}-"
    if len(base) > MAX_BASE_LEN:
        # As upstream: both names shortened in proportion (the trailing hyphen then dropped).
        base = (
            f"{pod[: len(pod) * MAX_BASE_LEN // len(base)]}-"
            + claim[: len(claim) * MAX_BASE_LEN // len(base)]
        )
    return base


class ClaimController:
    """The ResourceClaimTemplates of the snapshot and the claims made from them."""

    def __init__(self, templates: Iterable[Json], seed: int) -> None:
        self._templates = {
            (t["metadata"].get("namespace", ""), t["metadata"]["name"]): t for t in templates
        }
        self._random = random.Random(seed)

    def _suffix(self) -> str:
        return "".join(self._random.choice(ALPHABET) for _ in range(5))

    def claims_for(self, raw: Json, dra: StaticDRA) -> Json:
        """The pod with a claim created (into `dra`) and recorded in its status for each
        template entry that has none yet; the pod itself when there is nothing to do."""
        spec = raw.get("spec") or {}
        entries = [
            e for e in spec.get("resourceClaims") or [] if e.get("resourceClaimTemplateName")
        ]
        if not entries:
            return raw
        status = raw.get("status") or {}
        statuses = list(status.get("resourceClaimStatuses") or [])
        done = {s.get("name") for s in statuses}
        meta = raw["metadata"]
        namespace = meta.get("namespace", "default")
        changed = False
        for entry in entries:
            if entry["name"] in done:
                continue
            template = self._templates.get((namespace, entry["resourceClaimTemplateName"]))
            if template is None:
                continue
            claim = self._claim(meta, namespace, entry["name"], template, dra)
            dra.add_claim(claim)
            statuses.append({"name": entry["name"], "resourceClaimName": claim.name})
            changed = True
        if not changed:
            return raw
        return {**raw, "status": {**status, "resourceClaimStatuses": statuses}}

    def _claim(
        self, pod: Json, namespace: str, name: str, template: Json, dra: StaticDRA
    ) -> ResourceClaim:
        spec = template.get("spec") or {}
        tmeta = spec.get("metadata") or {}
        base = generate_name(pod["name"], name)
        claim_name = base + self._suffix()
        while dra.claim(namespace, claim_name) is not None:  # the API server draws again
            claim_name = base + self._suffix()
        raw: Json = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": claim_name,
                "generateName": base,
                "namespace": namespace,
                "uid": f"sim-claim-{namespace}-{claim_name}",
                "resourceVersion": "1",
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {**(tmeta.get("annotations") or {}), POD_CLAIM_ANNOTATION: name},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod["name"],
                        "uid": pod.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": copy.deepcopy(spec.get("spec") or {}),
        }
        return parse_resource_claim(raw)


def pod_devices(pod: Pod, dra: StaticDRA) -> list[AllocatedDevice]:
    """The devices allocated to the pod's claims (status.allocation.devices.results), in
    spec order."""
    generated = dict(pod.resource_claim_statuses)
    claims: list[ResourceClaim] = []
    for entry in pod.pod_claims:
        name = entry.resource_claim_name or generated.get(entry.name)
        claim = dra.claim(pod.namespace, name) if name else None
        if claim is not None:
            claims.append(claim)
    out: list[AllocatedDevice] = []
    for claim in claims:
        allocation = claim.allocation or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            out.append(
                AllocatedDevice(
                    claim=claim.name,
                    request=str(result.get("request", "")),
                    driver=str(result.get("driver", "")),
                    pool=str(result.get("pool", "")),
                    device=str(result.get("device", "")),
                )
            )
    return out
