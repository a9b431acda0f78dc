"""The configuration after decoding and defaulting, in Python terms (seconds, snake_case)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.config.duration import format_duration
from scheduler.framework.profile_spec import (
    EXTENSION_POINTS,
    MULTI_POINT,
    PluginRef,
    PluginSetSpec,
    ProfileSpec,
)

#: The default profile's schedulerName and the leader-election lease name (kube-scheduler uses
#: "default-scheduler", which is api.objects.DEFAULT_SCHEDULER_NAME, the API's default).
PYSCHED_NAME = "kube-pysched"
PLUGIN_POINTS = (MULTI_POINT, *EXTENSION_POINTS)


@dataclass
class PluginEntry:
    name: str
    weight: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.weight is not None:
            out["weight"] = self.weight
        return out


@dataclass
class PluginSet:
    enabled: list[PluginEntry] = field(default_factory=list)
    disabled: list[PluginEntry] = field(default_factory=list)

    def to_spec(self) -> PluginSetSpec:
        return PluginSetSpec(
            enabled=tuple(PluginRef(p.name, p.weight or 0) for p in self.enabled),
            disabled=tuple(PluginRef(p.name) for p in self.disabled),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.enabled:
            out["enabled"] = [p.to_dict() for p in self.enabled]
        if self.disabled:
            out["disabled"] = [p.to_dict() for p in self.disabled]
        return out


@dataclass
class PluginConfig:
    name: str
    args: dict[str, Any] | None = None


@dataclass
class Profile:
    scheduler_name: str = ""
    percentage_of_nodes_to_score: int | None = None
    # Extension point name ("multiPoint", "filter", ...) -> plugin set, after merging defaults.
    plugins: dict[str, PluginSet] = field(default_factory=dict)
    plugin_config: list[PluginConfig] = field(default_factory=list)

    def plugin_set(self, point: str) -> PluginSet:
        return self.plugins.get(point, PluginSet())

    def to_spec(self) -> ProfileSpec:
        """What the framework runtime builds the profile from."""
        return ProfileSpec(
            scheduler_name=self.scheduler_name,
            plugins={point: s.to_spec() for point, s in self.plugins.items()},
            plugin_args={c.name: c.args for c in self.plugin_config},
            percentage_of_nodes_to_score=self.percentage_of_nodes_to_score,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schedulerName": self.scheduler_name}
        if self.percentage_of_nodes_to_score is not None:
            out["percentageOfNodesToScore"] = self.percentage_of_nodes_to_score
        plugins = {p: s.to_dict() for p, s in self.plugins.items() if s.to_dict()}
        if plugins:
            out["plugins"] = plugins
        if self.plugin_config:
            out["pluginConfig"] = [{"name": c.name, "args": c.args} for c in self.plugin_config]
        return out


@dataclass
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = PYSCHED_NAME
    resource_namespace: str = "kube-system"

    def to_dict(self) -> dict[str, Any]:
        return {
            "leaderElect": self.leader_elect,
            "leaseDuration": format_duration(self.lease_duration),
            "renewDeadline": format_duration(self.renew_deadline),
            "retryPeriod": format_duration(self.retry_period),
            "resourceLock": self.resource_lock,
            "resourceName": self.resource_name,
            "resourceNamespace": self.resource_namespace,
        }


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    content_type: str = "application/json"
    accept_content_types: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kubeconfig": self.kubeconfig,
            "qps": self.qps,
            "burst": self.burst,
            "contentType": self.content_type,
            "acceptContentTypes": self.accept_content_types,
        }


@dataclass
class KubeSchedulerConfiguration:
    parallelism: int = 16
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    percentage_of_nodes_to_score: int | None = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[Profile] = field(default_factory=list)
    delay_cache_until_active: bool = False
    # kube-scheduler's defaults: the profile path is served (enableProfiling).
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    # Where the configuration came from (the --config file), for messages; not configuration.
    source: str = field(default="<config>", compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The effective configuration in the file's own format (served on /configz)."""
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "parallelism": self.parallelism,
            "leaderElection": self.leader_election.to_dict(),
            "clientConnection": self.client_connection.to_dict(),
            "percentageOfNodesToScore": self.percentage_of_nodes_to_score,
            "podInitialBackoffSeconds": self.pod_initial_backoff_seconds,
            "podMaxBackoffSeconds": self.pod_max_backoff_seconds,
            "profiles": [p.to_dict() for p in self.profiles],
            "delayCacheUntilActive": self.delay_cache_until_active,
            "enableProfiling": self.enable_profiling,
            "enableContentionProfiling": self.enable_contention_profiling,
        }
