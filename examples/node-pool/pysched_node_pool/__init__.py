"""NodePool, an out-of-tree kube-pysched plugin: NAME and SPEC for the entry point.

The scheduler loads SPEC from the `kube_pysched.plugins` entry point declared in
pyproject.toml; the code is in plugin.py and the args decoding in args.py.
"""

from __future__ import annotations

from pysched_node_pool.args import NodePoolArgs, decode_args
from pysched_node_pool.plugin import NAME, NodePool
from scheduler.framework import EnqueueExtensions, FilterPlugin, PluginSpec, ScorePlugin

SPEC = PluginSpec(
    lambda args, _handle: NodePool(args),
    decode_args,
    implements=(FilterPlugin, ScorePlugin, EnqueueExtensions),
)

__all__ = ["NAME", "SPEC", "NodePool", "NodePoolArgs"]
