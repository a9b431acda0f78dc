"""The GangScheduling plugin (kube-scheduler's, for Kubernetes' scheduling.k8s.io/v1beta1
PodGroups; in the default profile with GenericWorkload on): NAME and SPEC for the registry; the
code is in plugin.py, the group logic it shares with Coscheduling in helper/gang.py."""

from __future__ import annotations

from scheduler.framework import (
    EnqueueExtensions,
    PermitPlugin,
    PluginSpec,
    PodGroupPlugin,
    PreEnqueuePlugin,
)
from scheduler.plugins.gang_scheduling.plugin import NAME, GangScheduling

SPEC = PluginSpec(
    lambda _args, handle: GangScheduling(handle),
    implements=(PreEnqueuePlugin, PermitPlugin, PodGroupPlugin, EnqueueExtensions),
)

__all__ = ["NAME", "SPEC"]
