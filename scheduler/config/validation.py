"""ValidateKubeSchedulerConfiguration: the checks kube-scheduler makes, with its field paths."""

from __future__ import annotations

from typing import Any

from scheduler.config.duration import format_duration
from scheduler.config.errors import FieldError
from scheduler.config.types import (
    PLUGIN_POINTS,
    ClientConnection,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginEntry,
    PluginSet,
    Profile,
)

API_VERSION = "kubescheduler.config.k8s.io/v1"
# Plugins removed from the v1 API; naming one is an error, as in kube-scheduler.
REMOVED_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")


def validate(cfg: KubeSchedulerConfiguration) -> list[FieldError]:
    errors: list[FieldError] = []
    errors += _client_connection(cfg.client_connection)
    errors += _leader_election(cfg.leader_election)
    if cfg.parallelism <= 0:
        errors.append(
            FieldError.invalid(
                "parallelism", cfg.parallelism, "should be an integer value greater than zero"
            )
        )
    if not cfg.profiles:
        errors.append(FieldError.required("profiles"))
    seen: dict[str, int] = {}
    for i, profile in enumerate(cfg.profiles):
        path = f"profiles[{i}]"
        errors += _profile(path, profile)
        if profile.scheduler_name in seen:
            errors.append(FieldError.duplicate(f"{path}.schedulerName", profile.scheduler_name))
        seen.setdefault(profile.scheduler_name, i)
    if cfg.profiles:
        errors += _common_queue_sort(cfg.profiles)
    errors += _percentage("percentageOfNodesToScore", cfg.percentage_of_nodes_to_score)
    if cfg.pod_initial_backoff_seconds <= 0:
        errors.append(
            FieldError.invalid(
                "podInitialBackoffSeconds",
                cfg.pod_initial_backoff_seconds,
                "must be greater than 0",
            )
        )
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        errors.append(
            FieldError.invalid(
                "podMaxBackoffSeconds",
                cfg.pod_max_backoff_seconds,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    return errors


def _percentage(path: str, value: int | None) -> list[FieldError]:
    if value is not None and not 0 <= value <= 100:
        return [FieldError.invalid(path, value, "not in valid range [0-100]")]
    return []


def _client_connection(cc: ClientConnection) -> list[FieldError]:
    if cc.burst < 0:
        return [FieldError.invalid("clientConnection.burst", cc.burst, "must be non-negative")]
    return []


def _leader_election(le: LeaderElection) -> list[FieldError]:
    """component-base's leader election checks, plus kube-scheduler's lease-only lock."""
    if not le.leader_elect:
        return []
    path = "leaderElection"
    errors: list[FieldError] = []
    for key, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            errors.append(
                FieldError.invalid(
                    f"{path}.{key}", format_duration(value), "must be greater than zero"
                )
            )
    if le.lease_duration <= le.renew_deadline:
        errors.append(
            FieldError.invalid(
                f"{path}.leaseDuration",
                format_duration(le.renew_deadline),
                "must be greater than `RenewDeadline`",
            )
        )
    for key, name in (
        ("resourceLock", le.resource_lock),
        ("resourceNamespace", le.resource_namespace),
        ("resourceName", le.resource_name),
    ):
        if not name:
            errors.append(FieldError.required(f"{path}.{key}"))
    if le.resource_lock != "leases":
        errors.append(
            FieldError.invalid(
                f"{path}.resourceLock", le.resource_lock, 'resourceLock value must be "leases"'
            )
        )
    return errors


def _profile(path: str, profile: Profile) -> list[FieldError]:
    errors: list[FieldError] = []
    if not profile.scheduler_name:
        errors.append(FieldError.required(f"{path}.schedulerName"))
    errors += _percentage(f"{path}.percentageOfNodesToScore", profile.percentage_of_nodes_to_score)
    removed = (
        f'was invalid in version "{API_VERSION}" '
        f'(KubeSchedulerConfiguration is version "{API_VERSION}")'
    )
    # As kube-scheduler, multiPoint is not checked here; the registry rejects unknown names.
    for point in PLUGIN_POINTS[1:]:
        for j, entry in enumerate(profile.plugin_set(point).enabled):
            if entry.name in REMOVED_PLUGINS:
                errors.append(
                    FieldError.invalid(f"{path}.plugins.{point}.enabled[{j}]", entry.name, removed)
                )
    seen: set[str] = set()
    for j, config in enumerate(profile.plugin_config):
        entry_path = f"{path}.pluginConfig[{j}]"
        if config.name in seen:
            errors.append(FieldError.duplicate(entry_path, config.name))
        seen.add(config.name)
        if config.name in REMOVED_PLUGINS:
            errors.append(FieldError.invalid(entry_path, config.name, removed))
    return errors


def _go_plugin_set(plugins: PluginSet) -> dict[str, Any]:
    """The internal PluginSet as Go's encoding/json shows it in a field error."""

    def entries(items: list[PluginEntry]) -> list[dict[str, Any]] | None:
        return [{"Name": p.name, "Weight": p.weight or 0} for p in items] or None

    return {"Enabled": entries(plugins.enabled), "Disabled": entries(plugins.disabled)}


def _common_queue_sort(profiles: list[Profile]) -> list[FieldError]:
    """Every profile must sort the one shared queue the same way (validateCommonQueueSort)."""
    errors: list[FieldError] = []
    canon = profiles[0].plugin_set("queueSort")
    if len(canon.enabled) > 1:
        errors.append(
            FieldError.invalid(
                "profiles[0].plugins.queueSort.Enabled",
                len(canon.enabled),
                "only one queue sort plugin can be enabled",
            )
        )
    sort_name = canon.enabled[0].name if canon.enabled else ""
    sort_args = next(
        (c.args for c in profiles[0].plugin_config if sort_name and c.name == sort_name), None
    )
    for i, profile in enumerate(profiles[1:], start=1):
        current = profile.plugin_set("queueSort")
        if current != canon:
            errors.append(
                FieldError.invalid(
                    f"profiles[{i}].plugins.queueSort",
                    _go_plugin_set(current),
                    "must be the same for all profiles",
                )
            )
        for config in profile.plugin_config:
            if config.name == sort_name and config.args != sort_args:
                errors.append(
                    FieldError.invalid(
                        f"profiles[{i}].pluginConfig.args",
                        config.args,
                        "queueSort must be the same for all profiles",
                    )
                )
    return errors
