"""The framework runtime, one Framework per profile: building the profile (profile.py), the
Handle and the queue's view of it (framework.py), the extension-point runners
(filter_points.py, score_points.py, binding_points.py) and one pod's Filter over all nodes
(filter_pass.py)."""

from __future__ import annotations

from scheduler.framework.runtime.filter_pass import FilterPass
from scheduler.framework.runtime.framework import Framework, FrameworkServices
from scheduler.framework.runtime.profile import FrameworkError, PluginArgsError

__all__ = ["FilterPass", "Framework", "FrameworkError", "FrameworkServices", "PluginArgsError"]
