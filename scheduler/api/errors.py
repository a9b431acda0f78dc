"""Errors of API calls, as data any layer can classify without importing the client.

`ApiError` mirrors a metav1.Status failure (code, reason, message, details); its predicates
follow apimachinery's errors.IsNotFound & co.: the reason decides, and the HTTP code only when
the server gave no reason. `ApiConnectionError` is a transport failure with no response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# metav1.StatusReason values the scheduler and the client branch on.
REASON_UNKNOWN = ""
REASON_BAD_REQUEST = "BadRequest"
REASON_UNAUTHORIZED = "Unauthorized"
REASON_FORBIDDEN = "Forbidden"
REASON_NOT_FOUND = "NotFound"
REASON_ALREADY_EXISTS = "AlreadyExists"
REASON_CONFLICT = "Conflict"
REASON_GONE = "Gone"
REASON_EXPIRED = "Expired"
REASON_INVALID = "Invalid"
REASON_TOO_MANY_REQUESTS = "TooManyRequests"
REASON_INTERNAL_ERROR = "InternalError"
REASON_SERVICE_UNAVAILABLE = "ServiceUnavailable"
REASON_TIMEOUT = "Timeout"
REASON_SERVER_TIMEOUT = "ServerTimeout"
REASON_METHOD_NOT_ALLOWED = "MethodNotAllowed"

CAUSE_RESOURCE_VERSION_TOO_LARGE = "ResourceVersionTooLarge"
CAUSE_NAMESPACE_TERMINATING = "NamespaceTerminating"  # v1.NamespaceTerminatingCause

# The reason client-go assigns to a bare HTTP error (no Status body), by code.
_REASON_FOR_CODE = {
    400: REASON_BAD_REQUEST,
    401: REASON_UNAUTHORIZED,
    403: REASON_FORBIDDEN,
    404: REASON_NOT_FOUND,
    405: REASON_METHOD_NOT_ALLOWED,
    409: REASON_CONFLICT,
    410: REASON_GONE,
    422: REASON_INVALID,
    429: REASON_TOO_MANY_REQUESTS,
    500: REASON_INTERNAL_ERROR,
    503: REASON_SERVICE_UNAVAILABLE,
    504: REASON_TIMEOUT,
}
_KNOWN_REASONS = frozenset(_REASON_FOR_CODE.values()) | {
    REASON_ALREADY_EXISTS,
    REASON_EXPIRED,
    REASON_SERVER_TIMEOUT,
}


class ApiError(Exception):
    """The API server answered with a failure status."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason or 'Unknown'}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after

    @classmethod
    def from_response(cls, status: int, body: Any, retry_after: float | None = None) -> ApiError:
        """From the decoded response body: a metav1.Status, or anything else (then the code)."""
        if isinstance(body, Mapping) and body.get("kind") == "Status":
            details = body.get("details") or {}
            if retry_after is None and details.get("retryAfterSeconds"):
                retry_after = float(details["retryAfterSeconds"])
            return cls(
                int(body.get("code") or status),
                body.get("reason") or "",
                body.get("message") or "",
                details=details,
                retry_after=retry_after,
            )
        reason = _REASON_FOR_CODE.get(status, REASON_UNKNOWN)
        message = body if isinstance(body, str) and body else f"the server returned {status}"
        return cls(status, reason, message, retry_after=retry_after)

    @classmethod
    def from_status_object(cls, obj: Mapping[str, Any]) -> ApiError:
        """From the Status object of a watch ERROR event."""
        return cls.from_response(int(obj.get("code") or 500), obj)

    def _is(self, reason: str, code: int) -> bool:
        if self.reason == reason:
            return True
        return self.reason not in _KNOWN_REASONS and self.status == code

    @property
    def not_found(self) -> bool:
        return self._is(REASON_NOT_FOUND, 404)

    @property
    def already_exists(self) -> bool:
        return self.reason == REASON_ALREADY_EXISTS

    @property
    def conflict(self) -> bool:
        return self._is(REASON_CONFLICT, 409)

    @property
    def gone(self) -> bool:
        """410: the resourceVersion (or continue token) is too old; the reflector relists."""
        return self.reason == REASON_EXPIRED or self._is(REASON_GONE, 410)

    @property
    def invalid(self) -> bool:
        return self._is(REASON_INVALID, 422)

    @property
    def too_many_requests(self) -> bool:
        return self._is(REASON_TOO_MANY_REQUESTS, 429)

    @property
    def internal_error(self) -> bool:
        return self._is(REASON_INTERNAL_ERROR, 500)

    @property
    def service_unavailable(self) -> bool:
        return self._is(REASON_SERVICE_UNAVAILABLE, 503)

    @property
    def unauthorized(self) -> bool:
        return self._is(REASON_UNAUTHORIZED, 401)

    @property
    def forbidden(self) -> bool:
        return self._is(REASON_FORBIDDEN, 403)

    @property
    def namespace_terminating(self) -> bool:
        """A create refused because its namespace is being deleted (the NamespaceTerminating
        cause, apierrors.HasStatusCause), or the namespace is gone already (404 for it)."""
        causes = self.details.get("causes") or ()
        if any(c.get("reason") == CAUSE_NAMESPACE_TERMINATING for c in causes):
            return True
        return self.not_found and self.details.get("kind") == "namespaces"

    @property
    def resource_version_too_large(self) -> bool:
        """The server has not yet seen the requested resourceVersion (a list from cache)."""
        causes = self.details.get("causes") or ()
        if any(c.get("reason") == CAUSE_RESOURCE_VERSION_TOO_LARGE for c in causes):
            return True
        return self.status == 504 and "Too large resource version" in self.message


class ApiConnectionError(Exception):
    """No (complete) response: connection refused or reset, TLS failure, timeout.

    `request_sent` is False when the failure happened while connecting, so the server cannot
    have acted on the request and retrying any verb is safe.
    """

    def __init__(self, message: str, *, refused: bool, request_sent: bool) -> None:
        super().__init__(message)
        self.refused = refused
        self.request_sent = request_sent


def is_retriable(err: BaseException) -> bool:
    """kube-scheduler's util.Retriable: internal error, unavailable, or connection refused."""
    if isinstance(err, ApiError):
        return err.internal_error or err.service_unavailable
    return isinstance(err, ApiConnectionError) and err.refused


def is_retriable_with_conflict(err: BaseException) -> bool:
    """util.RetriableWithConflict: `is_retriable` or a conflict (used for status patches)."""
    return is_retriable(err) or (isinstance(err, ApiError) and err.conflict)
