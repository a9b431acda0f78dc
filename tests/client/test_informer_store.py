"""The informer store: relist diffing, duplicates, ignored<->relevant transitions, failures."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from scheduler.api.parse import ParseError
from scheduler.client.informer import InformerStore, object_key
from tests.client.fake_apiserver import obj


@dataclass(frozen=True)
class Item:
    key: str
    rv: str
    color: str


def transform(raw: dict[str, Any]) -> Item | None:
    """Keeps only objects with a color; a color of "bad" cannot be parsed."""
    color = raw.get("color")
    if color is None:
        return None
    if color == "bad":
        raise ParseError("color: bad")
    return Item(object_key(raw), raw["metadata"]["resourceVersion"], color)


class Recorder:
    def __init__(self, store: InformerStore[Item]) -> None:
        self.events: list[tuple[str, ...]] = []
        store.add_handlers(self.add, self.update, self.delete)

    def add(self, item: Item) -> None:
        self.events.append(("add", item.key, item.rv))

    def update(self, old: Item, new: Item) -> None:
        self.events.append(("update", new.key, old.rv, new.rv))

    def delete(self, item: Item) -> None:
        self.events.append(("delete", item.key, item.rv))


@pytest.fixture
def store() -> InformerStore[Item]:
    return InformerStore(transform, "test")


def test_initial_list_adds_everything_and_marks_synced(store: InformerStore[Item]) -> None:
    rec = Recorder(store)
    assert not store.synced.is_set()
    store.replace([obj("a", "1", color="red"), obj("b", "2", color="blue")], "2")
    assert rec.events == [("add", "ns/a", "1"), ("add", "ns/b", "2")]
    assert store.synced.is_set()
    assert store.get("ns/a") == Item("ns/a", "1", "red")
    assert sorted(i.key for i in store.list()) == ["ns/a", "ns/b"]


def test_relist_delivers_only_the_difference(store: InformerStore[Item]) -> None:
    store.replace(
        [
            obj("same", "1", color="red"),
            obj("changed", "2", color="red"),
            obj("gone", "3", color="red"),
        ],
        "3",
    )
    rec = Recorder(store)
    store.replace(
        [
            obj("same", "1", color="red"),
            obj("changed", "7", color="blue"),
            obj("new", "8", color="red"),
        ],
        "8",
    )
    # Adds and updates first, then deletes with the last known object, as DeltaFIFO.Replace.
    assert rec.events == [
        ("update", "ns/changed", "2", "7"),
        ("add", "ns/new", "8"),
        ("delete", "ns/gone", "3"),
    ]
    assert store.get("ns/gone") is None


def test_watch_events_in_order_and_duplicates_dropped(store: InformerStore[Item]) -> None:
    store.replace([], "1")
    rec = Recorder(store)
    store.apply("ADDED", obj("a", "2", color="red"))
    store.apply("ADDED", obj("a", "2", color="red"))  # replayed after a reconnect
    store.apply("MODIFIED", obj("a", "3", color="blue"))
    store.apply("MODIFIED", obj("a", "3", color="blue"))
    store.apply("DELETED", obj("a", "4", color="blue"))
    store.apply("DELETED", obj("a", "4", color="blue"))
    assert rec.events == [
        ("add", "ns/a", "2"),
        ("update", "ns/a", "2", "3"),
        ("delete", "ns/a", "4"),  # the final state from the event
    ]


def test_ignored_objects_become_adds_when_relevant_and_deletes_when_not(
    store: InformerStore[Item],
) -> None:
    store.replace([obj("a", "1")], "1")
    rec = Recorder(store)
    assert store.get("ns/a") is None
    store.apply("MODIFIED", obj("a", "2"))  # still ignored: nothing
    store.apply("MODIFIED", obj("a", "3", color="red"))
    store.apply("MODIFIED", obj("a", "4"))
    store.apply("DELETED", obj("a", "5"))  # already gone from our point of view
    assert rec.events == [("add", "ns/a", "3"), ("delete", "ns/a", "3")]


def test_relist_applies_the_same_transitions(store: InformerStore[Item]) -> None:
    store.replace([obj("a", "1"), obj("b", "1", color="red")], "1")
    rec = Recorder(store)
    store.replace([obj("a", "2", color="red"), obj("b", "2")], "2")
    assert rec.events == [("add", "ns/a", "2"), ("delete", "ns/b", "1")]


def test_unparseable_objects_are_skipped_and_the_stream_goes_on(
    store: InformerStore[Item],
) -> None:
    store.replace([obj("bad", "1", color="bad"), obj("good", "1", color="red")], "1")
    rec = Recorder(store)
    store.apply("ADDED", obj("x", "2", color="bad"))
    store.apply("MODIFIED", obj("good", "3", color="bad"))  # keeps the last good version
    store.apply("ADDED", obj("y", "4", color="red"))
    assert rec.events == [("add", "ns/y", "4")]
    assert store.transform_errors == 3
    assert store.get("ns/good") == Item("ns/good", "1", "red")
    assert store.get("ns/bad") is None


def test_why_an_object_was_rejected_is_kept_until_it_is_fixed_or_gone(
    store: InformerStore[Item],
) -> None:
    store.replace([obj("bad", "1", color="bad"), obj("gone", "1", color="bad")], "1")
    assert store.rejected("ns/bad") and store.rejected("ns/gone")
    assert store.rejected("ns/never") == ""
    store.replace([obj("bad", "1", color="bad")], "2")  # "gone" left the list
    assert store.rejected("ns/gone") == ""
    store.apply("MODIFIED", obj("bad", "3", color="red"))
    assert store.rejected("ns/bad") == "" and store.get("ns/bad") is not None
    store.apply("MODIFIED", obj("bad", "4", color="bad"))
    assert store.rejected("ns/bad")
    store.apply("DELETED", obj("bad", "5", color="bad"))
    assert store.rejected("ns/bad") == ""


def test_a_deleted_object_whose_final_state_is_unparseable_is_delivered_as_last_known(
    store: InformerStore[Item],
) -> None:
    store.replace([obj("a", "1", color="red")], "1")
    rec = Recorder(store)
    store.apply("DELETED", obj("a", "2", color="bad"))
    assert rec.events == [("delete", "ns/a", "1")]


def test_a_failing_handler_does_not_stop_others_or_later_events(
    store: InformerStore[Item],
) -> None:
    def explode(item: Item) -> None:
        raise RuntimeError("handler bug")

    store.add_handlers(on_add=explode)
    rec = Recorder(store)
    store.replace([], "1")
    store.apply("ADDED", obj("a", "2", color="red"))
    store.apply("ADDED", obj("b", "3", color="red"))
    assert rec.events == [("add", "ns/a", "2"), ("add", "ns/b", "3")]
    assert store.handler_errors == 2


def test_handlers_see_the_store_already_updated(store: InformerStore[Item]) -> None:
    seen: list[Item | None] = []
    store.add_handlers(on_update=lambda old, new: seen.append(store.get(new.key)))
    store.replace([obj("a", "1", color="red")], "1")
    store.apply("MODIFIED", obj("a", "2", color="blue"))
    assert seen == [Item("ns/a", "2", "blue")]


def test_cluster_scoped_keys_are_bare_names() -> None:
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert object_key({"metadata": {"name": "p", "namespace": "default"}}) == "default/p"


def test_a_list_that_fails_part_way_deletes_nothing(store: InformerStore[Item]) -> None:
    store.replace([obj("a", "1", color="red"), obj("b", "1", color="red")], "1")
    rec = Recorder(store)

    def pages() -> Iterator[dict[str, Any]]:
        yield obj("a", "2", color="blue")
        raise ConnectionError("list interrupted")

    with pytest.raises(ConnectionError):
        store.replace(pages(), "2")
    assert rec.events == [("update", "ns/a", "1", "2")]
    assert sorted(i.key for i in store.list()) == ["ns/a", "ns/b"]
