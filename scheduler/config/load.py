"""Reading a KubeSchedulerConfiguration: YAML, strict field checking, defaults, validation.

Every problem found is collected (not just the first) and reported with kube-scheduler's field
paths, so one run of the scheduler tells the user everything wrong with the file.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml

from scheduler.config.defaults import default_plugins, merge_plugins
from scheduler.config.duration import parse_duration
from scheduler.config.errors import ConfigError, FieldError
from scheduler.config.types import (
    PLUGIN_POINTS,
    PYSCHED_NAME,
    ClientConnection,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginConfig,
    PluginEntry,
    PluginSet,
    Profile,
)
from scheduler.config.validation import validate
from scheduler.features import FeatureGates

API_VERSION = "kubescheduler.config.k8s.io/v1"
# v1 extension points of kube-scheduler's pod group (gang/placement) scheduling, which
# kube-pysched does not implement: a file may name them but not enable plugins there.
POD_GROUP_POINTS = ("placementGenerate", "placementScore", "podGroupPostFilter")
KIND = "KubeSchedulerConfiguration"
JSON = "application/json"

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DuplicateKeyError(yaml.MarkedYAMLError):
    """A key given twice in one mapping: strict decoding rejects it rather than keep the last."""


class _StrictLoader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML loading that refuses duplicate mapping keys, as kube-scheduler's decoder does."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _DuplicateKeyError(
                    problem=f'key "{key}" already set in map', problem_mark=key_node.start_mark
                )
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


class _Decoder:
    """Typed field access that records errors instead of raising, and rejects unknown fields."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def obj(self, raw: Any, path: str, known: Collection[str]) -> dict[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            self.errors.append(FieldError.invalid(path or "<root>", raw, "must be an object"))
            return {}
        for key in raw:
            if key not in known:
                self.errors.append(FieldError.unknown(_join(path, str(key))))
        return {k: v for k, v in raw.items() if k in known}

    def int_(self, raw: Mapping[str, Any], key: str, path: str) -> int | None:
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.errors.append(FieldError.invalid(_join(path, key), value, "must be an integer"))
            return None
        return value

    def float_(self, raw: Mapping[str, Any], key: str, path: str) -> float | None:
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.errors.append(FieldError.invalid(_join(path, key), value, "must be a number"))
            return None
        return float(value)

    def bool_(self, raw: Mapping[str, Any], key: str, path: str) -> bool | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.errors.append(FieldError.invalid(_join(path, key), value, "must be a boolean"))
            return None
        return value

    def str_(self, raw: Mapping[str, Any], key: str, path: str) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.errors.append(FieldError.invalid(_join(path, key), value, "must be a string"))
            return None
        return value

    def duration(self, raw: Mapping[str, Any], key: str, path: str) -> float | None:
        value = self.str_(raw, key, path)
        if value is None:
            return None
        try:
            return parse_duration(value)
        except ValueError as err:
            self.errors.append(FieldError.invalid(_join(path, key), value, str(err)))
            return None

    def list_(self, raw: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.errors.append(FieldError.invalid(_join(path, key), value, "must be a list"))
            return []
        return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def load_config(
    path: str | None,
    available_plugins: Collection[str],
    features: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    """The configuration from `path`, or kube-scheduler's defaults when there is no file.
    `features` are the gates the defaults follow (GangScheduling with GenericWorkload)."""
    if path is None:
        return parse_config(
            {"apiVersion": API_VERSION, "kind": KIND}, available_plugins, features=features
        )
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError(path, [f"cannot read the file: {err.strerror or err}"]) from err
    return parse_config_text(text, available_plugins, source=path, features=features)


def parse_config_text(
    text: str,
    available_plugins: Collection[str],
    source: str = "<config>",
    features: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except _DuplicateKeyError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(source, [f"strict decoding error: {where}{err.problem}"]) from err
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(source, [f"YAML syntax error: {where}{err.problem}"]) from err
    except yaml.YAMLError as err:
        raise ConfigError(source, [f"YAML error: {err}"]) from err
    return parse_config(raw, available_plugins, source=source, features=features)


def parse_config(
    raw: Any,
    available_plugins: Collection[str],
    source: str = "<config>",
    features: FeatureGates | None = None,
) -> KubeSchedulerConfiguration:
    """Decode, default and validate an already-parsed document."""
    d = _Decoder()
    if not isinstance(raw, Mapping):
        raise ConfigError(source, ["the file must hold a KubeSchedulerConfiguration object"])
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    if api_version != API_VERSION or kind != KIND:
        raise ConfigError(
            source,
            [
                f"unsupported apiVersion/kind {api_version!s}/{kind!s}: "
                f"expected {API_VERSION}/{KIND}"
            ],
        )
    top = d.obj(
        raw,
        "",
        {
            "apiVersion",
            "kind",
            "parallelism",
            "leaderElection",
            "clientConnection",
            "enableProfiling",
            "enableContentionProfiling",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "profiles",
            "extenders",
            "delayCacheUntilActive",
        },
    )
    cfg = KubeSchedulerConfiguration()
    cfg.parallelism = _or(d.int_(top, "parallelism", ""), cfg.parallelism)
    cfg.percentage_of_nodes_to_score = _or(
        d.int_(top, "percentageOfNodesToScore", ""), cfg.percentage_of_nodes_to_score
    )
    cfg.pod_initial_backoff_seconds = _or(
        d.int_(top, "podInitialBackoffSeconds", ""), cfg.pod_initial_backoff_seconds
    )
    cfg.pod_max_backoff_seconds = _or(
        d.int_(top, "podMaxBackoffSeconds", ""), cfg.pod_max_backoff_seconds
    )
    cfg.delay_cache_until_active = _or(
        d.bool_(top, "delayCacheUntilActive", ""), cfg.delay_cache_until_active
    )
    cfg.enable_profiling = _or(d.bool_(top, "enableProfiling", ""), cfg.enable_profiling)
    cfg.enable_contention_profiling = _or(
        d.bool_(top, "enableContentionProfiling", ""), cfg.enable_contention_profiling
    )
    cfg.source = source
    cfg.leader_election = _leader_election(d, top.get("leaderElection"))
    cfg.client_connection = _client_connection(d, top.get("clientConnection"))
    # Checked last, where kube-scheduler validates extenders.
    extender_errors = (
        [FieldError("extenders", "Forbidden: extenders are not supported by kube-pysched")]
        if d.list_(top, "extenders", "")
        else []
    )

    raw_profiles = d.list_(top, "profiles", "")
    cfg.profiles = [_profile(d, p, f"profiles[{i}]", features) for i, p in enumerate(raw_profiles)]
    if not raw_profiles:
        cfg.profiles = [Profile(plugins=default_plugins(features))]
    if len(cfg.profiles) == 1 and not cfg.profiles[0].scheduler_name:
        explicit = raw_profiles and isinstance(raw_profiles[0], Mapping)
        if not explicit or raw_profiles[0].get("schedulerName") is None:
            cfg.profiles[0].scheduler_name = PYSCHED_NAME

    errors = d.errors + validate(cfg) + _unknown_plugins(cfg, available_plugins) + extender_errors
    if errors:
        raise ConfigError(source, errors)
    return cfg


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _leader_election(d: _Decoder, raw: Any) -> LeaderElection:
    path = "leaderElection"
    obj = d.obj(
        raw,
        path,
        {
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        },
    )
    le = LeaderElection()
    le.leader_elect = _or(d.bool_(obj, "leaderElect", path), le.leader_elect)
    le.lease_duration = _or(d.duration(obj, "leaseDuration", path), le.lease_duration)
    le.renew_deadline = _or(d.duration(obj, "renewDeadline", path), le.renew_deadline)
    le.retry_period = _or(d.duration(obj, "retryPeriod", path), le.retry_period)
    le.resource_lock = d.str_(obj, "resourceLock", path) or le.resource_lock
    le.resource_name = d.str_(obj, "resourceName", path) or le.resource_name
    le.resource_namespace = d.str_(obj, "resourceNamespace", path) or le.resource_namespace
    return le


def _client_connection(d: _Decoder, raw: Any) -> ClientConnection:
    path = "clientConnection"
    obj = d.obj(raw, path, {"kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"})
    cc = ClientConnection()
    cc.kubeconfig = d.str_(obj, "kubeconfig", path) or ""
    cc.qps = d.float_(obj, "qps", path) or cc.qps
    cc.burst = d.int_(obj, "burst", path) or cc.burst
    # Only JSON is spoken to the API server; protobuf (kube-scheduler's default) is refused.
    for key in ("contentType", "acceptContentTypes"):
        value = d.str_(obj, key, path)
        if value and any(part.strip() != JSON for part in value.split(",")):
            d.errors.append(
                FieldError(
                    f"{path}.{key}",
                    f'Unsupported value: "{value}": supported values: "{JSON}"',
                )
            )
        elif value and key == "contentType":
            cc.content_type = value
        elif value:
            cc.accept_content_types = value
    return cc


def _unknown_plugins(
    cfg: KubeSchedulerConfiguration, available: Collection[str]
) -> list[FieldError]:
    """A profile may only enable plugins this build has: never a profile quietly missing one."""
    errors: list[FieldError] = []
    for i, profile in enumerate(cfg.profiles):
        reported: set[str] = set()
        for point, plugin_set in profile.plugins.items():
            for entry in plugin_set.enabled:
                if entry.name in available or entry.name in reported:
                    continue
                reported.add(entry.name)
                errors.append(
                    FieldError.invalid(
                        f"profiles[{i}].plugins.{point}",
                        entry.name,
                        f"no plugin of this name in this build of kube-pysched "
                        f"(profile {profile.scheduler_name!r})",
                    )
                )
    return errors


def _profile(d: _Decoder, raw: Any, path: str, features: FeatureGates | None) -> Profile:
    obj = d.obj(raw, path, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
    profile = Profile()
    profile.scheduler_name = d.str_(obj, "schedulerName", path) or ""
    profile.percentage_of_nodes_to_score = d.int_(obj, "percentageOfNodesToScore", path)
    custom = _plugins(d, obj.get("plugins"), f"{path}.plugins") if "plugins" in obj else None
    profile.plugins = merge_plugins(default_plugins(features), custom)
    for i, entry in enumerate(d.list_(obj, "pluginConfig", path)):
        entry_path = f"{path}.pluginConfig[{i}]"
        item = d.obj(entry, entry_path, {"name", "args"})
        name = d.str_(item, "name", entry_path) or ""
        args = item.get("args")
        if args is not None and not isinstance(args, Mapping):
            d.errors.append(FieldError.invalid(f"{entry_path}.args", args, "must be an object"))
            args = None
        profile.plugin_config.append(PluginConfig(name, dict(args) if args is not None else None))
    return profile


def _plugins(d: _Decoder, raw: Any, path: str) -> dict[str, PluginSet]:
    obj = d.obj(raw, path, (*PLUGIN_POINTS, *POD_GROUP_POINTS))
    for point in POD_GROUP_POINTS:
        if point in obj and _plugin_set(d, obj.pop(point), f"{path}.{point}").enabled:
            d.errors.append(
                FieldError(
                    f"{path}.{point}",
                    "Forbidden: pod group scheduling is not supported by kube-pysched",
                )
            )
    return {point: _plugin_set(d, obj.get(point), f"{path}.{point}") for point in obj}


def _plugin_set(d: _Decoder, raw: Any, path: str) -> PluginSet:
    obj = d.obj(raw, path, {"enabled", "disabled"})
    return PluginSet(
        enabled=_entries(d, obj, "enabled", path, weights=True),
        disabled=_entries(d, obj, "disabled", path, weights=False),
    )


def _entries(
    d: _Decoder, obj: Mapping[str, Any], key: str, path: str, *, weights: bool
) -> list[PluginEntry]:
    out: list[PluginEntry] = []
    for i, entry in enumerate(d.list_(obj, key, path)):
        entry_path = f"{path}.{key}[{i}]"
        item = d.obj(entry, entry_path, {"name", "weight"})
        name = d.str_(item, "name", entry_path)
        if not name:
            d.errors.append(FieldError.required(f"{entry_path}.name"))
            continue
        weight = d.int_(item, "weight", entry_path) if weights else None
        out.append(PluginEntry(name, weight))
    return out
