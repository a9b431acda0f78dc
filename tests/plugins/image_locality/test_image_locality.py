"""ImageLocality: scores derived by hand from upstream's integer (and float64) arithmetic,
image-name normalization, and the NodeTable image index kept in step with node updates."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.api.images import normalized_image_name
from scheduler.api.objects import Node, Pod
from scheduler.api.parse import parse_node, parse_pod
from scheduler.backend.cache import Cache, Snapshot
from scheduler.framework.cycle_state import CycleState
from scheduler.plugins import image_locality
from scheduler.plugins.image_locality.plugin import calculate_priority, scaled_image_score
from scheduler.testing import (
    FakeHandle,
    build_plugin,
    make_snapshot,
    node_json,
    pod_json,
    run_plugin,
)

MIB = 1024 * 1024
MIN = 23 * MIB  # 24117248


def image_node(name: str, images: list[tuple[list[str], int]]) -> Node:
    """A node reporting `status.images` as a kubelet does: names (not normalized) and size."""
    obj = node_json(name)
    obj["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return parse_node(obj)


def image_pod(
    images: list[str], init: list[str] | None = None, volumes: list[str] | None = None
) -> Pod:
    obj = pod_json("p")
    obj["spec"]["containers"] = [{"name": f"c{i}", "image": img} for i, img in enumerate(images)]
    if init:
        obj["spec"]["initContainers"] = [
            {"name": f"i{i}", "image": img} for i, img in enumerate(init)
        ]
    if volumes:
        obj["spec"]["volumes"] = [
            {"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)
        ]
    return parse_pod(obj)


def scores(nodes: list[Node], pod: Pod) -> dict[str, int]:
    """Per-node scores through run_plugin, which also checks score_batch gives the same."""
    snap = make_snapshot(nodes)
    plugin = build_plugin(image_locality.SPEC, handle=FakeHandle(snap=snap))
    return run_plugin(plugin, pod, snap).scores


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.27", "nginx:1.27"),
        ("localhost:5000/app", "localhost:5000/app:latest"),  # ':' of the port is not a tag
        ("localhost:5000/app:v2", "localhost:5000/app:v2"),
        ("registry.k8s.io/pause@sha256:0123abcd", "registry.k8s.io/pause@sha256:0123abcd"),
        ("", ":latest"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def test_pod_image_refs_are_init_then_containers_then_image_volumes() -> None:
    pod = image_pod(["app", "side:v1"], init=["setup"], volumes=["data@sha256:ff"])
    assert pod.image_refs == ("setup:latest", "app:latest", "side:v1", "data@sha256:ff")


def test_calculate_priority_clamps_and_truncates() -> None:
    # One container: the range is [23 MiB, 1000 MiB], denominator 1024458752.
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(MIN, 1) == 0
    assert calculate_priority(5000 * MIB, 1) == 100
    # 100 * (500 MiB - 23 MiB) // 1024458752 = 50017075200 // 1024458752 = 48 (48.82)
    assert calculate_priority(500 * MIB, 1) == 48
    # Two containers: the upper bound is 2000 MiB; 100 * (1500 MiB - 23 MiB) // (2000 MiB -
    # 23 MiB) = 154874675200 // 2073034752 = 74 (74.7)
    assert calculate_priority(1500 * MIB, 2) == 74


def test_scaled_image_score_uses_float64_like_go() -> None:
    # float64(104857610) * (3.0 / 11.0) = 28597529.999999996 -> int64 28597529; exact
    # integer arithmetic would give 28597530.
    assert scaled_image_score(104857610, 3, 11) == 28597529


def test_several_containers_and_an_init_container_spread_over_four_nodes() -> None:
    """Pod: init busybox, containers localhost:5000/app and gcr.io/big:v2 -> 3 images,
    the range is [23 MiB, 3000 MiB], denominator 3145728000 - 24117248 = 3121610752.
    busybox:latest is on n0 and n2 (spread 2/4), app on n0 (1/4), big:v2 on n0 and n1 (2/4).
      n0: 100 MiB * 0.5 + 600 MiB * 0.25 + 1200 MiB * 0.5 = 800 MiB = 838860800
          -> 100 * (838860800 - 24117248) // 3121610752 = 81474355200 // 3121610752 = 26
      n1: 1200 MiB * 0.5 = 600 MiB -> 60502835200 // 3121610752 = 19
      n2: 100 MiB * 0.5 = 50 MiB -> 2831155200 // 3121610752 = 0
      n3: nothing -> clamped to the minimum -> 0
    """
    busybox = (["docker.io/library/busybox:latest", "busybox:latest"], 100 * MIB)
    app = (["localhost:5000/app:latest"], 600 * MIB)
    big = (["gcr.io/big:v2", "gcr.io/big@sha256:beef"], 1200 * MIB)
    nodes = [
        image_node("n0", [busybox, app, big]),
        image_node("n1", [big]),
        image_node("n2", [busybox]),
        image_node("n3", [(["other:latest"], 900 * MIB)]),
    ]
    pod = image_pod(["localhost:5000/app", "gcr.io/big:v2"], init=["busybox"])
    assert scores(nodes, pod) == {"n0": 26, "n1": 19, "n2": 0, "n3": 0}


def test_max_clamp_and_the_same_image_in_two_containers_counts_twice() -> None:
    """Pod: two containers with one 1500 MiB image, on the only node (spread 1/1):
    sum 3000 MiB, clamped to 2000 MiB -> 100."""
    nodes = [image_node("n0", [(["huge:latest"], 1500 * MIB)])]
    assert scores(nodes, image_pod(["huge", "huge:latest"])) == {"n0": 100}
    # One container: 1500 MiB clamped to 1000 MiB -> 100 too; a 20 MiB image -> 0.
    small = [image_node("n0", [(["tiny:latest"], 20 * MIB)])]
    assert scores(small, image_pod(["tiny"])) == {"n0": 0}


def test_spread_factor_truncates_in_float64() -> None:
    """11 nodes, a 1966604288-byte image on 3 of them: float64(1966604288) * (3.0/11.0) =
    536346623.99999994 -> 536346623, so 100 * (536346623 - 24117248) // 1024458752 =
    51222937500 // 1024458752 = 49, where exact arithmetic (536346624) would give 50."""
    image = (["app:v1"], 1966604288)
    nodes = [image_node(f"n{i:02d}", [image] if i < 3 else []) for i in range(11)]
    result = scores(nodes, image_pod(["app:v1"]))
    assert result == {f"n{i:02d}": 49 if i < 3 else 0 for i in range(11)}


def test_digest_names_match_and_node_names_are_not_normalized() -> None:
    """Pod images by digest match as given; a tagless pod image becomes name:latest, which a
    node reporting only docker.io/library/name:latest does not have (as upstream)."""
    digest = "registry.k8s.io/pause@sha256:0123abcd"
    nodes = [
        image_node("n0", [([digest, "registry.k8s.io/pause:3.10"], 700 * MIB)]),
        image_node("n1", [(["docker.io/library/nginx:latest"], 700 * MIB)]),
    ]
    # n0: 700 MiB * 1/2 = 350 MiB -> 100 * (367001600 - 24117248) // 1024458752 = 33
    assert scores(nodes, image_pod([digest])) == {"n0": 33, "n1": 0}
    assert scores(nodes, image_pod(["nginx"])) == {"n0": 0, "n1": 0}


def test_image_volumes_count_as_images() -> None:
    """Pod: container a:v1 (absent) and an image volume data:v1 (800 MiB on the only node):
    2 sources, 800 MiB -> 100 * (838860800 - 24117248) // (2097152000 - 24117248) = 39."""
    nodes = [image_node("n0", [(["data:v1"], 800 * MIB)])]
    assert scores(nodes, image_pod(["a:v1"], volumes=["data:v1"])) == {"n0": 39}


def test_image_index_follows_node_updates() -> None:
    """A node pulling an image changes its row and the spread of every node holding it."""
    cache = Cache()
    old = image_node("n1", [])
    for node in (image_node("n0", [(["app:v1"], 800 * MIB)]), old):
        cache.add_node(node)
    snap = Snapshot()
    cache.update_snapshot(snap)
    plugin = build_plugin(image_locality.SPEC, handle=FakeHandle(snap=snap))
    pod = image_pod(["app:v1"])
    # 800 MiB * 1/2 = 400 MiB -> 100 * (419430400 - 24117248) // 1024458752 = 38
    assert run_plugin(plugin, pod, snap).scores == {"n0": 38, "n1": 0}
    cache.update_node(old, image_node("n1", [(["app:v1"], 800 * MIB)]))
    cache.update_snapshot(snap)
    # Both hold it now: 800 MiB * 2/2 -> 100 * (838860800 - 24117248) // 1024458752 = 79
    assert run_plugin(plugin, pod, snap).scores == {"n0": 79, "n1": 79}


IMAGES = [f"img{i}" for i in range(8)]


def _random_node(rng: random.Random, i: int, sizes: dict[str, int]) -> Node:
    images: list[tuple[list[str], int]] = []
    for name in rng.sample(IMAGES, rng.randrange(len(IMAGES))):
        names = [f"{name}:latest", f"{name}:v{rng.randrange(2)}"]
        # Mostly the cluster-wide size; now and then a node reports its own.
        size = sizes[name] if rng.random() < 0.8 else rng.randrange(1, 3000) * MIB
        images.append((names, size))
    return image_node(f"n{i}", images)


def _random_pod(rng: random.Random) -> Pod:
    def pick() -> str:
        name = rng.choice([*IMAGES, "absent"])
        return rng.choice([name, f"{name}:latest", f"{name}:v1", f"{name}:v9"])

    return image_pod(
        [pick() for _ in range(rng.randrange(1, 4))],
        init=[pick() for _ in range(rng.randrange(3))],
        volumes=[pick() for _ in range(rng.randrange(2))],
    )


@pytest.mark.parametrize("seed", range(8))
def test_score_batch_equals_per_node_score(seed: int) -> None:
    rng = random.Random(seed)
    sizes = {name: rng.randrange(1, 2500) * MIB + rng.randrange(MIB) for name in IMAGES}
    snap = make_snapshot([_random_node(rng, i, sizes) for i in range(rng.randrange(5, 60))])
    plugin: Any = build_plugin(image_locality.SPEC, handle=FakeHandle(snap=snap))
    nonzero = 0
    for _ in range(20):
        pod = _random_pod(rng)
        rows = np.array(rng.sample(range(snap.table.n), rng.randrange(1, snap.table.n)), np.intp)
        batch = plugin.score_batch(CycleState(), pod, snap.table, rows)
        per_node = [plugin.score(CycleState(), pod, snap.node_info_list[int(r)]) for r in rows]
        assert batch.tolist() == per_node, pod.image_refs
        nonzero += sum(1 for s in per_node if s)
    assert nonzero, "the random pods never scored above zero: the test checks nothing"
