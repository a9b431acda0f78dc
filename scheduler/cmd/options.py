"""What the command line decides, after the config file is loaded and flags are applied."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.config.types import KubeSchedulerConfiguration
from scheduler.features import FeatureGates

DEFAULT_PORT = 10259
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0


@dataclass
class Options:
    """Everything app.run needs. Flags that override the file (--kubeconfig, --leader-elect) are
    applied to `config` by the CLI, the one place that decides them; /configz shows the result."""

    config: KubeSchedulerConfiguration
    master: str | None = None  # --master: API server URL, overrides the kubeconfig's
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    bind_address: str = "0.0.0.0"  # of the plain-HTTP /metrics, /healthz, /readyz server
    port: int = DEFAULT_PORT  # 0 picks a free port
    log_format: str = "json"  # json | console
    verbosity: int = 0  # klog-style -v: 2 per-pod results, 4 and above logs at debug
    pod_max_in_unschedulable_pods_duration: float = DEFAULT_MAX_IN_UNSCHEDULABLE  # seconds
