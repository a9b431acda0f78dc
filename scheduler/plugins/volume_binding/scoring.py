"""StorageCapacityScoring (scorer.go): a node's score from the utilisation, per storage class,
of the volumes the pod would get there, through the configured broken-linear shape."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.plugins.helper.shape import BrokenLinear
from scheduler.plugins.volume_binding.binder import PodVolumes

MAX_UTILIZATION = 100


@dataclass
class StorageResource:
    requested: int = 0
    capacity: int = 0


def class_resources(volumes: PodVolumes) -> dict[str, StorageResource]:
    """What Score sums per class: the static volumes chosen on the node when there are any,
    else the claims to provision whose CSIStorageCapacity showed room (that capacity, once
    per class: two claims of one class share it)."""
    out: dict[str, StorageResource] = {}
    if volumes.static_bindings:
        for binding in volumes.static_bindings:
            res = out.setdefault(binding.pv.storage_class, StorageResource())
            res.requested += binding.pvc.request
            res.capacity += binding.pv.capacity
        return out
    for provision in volumes.dynamic_provisions:
        if provision.node_capacity is None:
            continue
        res = out.setdefault(provision.pvc.storage_class, StorageResource())
        res.capacity = provision.node_capacity.capacity or 0
        res.requested += provision.pvc.request
    return out


class CapacityScorer:
    """buildScorerFunction: the mean over classes of shape(requested / capacity)."""

    def __init__(self, shape: Sequence[tuple[int, int]]) -> None:
        self._fn = BrokenLinear.from_config(shape)

    def _class_score(self, res: StorageResource) -> int:
        if res.capacity == 0 or res.requested > res.capacity:
            return self._fn(MAX_UTILIZATION)
        return self._fn(res.requested * MAX_UTILIZATION // res.capacity)

    def __call__(self, resources: dict[str, StorageResource]) -> int:
        if not resources:
            return 0
        total = sum(self._class_score(res) for res in resources.values())
        return math.floor(total / len(resources) + 0.5)  # math.Round of a non-negative mean
