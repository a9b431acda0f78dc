"""What the command line decides, after the config file is loaded and flags are applied."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.config.types import KubeSchedulerConfiguration
from scheduler.features import FeatureGates

DEFAULT_PORT = 10259
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0


@dataclass
class Options:
    config: KubeSchedulerConfiguration
    kubeconfig: str | None = None
    master: str | None = None
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    bind_address: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    leader_elect: bool | None = None
    log_format: str = "json"
    verbosity: int = 0
    pod_max_in_unschedulable_pods_duration: float = DEFAULT_MAX_IN_UNSCHEDULABLE
