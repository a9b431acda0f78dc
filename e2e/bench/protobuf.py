"""Kubernetes' protobuf wire format for an events.k8s.io/v1 Event (e2e.bench.server_cost).

kube-scheduler sends its Events in protobuf, kube-pysched in JSON. server_cost sends the same
Event both ways from kube-pysched's transport to find what JSON costs the API server: within
noise per request (docs/benchmarks-history.md, "What a request costs the API server") and end to end
(session 39: bindings and Events in protobuf, no difference that shows), so the scheduler keeps
JSON and this encoder stays a measuring tool. Only the fields the recorder writes are encoded;
a body with any other field is refused rather than sent without it (field numbers: k8s.io/api's
generated.proto).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

#: The Content-Type of a protobuf body (the API server answers in the request's Accept).
PROTOBUF = "application/vnd.kubernetes.protobuf"

# runtime.Unknown, behind the 4-byte magic of k8s.io/apimachinery's protobuf serializer.
_MAGIC = b"k8s\x00"
_OBJECT_META = {"name": 1, "namespace": 3}
_OBJECT_REFERENCE = {
    "kind": 1,
    "namespace": 2,
    "name": 3,
    "uid": 4,
    "apiVersion": 5,
    "resourceVersion": 6,
    "fieldPath": 7,
}
_EVENT_STRINGS = {
    "reportingController": 4,
    "reportingInstance": 5,
    "action": 6,
    "reason": 7,
    "note": 10,
    "type": 11,
}
_EVENT_KEYS = frozenset(
    {"apiVersion", "kind", "metadata", "eventTime", "series", "regarding", "related"}
) | frozenset(_EVENT_STRINGS)


class EncodeError(ValueError):
    """A body with a field the encoder does not know: sending it without would lose it."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _message(number: int, payload: bytes) -> bytes:
    """A length-delimited field (string, bytes or embedded message)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int(number: int, value: int) -> bytes:
    """A non-negative varint field (proto2 optional; zero is written like upstream's)."""
    return _varint(number << 3) + _varint(value)


def _strings(obj: Mapping[str, Any], numbers: Mapping[str, int], what: str) -> bytes:
    unknown = set(obj) - set(numbers)
    if unknown:
        raise EncodeError(f"{what}: cannot encode {', '.join(sorted(unknown))}")
    fields = sorted((numbers[key], value) for key, value in obj.items())
    return b"".join(_message(n, str(v).encode()) for n, v in fields if v)


def _micro_time(value: str) -> bytes:
    """metav1.MicroTime from RFC 3339 (with or without fractional seconds)."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as err:
        raise EncodeError(f"not an RFC 3339 time: {value!r}") from err
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int(moment.timestamp())
    nanos = moment.microsecond * 1000
    return _int(1, seconds) + (_int(2, nanos) if nanos else b"")


def _series(series: Mapping[str, Any]) -> bytes:
    unknown = set(series) - {"count", "lastObservedTime"}
    if unknown:
        raise EncodeError(f"series: cannot encode {', '.join(sorted(unknown))}")
    return _int(1, int(series["count"])) + _message(2, _micro_time(series["lastObservedTime"]))


def encode_event(event: Mapping[str, Any]) -> bytes:
    """An events.k8s.io/v1 Event (the recorder's JSON body) as a protobuf request body."""
    unknown = set(event) - _EVENT_KEYS
    if unknown:
        raise EncodeError(f"Event: cannot encode {', '.join(sorted(unknown))}")
    if event.get("apiVersion", "events.k8s.io/v1") != "events.k8s.io/v1" or (
        event.get("kind", "Event") != "Event"
    ):
        raise EncodeError(f"not an events.k8s.io/v1 Event: {event.get('apiVersion')}")
    parts = [_message(1, _strings(event["metadata"], _OBJECT_META, "Event metadata"))]
    if "eventTime" in event:
        parts.append(_message(2, _micro_time(event["eventTime"])))
    if "series" in event:
        parts.append(_message(3, _series(event["series"])))
    parts += [
        _message(n, str(event[key]).encode())
        for key, n in _EVENT_STRINGS.items()
        if n < 8 and event.get(key)
    ]
    parts.append(_message(8, _strings(event["regarding"], _OBJECT_REFERENCE, "regarding")))
    if "related" in event:
        parts.append(_message(9, _strings(event["related"], _OBJECT_REFERENCE, "related")))
    parts += [
        _message(n, str(event[key]).encode())
        for key, n in _EVENT_STRINGS.items()
        if n > 8 and event.get(key)
    ]
    type_meta = _message(1, b"events.k8s.io/v1") + _message(2, b"Event")
    return _MAGIC + _message(1, type_meta) + _message(2, b"".join(parts))
