"""The API calls the scheduler makes, with kube-scheduler's request shapes and retries.

Implements framework.interface.ApiActions. Request bodies are built as small dicts and encoded
with orjson; responses the scheduler does not need (a bind's Status, the patched pod) are not
decoded. Binds and status patches are retried as kube-scheduler's util.BindPod and
util.PatchPodStatus do (retry.DefaultBackoff on internal errors, unavailability and refused
connections; status patches also on conflicts). Errors are raised as scheduler.api.errors types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson

from scheduler.api.dra import ResourceClaim
from scheduler.api.errors import ApiError, is_retriable, is_retriable_with_conflict
from scheduler.api.json_types import Json
from scheduler.api.objects import Pod
from scheduler.api.parse import parse_pod
from scheduler.client.backoff import retry_on_error
from scheduler.client.dra import ResourceClaimWrites
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, RestClient


def _seg(value: str) -> str:
    """A path segment; API object names are DNS names, so quoting is almost always a no-op."""
    return (
        value
        if value.isascii() and value.replace("-", "").replace(".", "").isalnum()
        else (quote(value, safe=""))
    )


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{_seg(namespace)}/pods/{_seg(name)}"


def lease_path(namespace: str, name: str = "") -> str:
    base = f"/apis/coordination.k8s.io/v1/namespaces/{_seg(namespace)}/leases"
    return f"{base}/{_seg(name)}" if name else base


def volume_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{_seg(name)}"


def claim_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{_seg(namespace)}/persistentvolumeclaims/{_seg(name)}"


TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

# The delegated authenticator's and authorizer's budget per review (DelegatingAuthorization's
# ClientTimeout) and their retry backoff (DefaultAuthWebhookRetryBackoff: 0.5s x1.5, 5 steps).
REVIEW_TIMEOUT = 10.0


def kube_pod_group_status_path(namespace: str, name: str) -> str:
    """A scheduling.k8s.io/v1beta1 PodGroup's status subresource."""
    return (
        f"/apis/scheduling.k8s.io/v1beta1/namespaces/{_seg(namespace)}/podgroups/"
        f"{_seg(name)}/status"
    )


def events_path(namespace: str, name: str = "") -> str:
    base = f"/apis/events.k8s.io/v1/namespaces/{_seg(namespace)}/events"
    return f"{base}/{_seg(name)}" if name else base


class KubeApi:
    """Typed calls on top of a RestClient; thread-safe."""

    def __init__(self, rest: RestClient) -> None:
        self.rest = rest
        self._claims = ResourceClaimWrites(rest)

    # --- pods -------------------------------------------------------------------------------

    def bind(self, pod: Pod, node_name: str) -> None:
        """POST pods/binding; the uid makes it fail if the pod was replaced meanwhile."""
        body = orjson.dumps(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "target": {"kind": "Node", "name": node_name},
            }
        )
        path = pod_path(pod.namespace, pod.name) + "/binding"
        retry_on_error(lambda: self.rest.request_raw("POST", path, body=body), is_retriable)

    def patch_pod_status(self, pod: Pod, patch: Mapping[str, Any]) -> None:
        """Strategic merge patch on pods/status (PodScheduled condition, nominatedNodeName)."""
        body = orjson.dumps(patch)
        path = pod_path(pod.namespace, pod.name) + "/status"
        retry_on_error(
            lambda: self.rest.request_raw(
                "PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH
            ),
            is_retriable_with_conflict,
        )

    def patch_pod_group_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Strategic merge patch on a scheduling.k8s.io/v1beta1 PodGroup's status (its
        PodGroupInitiallyScheduled condition; conditions merge by type)."""
        body = orjson.dumps(patch)
        path = kube_pod_group_status_path(namespace, name)
        retry_on_error(
            lambda: self.rest.request_raw(
                "PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH
            ),
            is_retriable_with_conflict,
        )

    def delete_pod(self, pod: Pod, grace_period_seconds: int | None = None) -> None:
        """DELETE with a uid precondition, so a same-named replacement pod is never deleted.

        Raises ApiError (not_found when already gone, conflict when the uid differs).
        """
        options: Json = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": pod.uid},
        }
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        self.rest.request_raw(
            "DELETE", pod_path(pod.namespace, pod.name), body=orjson.dumps(options)
        )

    def get_pod_raw(self, namespace: str, name: str) -> Json | None:
        """The pod's API JSON, or None if it does not exist."""
        try:
            result: Json = self.rest.get(pod_path(namespace, name))
        except ApiError as err:
            if err.not_found:
                return None
            raise
        return result

    def get_pod(self, namespace: str, name: str) -> Pod | None:
        raw = self.get_pod_raw(namespace, name)
        return parse_pod(raw) if raw is not None else None

    # --- leases -----------------------------------------------------------------------------

    # `within` bounds each lease call as a whole, retries included: leader election must know
    # by its renew deadline whether it still leads.

    def get_lease(self, namespace: str, name: str, *, within: float | None = None) -> Json:
        result: Json = self.rest.get(lease_path(namespace, name), within=within)
        return result

    def create_lease(self, namespace: str, lease: Json, *, within: float | None = None) -> Json:
        result: Json = self.rest.post(lease_path(namespace), lease, within=within)
        return result

    def update_lease(self, namespace: str, lease: Json, *, within: float | None = None) -> Json:
        """PUT of the whole object; its metadata.resourceVersion makes it conditional."""
        name = lease["metadata"]["name"]
        result: Json = self.rest.put(lease_path(namespace, name), lease, within=within)
        return result

    # --- volumes ----------------------------------------------------------------------------

    def update_persistent_volume(self, volume: Json) -> Json:
        """PUT of a whole PersistentVolume (VolumeBinding's claimRef); conditional on its
        resourceVersion, so a volume changed meanwhile is a conflict, never overwritten."""
        name = volume["metadata"]["name"]
        result: Json = self.rest.put(volume_path(name), volume)
        return result

    def update_persistent_volume_claim(self, claim: Json) -> Json:
        """PUT of a whole PersistentVolumeClaim (the selected-node annotation); conditional."""
        meta = claim["metadata"]
        result: Json = self.rest.put(claim_path(meta["namespace"], meta["name"]), claim)
        return result

    # --- delegated authentication and authorization (the secure port) ----------------------

    # --- resource claims (DynamicResources) --------------------------------------------------

    def reserve_resource_claim(
        self,
        claim: ResourceClaim,
        allocation: Mapping[str, Any] | None,
        consumer: Mapping[str, Any],
        allocation_timestamp: bool,
    ) -> ResourceClaim:
        return self._claims.reserve(claim, allocation, consumer, allocation_timestamp)

    def unreserve_resource_claim(self, claim: ResourceClaim, consumer_uid: str) -> None:
        self._claims.unreserve(claim, consumer_uid)

    def deallocate_resource_claim(self, claim: ResourceClaim) -> None:
        self._claims.deallocate(claim)

    def create_resource_claim(self, namespace: str, body: Mapping[str, Any]) -> ResourceClaim:
        return self._claims.create(namespace, body)

    def delete_resource_claim(self, claim: ResourceClaim) -> None:
        self._claims.delete(claim)

    def create_token_review(self, token: str, audiences: list[str] | None = None) -> Json:
        """POST a TokenReview; the returned object's status says who the token belongs to.

        Retried on server errors and refused connections as the delegating authenticator's
        webhook backoff; any remaining error is raised (the caller fails closed).
        """
        spec: Json = {"token": token}
        if audiences:
            spec["audiences"] = audiences
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        return self._review(TOKEN_REVIEWS, review)

    def create_subject_access_review(self, spec: Json) -> Json:
        """POST a SubjectAccessReview with `spec` (user, groups, uid, extra, attributes)."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": spec,
        }
        return self._review(SUBJECT_ACCESS_REVIEWS, review)

    def _review(self, path: str, review: Json) -> Json:
        body = orjson.dumps(review)
        result: Json = retry_on_error(
            lambda: self.rest.post(path, body, within=REVIEW_TIMEOUT),
            is_retriable,
            steps=5,
            initial=0.5,
            factor=1.5,
            jitter=0.2,
        )
        return result

    # --- events -----------------------------------------------------------------------------

    def create_event(self, namespace: str, event: Json | bytes) -> Json:
        result: Json = self.rest.post(events_path(namespace), event)
        return result

    def patch_event(self, namespace: str, name: str, patch: Json | bytes) -> Json:
        result: Json = self.rest.patch(events_path(namespace, name), patch, STRATEGIC_MERGE_PATCH)
        return result
