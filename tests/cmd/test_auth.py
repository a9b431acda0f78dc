"""The secure port's delegated authentication and authorization decisions (scheduler.cmd.auth)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler.api.errors import ApiConnectionError, ApiError
from scheduler.api.json_types import Json
from scheduler.clock import FakeClock
from scheduler.cmd.auth import (
    ANONYMOUS,
    AuthenticationError,
    Authenticator,
    AuthorizationError,
    Authorizer,
    RequestGuard,
    TokenAuthenticator,
    UserInfo,
)

ALICE = {
    "username": "system:serviceaccount:monitoring:prometheus",
    "uid": "u-1",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:monitoring"],
    "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
}


class FakeReviews:
    """Answers TokenReviews from `tokens` and SubjectAccessReviews from `allowed`."""

    def __init__(self) -> None:
        self.tokens: dict[str, Json] = {"good": ALICE}
        self.allowed: set[tuple[str, str, str]] = set()
        self.denied_reason = ""
        self.explicit_deny = False
        self.token_calls: list[str] = []
        self.sar_calls: list[Json] = []
        self.error: Exception | None = None
        self.token_status_error = ""

    def create_token_review(self, token: str, audiences: list[str] | None = None) -> Json:
        self.token_calls.append(token)
        if self.error is not None:
            raise self.error
        if self.token_status_error:
            return {"status": {"authenticated": False, "error": self.token_status_error}}
        user = self.tokens.get(token)
        if user is None:
            return {"status": {"authenticated": False}}
        return {"status": {"authenticated": True, "user": user}}

    def create_subject_access_review(self, spec: Json) -> Json:
        self.sar_calls.append(spec)
        if self.error is not None:
            raise self.error
        attrs = spec["nonResourceAttributes"]
        if (spec["user"], attrs["verb"], attrs["path"]) in self.allowed:
            return {"status": {"allowed": True}}
        status: dict[str, Any] = {"allowed": False, "reason": self.denied_reason}
        if self.explicit_deny:
            status["denied"] = True
        return {"status": status}


@pytest.fixture
def reviews() -> FakeReviews:
    return FakeReviews()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def guard(reviews: FakeReviews, clock: FakeClock, **authz: Any) -> RequestGuard:
    return RequestGuard(
        Authenticator(TokenAuthenticator(reviews, ttl=10.0, clock=clock)),
        Authorizer(reviews, clock=clock, **authz),
    )


# --- authentication ---------------------------------------------------------------------------


def test_token_review_user_gets_the_authenticated_group(
    reviews: FakeReviews, clock: FakeClock
) -> None:
    user = Authenticator(TokenAuthenticator(reviews, clock=clock)).authenticate("Bearer good")
    assert user == UserInfo(
        ALICE["username"],
        "u-1",
        (*ALICE["groups"], "system:authenticated"),
        {"authentication.kubernetes.io/pod-name": ("prom-0",)},
    )


def test_token_answers_are_cached_for_the_ttl(reviews: FakeReviews, clock: FakeClock) -> None:
    tokens = TokenAuthenticator(reviews, ttl=10.0, clock=clock)
    assert tokens.authenticate("good") is not None
    clock.step(9.9)
    assert tokens.authenticate("good") is not None
    assert reviews.token_calls == ["good"]  # a hit
    clock.step(0.1)
    assert tokens.authenticate("good") is not None
    assert reviews.token_calls == ["good", "good"]  # expired: a miss


def test_rejected_tokens_are_cached_too(reviews: FakeReviews, clock: FakeClock) -> None:
    tokens = TokenAuthenticator(reviews, ttl=10.0, clock=clock)
    assert tokens.authenticate("bad") is None
    assert tokens.authenticate("bad") is None
    assert reviews.token_calls == ["bad"]
    clock.step(10)
    assert tokens.authenticate("bad") is None
    assert reviews.token_calls == ["bad", "bad"]


def test_review_errors_fail_and_are_not_cached(reviews: FakeReviews, clock: FakeClock) -> None:
    tokens = TokenAuthenticator(reviews, ttl=10.0, clock=clock)
    reviews.error = ApiConnectionError("connection refused", refused=True, request_sent=False)
    with pytest.raises(AuthenticationError, match="TokenReview failed"):
        tokens.authenticate("good")
    reviews.error = None
    assert tokens.authenticate("good") is not None
    assert reviews.token_calls == ["good", "good"]


def test_status_error_is_an_error_not_cached(reviews: FakeReviews, clock: FakeClock) -> None:
    tokens = TokenAuthenticator(reviews, ttl=10.0, clock=clock)
    reviews.token_status_error = "webhook down"
    with pytest.raises(AuthenticationError, match="webhook down"):
        tokens.authenticate("good")
    reviews.token_status_error = ""
    assert tokens.authenticate("good") is not None


def test_zero_ttl_disables_the_cache(reviews: FakeReviews, clock: FakeClock) -> None:
    tokens = TokenAuthenticator(reviews, ttl=0, clock=clock)
    tokens.authenticate("good")
    tokens.authenticate("good")
    assert reviews.token_calls == ["good", "good"]


@pytest.mark.parametrize("header", [None, "", "Basic Zm9vOmJhcg==", "Bearer", "Bearer "])
def test_no_bearer_token_is_anonymous(
    reviews: FakeReviews, clock: FakeClock, header: str | None
) -> None:
    authn = Authenticator(TokenAuthenticator(reviews, clock=clock))
    assert authn.authenticate(header) == ANONYMOUS
    assert reviews.token_calls == []


def test_a_rejected_token_never_falls_through_to_anonymous(
    reviews: FakeReviews, clock: FakeClock
) -> None:
    authn = Authenticator(TokenAuthenticator(reviews, clock=clock))
    with pytest.raises(AuthenticationError):
        authn.authenticate("bearer bad")  # the scheme is case-insensitive


def test_client_certificate_wins_over_the_token(reviews: FakeReviews, clock: FakeClock) -> None:
    cert = {
        "subject": (
            (("organizationName", "system:monitoring"),),
            (("organizationName", "ops"),),
            (("commonName", "scraper"),),
        )
    }
    user = Authenticator(TokenAuthenticator(reviews, clock=clock)).authenticate("Bearer x", cert)
    assert user == UserInfo("scraper", groups=("system:monitoring", "ops", "system:authenticated"))
    assert reviews.token_calls == []


# --- authorization ----------------------------------------------------------------------------


def prom(reviews: FakeReviews, clock: FakeClock) -> UserInfo:
    user = Authenticator(TokenAuthenticator(reviews, clock=clock)).authenticate("Bearer good")
    return user


def test_subject_access_review_spec(reviews: FakeReviews, clock: FakeClock) -> None:
    user = prom(reviews, clock)
    reviews.allowed.add((user.name, "get", "/metrics"))
    assert Authorizer(reviews, clock=clock).authorize(user, "get", "/metrics").allowed
    assert reviews.sar_calls == [
        {
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
            "user": ALICE["username"],
            "groups": [*ALICE["groups"], "system:authenticated"],
            "uid": "u-1",
            "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]},
        }
    ]


def test_allowed_and_denied_answers_have_their_own_ttl(
    reviews: FakeReviews, clock: FakeClock
) -> None:
    user = prom(reviews, clock)
    reviews.allowed.add((user.name, "get", "/metrics"))
    authz = Authorizer(reviews, clock=clock, allowed_ttl=10.0, denied_ttl=3.0)
    assert authz.authorize(user, "get", "/metrics").allowed
    assert not authz.authorize(user, "get", "/configz").allowed
    clock.step(2.9)
    assert authz.authorize(user, "get", "/metrics").allowed
    assert not authz.authorize(user, "get", "/configz").allowed
    assert len(reviews.sar_calls) == 2  # both hits
    clock.step(0.1)  # the denial expired, the allowance did not
    reviews.allowed.add((user.name, "get", "/configz"))
    assert authz.authorize(user, "get", "/configz").allowed
    assert authz.authorize(user, "get", "/metrics").allowed
    assert len(reviews.sar_calls) == 3
    clock.step(7.0)  # 10s after the first allowance: a miss
    assert authz.authorize(user, "get", "/metrics").allowed
    assert len(reviews.sar_calls) == 4


def test_cache_key_is_the_whole_request(reviews: FakeReviews, clock: FakeClock) -> None:
    user = prom(reviews, clock)
    authz = Authorizer(reviews, clock=clock)
    authz.authorize(user, "get", "/metrics")
    authz.authorize(user, "head", "/metrics")
    authz.authorize(ANONYMOUS, "get", "/metrics")
    assert len(reviews.sar_calls) == 3


def test_sar_errors_fail_closed_and_are_not_cached(reviews: FakeReviews, clock: FakeClock) -> None:
    user = prom(reviews, clock)
    reviews.allowed.add((user.name, "get", "/metrics"))
    authz = Authorizer(reviews, clock=clock)
    reviews.error = ApiError(503, "ServiceUnavailable", "etcd is down")
    with pytest.raises(AuthorizationError, match="SubjectAccessReview failed"):
        authz.authorize(user, "get", "/metrics")
    reviews.error = None
    assert authz.authorize(user, "get", "/metrics").allowed
    assert len(reviews.sar_calls) == 2


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_always_allowed_paths_need_no_review(
    reviews: FakeReviews, clock: FakeClock, path: str
) -> None:
    reviews.error = RuntimeError("must not be called")
    assert Authorizer(reviews, clock=clock).authorize(ANONYMOUS, "get", path).allowed
    assert reviews.sar_calls == []


def test_always_allowed_path_prefixes(reviews: FakeReviews, clock: FakeClock) -> None:
    authz = Authorizer(reviews, clock=clock, always_allow_paths=["/debug/*", "/metrics"])
    assert authz.authorize(ANONYMOUS, "get", "/debug/pprof").allowed
    assert authz.authorize(ANONYMOUS, "get", "/metrics").allowed
    assert not authz.authorize(ANONYMOUS, "get", "/healthz").allowed  # no longer in the list
    assert not authz.authorize(ANONYMOUS, "get", "/metrics/resources").allowed


def test_system_masters_is_always_allowed(reviews: FakeReviews, clock: FakeClock) -> None:
    admin = UserInfo("admin", groups=("system:masters", "system:authenticated"))
    assert Authorizer(reviews, clock=clock).authorize(admin, "get", "/configz").allowed
    assert reviews.sar_calls == []


def test_without_a_review_client_everything_else_is_forbidden(clock: FakeClock) -> None:
    authz = Authorizer(None, clock=clock)
    assert authz.authorize(ANONYMOUS, "get", "/healthz").allowed
    assert not authz.authorize(ANONYMOUS, "get", "/metrics").allowed


# --- the request guard: status codes and bodies as kube-scheduler's -------------------------


def body(refusal: Any) -> Any:
    return json.loads(refusal.body)


def test_health_endpoints_need_no_credentials(reviews: FakeReviews, clock: FakeClock) -> None:
    g = guard(reviews, clock)
    for path in ("/healthz", "/readyz", "/livez"):
        assert g.check("GET", path, None) is None
    assert reviews.sar_calls == [] and reviews.token_calls == []


def test_anonymous_metrics_is_403_as_kube_scheduler(reviews: FakeReviews, clock: FakeClock) -> None:
    refusal = guard(reviews, clock).check("GET", "/metrics", None)
    assert refusal is not None and refusal.code == 403
    assert body(refusal) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }
    assert reviews.sar_calls[0]["groups"] == ["system:unauthenticated"]


def test_denial_reasons_are_appended(reviews: FakeReviews, clock: FakeClock) -> None:
    reviews.denied_reason = "no RBAC policy matched"
    refusal = guard(reviews, clock).check("GET", "/metrics", "Bearer good")
    assert refusal is not None and refusal.code == 403
    assert body(refusal)["message"] == (
        f'forbidden: User "{ALICE["username"]}" cannot get path "/metrics": '
        "kubernetes.io/webhook: no RBAC policy matched"
    )
    reviews.explicit_deny = True
    refusal = guard(reviews, clock).check("GET", "/metrics", "Bearer good")
    assert refusal is not None
    assert body(refusal)["message"].endswith('"/metrics": no RBAC policy matched')


def test_bad_token_is_401_even_on_health_paths(reviews: FakeReviews, clock: FakeClock) -> None:
    for path in ("/metrics", "/healthz"):
        refusal = guard(reviews, clock).check("GET", path, "Bearer bad")
        assert refusal is not None and refusal.code == 401
        assert body(refusal) == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }


def test_token_review_error_is_401(reviews: FakeReviews, clock: FakeClock) -> None:
    reviews.error = ApiError(500, "InternalError", "boom")
    refusal = guard(reviews, clock).check("GET", "/metrics", "Bearer good")
    assert refusal is not None and refusal.code == 401


def test_sar_error_is_500_never_served(reviews: FakeReviews, clock: FakeClock) -> None:
    g = guard(reviews, clock)
    assert g.check("GET", "/healthz", "Bearer good") is None  # the token review is cached now
    reviews.error = ApiConnectionError("connection refused", refused=True, request_sent=False)
    refusal = g.check("GET", "/metrics", "Bearer good", request_uri="/metrics?x=1")
    assert refusal is not None and refusal.code == 500
    assert refusal.body.decode().startswith('Internal Server Error: "/metrics?x=1": ')


def test_allowed_user_is_served_and_verb_is_the_method(
    reviews: FakeReviews, clock: FakeClock
) -> None:
    g = guard(reviews, clock)
    reviews.allowed.add((ALICE["username"], "get", "/metrics"))
    assert g.check("GET", "/metrics", "Bearer good") is None
    refusal = g.check("HEAD", "/metrics", "Bearer good")
    assert refusal is not None and "cannot head path" in body(refusal)["message"]
