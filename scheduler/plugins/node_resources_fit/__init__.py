"""NodeResourcesFit plugin package."""

from scheduler.framework.registry import PluginSpec
from scheduler.plugins.node_resources_fit.args import FitArgs, decode_args
from scheduler.plugins.node_resources_fit.plugin import NAME, NodeResourcesFit

SPEC = PluginSpec(NodeResourcesFit, decode_args)
__all__ = ["NAME", "SPEC", "FitArgs", "NodeResourcesFit", "decode_args"]
