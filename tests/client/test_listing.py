"""Paged, read-only lists for `kube-pysched snapshot`: continue tokens followed, items given
their kind, a collection not served skipped, a forbidden one an error."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.errors import ApiError
from scheduler.client.listing import ListedKind, list_all

PODS = ListedKind("Pod", "v1", "/api/v1/pods")
GROUPS = ListedKind("PodGroup", "scheduling.x-k8s.io/v1alpha1", "/apis/x/podgroups")
NODES = ListedKind("Node", "v1", "/api/v1/nodes")


class PagedRest:
    """Answers GETs from fixed pages; records each query."""

    def __init__(self, pages: dict[str, list[list[str]]], errors: dict[str, ApiError]) -> None:
        self.pages = pages
        self.errors = errors
        self.queries: list[tuple[str, dict[str, Any]]] = []

    def get(self, path: str, query: dict[str, Any]) -> Any:
        self.queries.append((path, dict(query)))
        if path in self.errors:
            raise self.errors[path]
        index = int(query.get("continue", 0))
        pages = self.pages[path]
        token = str(index + 1) if index + 1 < len(pages) else ""
        return {
            "metadata": {"continue": token},
            "items": [{"metadata": {"name": n}} for n in pages[index]],
        }


def test_pages_are_followed_and_items_get_their_kind() -> None:
    rest = PagedRest({PODS.path: [["a", "b"], ["c"]]}, {})
    seen: list[int] = []
    objects = list_all(rest, (PODS,), page_size=2, on_page=lambda _k, n: seen.append(n))  # type: ignore[arg-type]
    assert [o["metadata"]["name"] for o in objects] == ["a", "b", "c"]
    assert {(o["kind"], o["apiVersion"]) for o in objects} == {("Pod", "v1")}
    assert rest.queries == [(PODS.path, {"limit": 2}), (PODS.path, {"limit": 2, "continue": "1"})]
    assert seen == [2, 3]


def test_a_collection_not_served_is_skipped_and_a_forbidden_one_fails() -> None:
    not_found = ApiError(404, "NotFound", "the server could not find the requested resource")
    rest = PagedRest({NODES.path: [["n"]]}, {GROUPS.path: not_found})
    skipped: list[ListedKind] = []
    objects = list_all(rest, (GROUPS, NODES), on_skipped=skipped.append)  # type: ignore[arg-type]
    assert skipped == [GROUPS]
    assert [o["kind"] for o in objects] == ["Node"]
    rest.errors[NODES.path] = ApiError(403, "Forbidden", "nodes is forbidden")
    with pytest.raises(ApiError, match="403"):
        list_all(rest, (NODES,))  # type: ignore[arg-type]
