"""The resource plugins, one package as kube-scheduler's noderesources: NodeResourcesFit
(fit.py: the Filter and the allocation score) and NodeResourcesBalancedAllocation
(balanced_allocation.py), sharing the scorers (resource_allocation.py), pod requests
(requests.py), the RequestedToCapacityRatio shape (shape.py) and resource lists
(resource_specs.py)."""

from __future__ import annotations

from scheduler.framework import (
    BatchFilterStatusesPlugin,
    BatchScorePlugin,
    EnqueueExtensions,
    PluginSpec,
    PreFilterPlugin,
    PreScorePlugin,
    SignPlugin,
)
from scheduler.plugins.noderesources import balanced_allocation, fit
from scheduler.plugins.noderesources.balanced_allocation_args import (
    decode_args as decode_balanced_allocation_args,
)
from scheduler.plugins.noderesources.fit_args import decode_args as decode_fit_args

FIT_NAME = fit.NAME
FIT_SPEC = PluginSpec(
    fit.NodeResourcesFit,
    decode_fit_args,
    implements=(
        PreFilterPlugin,
        BatchFilterStatusesPlugin,
        PreScorePlugin,
        BatchScorePlugin,
        EnqueueExtensions,
        SignPlugin,
    ),
)
BALANCED_ALLOCATION_NAME = balanced_allocation.NAME
BALANCED_ALLOCATION_SPEC = PluginSpec(
    balanced_allocation.BalancedAllocation,
    decode_balanced_allocation_args,
    implements=(PreScorePlugin, BatchScorePlugin, SignPlugin),
)

__all__ = ["BALANCED_ALLOCATION_NAME", "BALANCED_ALLOCATION_SPEC", "FIT_NAME", "FIT_SPEC"]
