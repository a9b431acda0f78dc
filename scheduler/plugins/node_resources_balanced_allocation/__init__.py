"""NodeResourcesBalancedAllocation plugin package."""

from scheduler.framework.registry import PluginSpec
from scheduler.plugins.node_resources_balanced_allocation.args import (
    BalancedAllocationArgs,
    decode_args,
)
from scheduler.plugins.node_resources_balanced_allocation.plugin import NAME, BalancedAllocation

SPEC = PluginSpec(BalancedAllocation, decode_args)
__all__ = ["NAME", "SPEC", "BalancedAllocation", "BalancedAllocationArgs", "decode_args"]
