"""Classifying API errors as apimachinery's errors package does."""

from __future__ import annotations

from scheduler.api.errors import (
    ApiConnectionError,
    ApiError,
    is_retriable,
    is_retriable_with_conflict,
)


def test_status_body_is_parsed() -> None:
    err = ApiError.from_response(
        404,
        {
            "kind": "Status",
            "status": "Failure",
            "code": 404,
            "reason": "NotFound",
            "message": 'pods "p" not found',
            "details": {"name": "p", "kind": "pods"},
        },
    )
    assert err.not_found
    assert not err.conflict
    assert err.message == 'pods "p" not found'
    assert err.details["name"] == "p"


def test_bare_http_errors_are_classified_by_code() -> None:
    assert ApiError.from_response(404, "404 page not found").not_found
    assert ApiError.from_response(409, None).conflict
    assert ApiError.from_response(410, None).gone
    assert ApiError.from_response(429, None).too_many_requests
    assert ApiError.from_response(503, None).service_unavailable


def test_reason_wins_over_code() -> None:
    exists = ApiError(409, "AlreadyExists", "exists")
    assert exists.already_exists
    assert not exists.conflict
    assert not ApiError(409, "Conflict", "").already_exists


def test_expired_and_gone_both_mean_relist() -> None:
    assert ApiError(410, "Expired", "too old resource version").gone
    assert ApiError(410, "Gone", "").gone


def test_resource_version_too_large() -> None:
    err = ApiError.from_response(
        504,
        {
            "kind": "Status",
            "code": 504,
            "reason": "Timeout",
            "message": "Too large resource version",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge"}], "retryAfterSeconds": 1},
        },
    )
    assert err.resource_version_too_large
    assert err.retry_after == 1.0


def test_scheduler_retriable_errors() -> None:
    assert is_retriable(ApiError(500, "InternalError", ""))
    assert is_retriable(ApiError(503, "ServiceUnavailable", ""))
    assert is_retriable(ApiConnectionError("x", refused=True, request_sent=False))
    assert not is_retriable(ApiConnectionError("x", refused=False, request_sent=True))
    assert not is_retriable(ApiError(409, "Conflict", ""))
    assert is_retriable_with_conflict(ApiError(409, "Conflict", ""))
    assert not is_retriable_with_conflict(ApiError(404, "NotFound", ""))


def test_namespace_terminating_is_the_cause_or_a_missing_namespace() -> None:
    cause = {"causes": [{"reason": "NamespaceTerminating"}]}
    assert ApiError(403, "Forbidden", "terminating", details=cause).namespace_terminating
    gone = ApiError(404, "NotFound", 'namespaces "x" not found', details={"kind": "namespaces"})
    assert gone.namespace_terminating
    pod_gone = ApiError(404, "NotFound", 'pods "p" not found', details={"kind": "pods"})
    assert not pod_gone.namespace_terminating
    assert not ApiError(403, "Forbidden", "no").namespace_terminating
