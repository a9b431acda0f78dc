"""VolumeBinding's StorageCapacityScoring, QueueingHints and args."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.parse import parse_pod
from scheduler.framework.events import EventResource, QueueingHint
from scheduler.framework.registry import ArgsError
from scheduler.plugins.volume_binding import SPEC, hints
from scheduler.plugins.volume_binding.args import VolumeBindingArgs, decode_args
from scheduler.testing import FakeHandle, build_plugin, make_node, make_snapshot, run_plugin
from scheduler.testing.builders import pod_json
from tests.plugins.volume_binding.objects import (
    HOSTNAME,
    capacity,
    claim,
    csi_driver,
    pod,
    storage_class,
    volume,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def scores(p: Any, *objects: Any, args: dict[str, Any] | None = None) -> dict[str, int]:
    nodes = [make_node(n, labels={HOSTNAME: n}) for n in ("n1", "n2", "n3")]
    handle = FakeHandle(snap=make_snapshot(nodes))
    handle.static_storage.add(storage_class(), *objects)
    return run_plugin(build_plugin(SPEC, args, handle), p, handle.snap).scores


def test_static_volumes_score_by_utilisation() -> None:
    got = scores(
        pod("p", "a"),
        claim("a", size="1Gi"),
        volume("pv1", node="n1", size="4Gi"),
        volume("pv2", node="n2", size="1Gi"),
        volume("pv3", node="n3", size="2Gi"),
    )
    assert got == {"n1": 75, "n2": 0, "n3": 50}


def test_custom_shape_prefers_fuller_volumes() -> None:
    shape = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
    got = scores(
        pod("p", "a"),
        claim("a", size="1Gi"),
        volume("pv1", node="n1", size="4Gi"),
        volume("pv2", node="n2", size="1Gi"),
        args=shape,
    )
    assert got == {"n1": 25, "n2": 100}


def test_provisioned_volumes_score_by_node_capacity() -> None:
    sc = storage_class("csi", provisioner="csi.example.com")
    got = scores(
        pod("p", "a", "b"),
        claim("a", sc="csi", size="1Gi"),
        claim("b", sc="csi", size="1Gi"),
        sc,
        csi_driver("csi.example.com"),
        capacity("csi", node="n1", size="10Gi"),
        capacity("csi", node="n2", size="4Gi"),
    )
    assert got == {"n1": 80, "n2": 50}


def test_nothing_to_score_skips_score() -> None:
    sc = storage_class("csi", provisioner="csi.example.com")
    got = scores(pod("p", "a"), claim("a", sc="csi"), sc)
    assert got == {}


def test_events() -> None:
    resources = {e.event.resource for e in hints.events_to_register()}
    assert resources == {
        EventResource.STORAGE_CLASS,
        EventResource.PERSISTENT_VOLUME_CLAIM,
        EventResource.PERSISTENT_VOLUME,
        EventResource.NODE,
        EventResource.CSI_NODE,
        EventResource.CSI_DRIVER,
        EventResource.CSI_STORAGE_CAPACITY,
    }


def test_claim_hint() -> None:
    p = pod("p", "a", ephemeral=("e",))
    assert hints.after_claim_change(p, None, claim("a")) == QUEUE
    assert hints.after_claim_change(p, None, claim("p-e")) == QUEUE
    assert hints.after_claim_change(p, None, claim("b")) == SKIP
    assert hints.after_claim_change(p, None, claim("a", namespace="other")) == SKIP


def test_storage_class_hint() -> None:
    p = pod("p", "a")
    sc = storage_class("x", provisioner="p")
    assert hints.after_storage_class_change(p, None, sc) == QUEUE
    assert hints.after_storage_class_change(p, sc, sc) == SKIP
    moved = storage_class("x", provisioner="p", topologies=[{"zone": ["a"]}])
    assert hints.after_storage_class_change(p, sc, moved) == QUEUE


def test_capacity_hint() -> None:
    p = pod("p", "a")
    small = capacity("csi", node="n1", size="1Gi")
    big = capacity("csi", node="n1", size="2Gi")
    assert hints.after_storage_capacity_change(p, None, small) == QUEUE
    assert hints.after_storage_capacity_change(p, small, big) == QUEUE
    assert hints.after_storage_capacity_change(p, big, small) == SKIP
    capped = capacity("csi", node="n1", size="10Gi", max_size="1Gi")
    assert hints.after_storage_capacity_change(p, small, capped) == SKIP


def test_csi_driver_hint_only_for_inline_volumes_of_the_driver() -> None:
    raw = pod_json("p")
    raw["spec"]["volumes"] = [{"name": "v", "csi": {"driver": "d"}}]
    p = parse_pod(raw)
    on, off = csi_driver("d"), csi_driver("d", capacity=False)
    assert hints.after_csi_driver_change(p, on, off) == QUEUE
    assert hints.after_csi_driver_change(p, off, on) == SKIP
    assert hints.after_csi_driver_change(pod("q", "a"), on, off) == SKIP


def test_args_defaults() -> None:
    assert decode_args(None) == VolumeBindingArgs(600, ((0, 10), (100, 0)))
    assert decode_args({"bindTimeoutSeconds": 30}).bind_timeout_seconds == 30


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"bindTimeoutSeconds": -1},
            "bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a"
            " negative value",
        ),
        (
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
            "shape[1].utilization: Invalid value: 10: values must be sorted in increasing order",
        ),
        (
            {"shape": [{"utilization": 0, "score": 11}]},
            "shape[0].score: Invalid value: 11: not in valid range [0, 10]",
        ),
        ({"unknown": 1}, 'unknown: unknown field "unknown"'),
    ],
)
def test_args_validation(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgsError) as err:
        decode_args(raw)
    assert str(err.value) == message
