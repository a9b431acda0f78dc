"""Delegated authentication and authorization of the secure port, as kube-scheduler's.

kube-scheduler builds its handler chain from k8s.io/apiserver's DelegatingAuthenticationOptions
and DelegatingAuthorizationOptions; this module makes the same decisions:

Authentication (authenticatorfactory.DelegatingAuthenticatorConfig), first match wins:
  1. a client certificate verified against --client-ca-file: the user is its CN, the groups
     its O values (the TLS layer has verified it; see scheduler.cmd.tls);
  2. `Authorization: Bearer <token>`: a TokenReview; answers are cached for
     --authentication-token-webhook-cache-ttl (10s) keyed by an HMAC of the token, for
     authenticated and unauthenticated answers alike; review errors are not cached;
  3. anonymous (enabled, as kube-scheduler's delegated authentication): system:anonymous in
     system:unauthenticated.
  A rejected token, or an error while reviewing one, is 401 Unauthorized (union.NewFailOnError:
  a presented credential that fails never falls through to anonymous). Authenticated users get
  the group system:authenticated (AuthenticatedGroupAdder).

Authorization (DelegatingAuthorizationOptions.toAuthorizer), a union in this order:
  1. always-allow groups: system:masters;
  2. --authorization-always-allow-paths (default /healthz,/readyz,/livez; "/x/*" is a prefix);
  3. a SubjectAccessReview (nonResourceAttributes path and verb = the lower-cased HTTP method),
     allowed answers cached --authorization-webhook-cache-authorized-ttl (10s), others
     --authorization-webhook-cache-unauthorized-ttl (10s); errors are not cached.
  Not allowed is 403 Forbidden with apiserver's message; a review error is 500 (the request is
  never served). Authentication runs for every path, so a bad token is 401 even on /healthz.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import orjson
import structlog

from scheduler.api.json_types import Json
from scheduler.clock import Clock, RealClock

log = structlog.get_logger(__name__)

ANONYMOUS_USER = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"
PRIVILEGED_GROUP = "system:masters"
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
DEFAULT_CACHE_TTL = 10.0
WEBHOOK_AUTHORIZER = "kubernetes.io/webhook"
CACHE_SIZE = 8192  # the webhook authorizer's LRU size; the token cache is bounded the same way

V = TypeVar("V")


class Reviews(Protocol):
    """The API calls delegation needs (scheduler.client.api.KubeApi implements them)."""

    def create_token_review(self, token: str, audiences: list[str] | None = None) -> Json: ...

    def create_subject_access_review(self, spec: Json) -> Json: ...


class AuthenticationError(Exception):
    """A presented credential was rejected or could not be reviewed: 401."""


class AuthorizationError(Exception):
    """The SubjectAccessReview could not be made: 500, never served."""


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))


class TTLCache(Generic[V]):
    """A bounded map whose entries expire `ttl` seconds after they were set; thread-safe."""

    def __init__(self, clock: Clock, size: int = CACHE_SIZE) -> None:
        self._clock = clock
        self._size = size
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[bool, V | None]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            if self._clock.monotonic() >= entry[0]:
                del self._entries[key]
                return False, None
            self._entries.move_to_end(key)
            return True, entry[1]

    def set(self, key: str, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._entries[key] = (self._clock.monotonic() + ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def _user_from_review(user: Mapping[str, Any]) -> UserInfo:
    extra = {str(k): tuple(str(x) for x in v or ()) for k, v in (user.get("extra") or {}).items()}
    return UserInfo(
        name=str(user.get("username") or ""),
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=extra,
    )


class TokenAuthenticator:
    """TokenReview-backed bearer tokens with cache.New(tokenAuth, false, ttl, ttl)'s caching."""

    def __init__(
        self, reviews: Reviews, *, ttl: float = DEFAULT_CACHE_TTL, clock: Clock | None = None
    ) -> None:
        self._reviews = reviews
        self._ttl = ttl
        self._cache: TTLCache[UserInfo | None] = TTLCache(clock or RealClock())
        self._hmac_key = os.urandom(32)  # tokens are never kept in memory as such

    def _key(self, token: str) -> str:
        return hmac.new(self._hmac_key, token.encode(), hashlib.sha256).hexdigest()

    def authenticate(self, token: str) -> UserInfo | None:
        """The token's user, or None if the API server says it is not authenticated.

        Raises AuthenticationError when the review failed (not cached: the next request asks
        again) or answered with status.error.
        """
        key = self._key(token)
        hit, cached = self._cache.get(key)
        if hit:
            return cached
        try:
            review = self._reviews.create_token_review(token)
        except Exception as err:
            raise AuthenticationError(f"TokenReview failed: {err}") from err
        status = review.get("status") or {}
        if not status.get("authenticated"):
            if status.get("error"):
                raise AuthenticationError(str(status["error"]))
            self._cache.set(key, None, self._ttl)
            return None
        user = _user_from_review(status.get("user") or {})
        self._cache.set(key, user, self._ttl)
        return user


def _bearer_token(authorization: str | None) -> str | None:
    """bearertoken.Authenticator: "Bearer <token>" (scheme case-insensitive), else no token."""
    if not authorization:
        return None
    parts = authorization.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def _user_from_cert(cert: Mapping[str, Any]) -> UserInfo | None:
    """x509.CommonNameUserConversion: CN is the user, each O a group (ssl.getpeercert())."""
    name = ""
    groups: list[str] = []
    for rdn in cert.get("subject") or ():
        for attr, value in rdn:
            if attr == "commonName":
                name = value
            elif attr == "organizationName":
                groups.append(value)
    return UserInfo(name, groups=tuple(groups)) if name else None


class Authenticator:
    """The delegated authenticator union: client certificate, bearer token, anonymous."""

    def __init__(self, tokens: TokenAuthenticator | None, *, anonymous: bool = True) -> None:
        self._tokens = tokens
        self._anonymous = anonymous

    def authenticate(
        self, authorization: str | None, peer_cert: Mapping[str, Any] | None = None
    ) -> UserInfo:
        """Raises AuthenticationError for 401."""
        user: UserInfo | None = None
        if peer_cert:
            user = _user_from_cert(peer_cert)
            if user is None:
                raise AuthenticationError("client certificate has no common name")
        if user is None:
            token = _bearer_token(authorization)
            if token is not None:
                if self._tokens is None:
                    raise AuthenticationError("bearer tokens cannot be reviewed")
                user = self._tokens.authenticate(token)
                if user is None:
                    raise AuthenticationError("invalid bearer token")
        if user is None:
            if not self._anonymous:
                raise AuthenticationError("no credentials")
            return ANONYMOUS
        if AUTHENTICATED_GROUP not in user.groups:
            user = UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)
        return user


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class PathMatcher:
    """path.NewAuthorizer: exact paths, and prefixes written "/prefix*"."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for raw in paths:
            path = raw.strip().lstrip("/")
            if not raw.strip():
                continue
            if "*" in path[:-1]:
                raise ValueError(f"only trailing * allowed in {raw!r}")
            if path.endswith("*"):
                self.prefixes.append(path[:-1])
            else:
                self.exact.add(path)

    def matches(self, path: str) -> bool:
        trimmed = path.lstrip("/")
        return trimmed in self.exact or any(trimmed.startswith(p) for p in self.prefixes)


class Authorizer:
    """The delegated authorizer union: privileged groups, always-allowed paths, then a
    SubjectAccessReview with the webhook authorizer's cache."""

    def __init__(
        self,
        reviews: Reviews | None,
        *,
        always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS,
        always_allow_groups: Sequence[str] = (PRIVILEGED_GROUP,),
        allowed_ttl: float = DEFAULT_CACHE_TTL,
        denied_ttl: float = DEFAULT_CACHE_TTL,
        clock: Clock | None = None,
    ) -> None:
        self._reviews = reviews
        self._paths = PathMatcher(always_allow_paths)
        self._groups = frozenset(always_allow_groups)
        self._allowed_ttl = allowed_ttl
        self._denied_ttl = denied_ttl
        self._cache: TTLCache[Decision] = TTLCache(clock or RealClock())

    def authorize(self, user: UserInfo, verb: str, path: str) -> Decision:
        """Raises AuthorizationError when the review failed (500: fail closed)."""
        if self._groups.intersection(user.groups):
            return Decision(True)
        if self._paths.matches(path):
            return Decision(True)
        if self._reviews is None:
            # kube's "No authorization-kubeconfig provided": everything else is forbidden.
            return Decision(False)
        spec: Json = {
            "nonResourceAttributes": {"path": path, "verb": verb},
            "user": user.name,
            "groups": list(user.groups),
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS).decode()
        hit, cached = self._cache.get(key)
        if hit and cached is not None:
            return cached
        try:
            review = self._reviews.create_subject_access_review(spec)
        except Exception as err:
            raise AuthorizationError(f"SubjectAccessReview failed: {err}") from err
        status = review.get("status") or {}
        reason = str(status.get("reason") or "")
        if status.get("allowed") and status.get("denied"):
            raise AuthorizationError(
                "webhook subject access review returned both allow and deny response"
            )
        if not status.get("allowed") and not status.get("denied") and reason:
            # No opinion: the union authorizer names the authorizer that gave the reason.
            reason = f"{WEBHOOK_AUTHORIZER}: {reason}"
        decision = Decision(bool(status.get("allowed")), reason)
        self._cache.set(key, decision, self._allowed_ttl if decision.allowed else self._denied_ttl)
        return decision


@dataclass(frozen=True)
class Refusal:
    """The response that replaces the handler's: status code, body and content type."""

    code: int
    body: bytes
    content_type: str


def _status(code: int, reason: str, message: str, details: bool) -> bytes:
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        status["details"] = {}
    status["code"] = code
    return orjson.dumps(status)


UNAUTHORIZED = Refusal(401, _status(401, "Unauthorized", "Unauthorized", False), "application/json")


def _go_quote(text: str) -> str:
    """Go's %q for the common (printable) case."""
    return orjson.dumps(text).decode()


class RequestGuard:
    """WithAuthentication then WithAuthorization for one request of the secure port."""

    def __init__(self, authenticator: Authenticator, authorizer: Authorizer) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer

    def check(
        self,
        method: str,
        path: str,
        authorization: str | None,
        peer_cert: Mapping[str, Any] | None = None,
        *,
        request_uri: str = "",
    ) -> Refusal | None:
        """None when the request may be served, else the refusal to send instead."""
        try:
            user = self.authenticator.authenticate(authorization, peer_cert)
        except AuthenticationError as err:
            log.info("unable to authenticate the request", path=path, error=str(err))
            return UNAUTHORIZED
        verb = method.lower()
        try:
            decision = self.authorizer.authorize(user, verb, path)
        except AuthorizationError as err:
            log.error(
                "authorization error, request refused (fail closed)",
                user=user.name,
                verb=verb,
                path=path,
                error=str(err),
            )
            body = f"Internal Server Error: {_go_quote(request_uri or path)}: {err}\n"
            return Refusal(500, body.encode(), "text/plain; charset=utf-8")
        if decision.allowed:
            return None
        message = f"User {_go_quote(user.name)} cannot {verb} path {_go_quote(path)}"
        if decision.reason:
            message += f": {decision.reason}"
        log.debug("forbidden", user=user.name, verb=verb, path=path, reason=decision.reason)
        return Refusal(
            403, _status(403, "Forbidden", f"forbidden: {message}", True), "application/json"
        )
