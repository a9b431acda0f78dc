"""ImageLocality: prefer nodes that already hold the pod's images, weighted by image size and
damped by how many nodes hold them (kube-scheduler's imagelocality, v1.37)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    ImageIndex,
    IntColumn,
    Node,
    NodeInfo,
    NodeTable,
    Pod,
    ScoreColumn,
    SignFragment,
    Status,
    signers,
)

NAME = "ImageLocality"

MB = 1024 * 1024
# Bounds of the summed image score: about the 90th percentile range of images on Docker Hub.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def calculate_priority(sum_scores: int, image_count: int) -> int:
    """calculatePriority: clamp the sum to [23 MiB, 1000 MiB x images] and scale to 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # Go int64 division truncates; both operands are >= 0 unless the pod has no image at all,
    # and then the numerator is 0.
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    """scaledImageScore: int64(float64(size) * (float64(numNodes) / float64(total)))."""
    return int(float(size) * (num_nodes / total_nodes))


def _node_image_sizes(node: Node) -> dict[str, int]:
    """name -> size on this node; a name reported twice keeps its first size."""
    sizes: dict[str, int] = {}
    for image in node.images:
        for name in image.names:
            sizes.setdefault(name, image.size_bytes)
    return sizes


class ImageLocality:
    """Score only; no EnqueueExtensions (it never rejects a pod) and no NormalizeScore.

    Image size: kube-scheduler's cache keeps, per image name, the size reported by the first
    node it saw with that name; here each node's own reported size is used (what
    kube-scheduler's NewSnapshot does). They differ only when nodes report different sizes
    under one name. The node count is the current one over the snapshot, where kube-scheduler
    may use a count cached when the node's NodeInfo was last copied.
    """

    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def sign_pod(self, pod: Pod) -> tuple[list[SignFragment] | None, Status | None]:
        """The score depends on the (normalized) image names only."""
        return [SignFragment(signers.IMAGE_NAMES, sorted(set(pod.image_refs)))], None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        node = node_info.node
        if node is None:
            return 0
        snapshot = self._handle.snapshot()
        total = len(snapshot.list())
        index = snapshot.table.image_index()
        own = _node_image_sizes(node) if node.images else {}
        total_score = 0
        for name in pod.image_refs:
            size = own.get(name)
            if size is not None:
                total_score += scaled_image_score(size, index.count(name), total)
        return calculate_priority(total_score, len(pod.image_refs))

    def score_batch(
        self, state: CycleState, pod: Pod, table: NodeTable, rows: npt.NDArray[np.intp]
    ) -> ScoreColumn | None:
        """One numpy step per pod image over the rows that hold it, then the clamp and scale
        over the feasible rows."""
        sums = _summed_scores(table.image_index(), pod.image_refs, table.n)
        if sums is None:  # no image of the pod on any node: every node scores the minimum
            return np.full(len(rows), calculate_priority(0, len(pod.image_refs)), np.int64)
        # A pod has at least one container, so the upper bound is above MIN_THRESHOLD.
        max_threshold = MAX_CONTAINER_THRESHOLD * len(pod.image_refs)
        clamped = np.clip(sums[rows], MIN_THRESHOLD, max_threshold)
        scores: ScoreColumn = (
            MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        )
        return scores

    def score_extensions(self) -> None:
        return None  # already in [0, 100]


def _summed_scores(index: ImageIndex, refs: tuple[str, ...], total: int) -> IntColumn | None:
    """sumImageScores for every row at once; None when no row holds any of the images."""
    sums: IntColumn | None = None
    for name in refs:
        entry = index.entry(name)
        if entry is None:
            continue
        rows, sizes = entry
        if sums is None:
            sums = np.zeros(total, np.int64)
        spread = len(rows) / total
        sums[rows] += (sizes.astype(np.float64) * spread).astype(np.int64)
    return sums
