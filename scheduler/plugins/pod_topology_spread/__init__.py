"""The PodTopologySpread plugin: NAME and SPEC for the registry; the code is in plugin.py."""

from __future__ import annotations

from scheduler.framework import PluginSpec
from scheduler.plugins.pod_topology_spread.args import decode_args
from scheduler.plugins.pod_topology_spread.plugin import NAME, PodTopologySpread

SPEC = PluginSpec(PodTopologySpread, decode_args)

__all__ = ["NAME", "SPEC"]
