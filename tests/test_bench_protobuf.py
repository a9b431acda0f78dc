"""The protobuf encoding of the recorder's Events (scheduler/client/protobuf.py), read back with a
small decoder of the wire format (field numbers from k8s.io/api's generated.proto)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from e2e.bench.protobuf import EncodeError, encode_event


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, varint or length-delimited payload), in wire order."""
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            out.append((number, value))
        elif wire == 2:
            size, at = _varint(data, at)
            out.append((number, data[at : at + size]))
            at += size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return out


def as_dict(data: bytes) -> dict[int, Any]:
    found = dict(fields(data))
    assert len(found) == len(fields(data)), "a field written twice"
    return found


def event(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "p.187a", "namespace": "ns"},
        "eventTime": "2026-11-29T03:04:05.123456Z",
        "reportingController": "kube-pysched",
        "reportingInstance": "kube-pysched-a",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "regarding": {
            "kind": "Pod",
            "namespace": "ns",
            "name": "p",
            "uid": "u-1",
            "apiVersion": "v1",
        },
        "note": "0/3 nodes are available: Grüße",
        "type": "Warning",
    }
    body.update(extra)
    return body


def unknown_envelope(data: bytes) -> tuple[dict[int, Any], dict[int, Any]]:
    """(typeMeta, the Event) of the runtime.Unknown behind the magic."""
    assert data[:4] == b"k8s\x00"
    unknown = as_dict(data[4:])
    assert set(unknown) == {1, 2}
    return as_dict(unknown[1]), as_dict(unknown[2])


def test_an_event_is_a_runtime_unknown_with_every_field_under_its_number() -> None:
    type_meta, ev = unknown_envelope(encode_event(event()))
    assert type_meta == {1: b"events.k8s.io/v1", 2: b"Event"}
    assert as_dict(ev[1]) == {1: b"p.187a", 3: b"ns"}
    seconds = int(datetime(2026, 11, 29, 3, 4, 5, tzinfo=UTC).timestamp())
    assert as_dict(ev[2]) == {1: seconds, 2: 123456000}
    assert ev[4] == b"kube-pysched" and ev[5] == b"kube-pysched-a"
    assert ev[6] == b"Scheduling" and ev[7] == b"FailedScheduling"
    assert as_dict(ev[8]) == {1: b"Pod", 2: b"ns", 3: b"p", 4: b"u-1", 5: b"v1"}
    assert ev[10] == "0/3 nodes are available: Grüße".encode()
    assert ev[11] == b"Warning"
    assert 3 not in ev and 9 not in ev  # no series, no related
    # Fields in ascending number order, as Go's marshallers write them.
    order = [n for n, _ in fields(as_dict(encode_event(event())[4:])[2])]
    assert order == sorted(order)


def test_series_and_related_are_encoded_and_whole_seconds_have_no_nanos() -> None:
    body = event(
        series={"count": 300, "lastObservedTime": "2026-11-29T03:05:00.000000Z"},
        related={"kind": "Node", "name": "n-1", "apiVersion": "v1", "resourceVersion": "42"},
    )
    _, ev = unknown_envelope(encode_event(body))
    series = as_dict(ev[3])
    assert series[1] == 300
    moment = int(datetime(2026, 11, 29, 3, 5, tzinfo=UTC).timestamp())
    assert as_dict(series[2]) == {1: moment}
    assert as_dict(ev[9]) == {1: b"Node", 3: b"n-1", 5: b"v1", 6: b"42"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (event(deprecatedCount=1), "Event: cannot encode deprecatedCount"),
        (
            event(metadata={"name": "x", "namespace": "ns", "labels": {}}),
            "metadata: cannot encode labels",
        ),
        (
            event(regarding={"kind": "Pod", "name": "p", "ownerUid": "x"}),
            "regarding: cannot encode ownerUid",
        ),
        (
            event(series={"count": 2, "lastObservedTime": "2026-11-29T03:05:00Z", "state": "x"}),
            "series",
        ),
        (event(apiVersion="v1"), "not an events.k8s.io/v1 Event"),
        (event(eventTime="yesterday"), "not an RFC 3339 time"),
    ],
)
def test_a_field_it_cannot_encode_is_refused_not_dropped(
    body: dict[str, Any], message: str
) -> None:
    with pytest.raises(EncodeError, match=message):
        encode_event(body)
