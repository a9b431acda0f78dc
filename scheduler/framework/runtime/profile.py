"""Building a profile: instantiate its plugins with their args, expand MultiPoint into each
extension point's list as kube-scheduler does, and check the score weights."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.profile_spec import EXTENSION_POINTS, MULTI_POINT, ProfileSpec
from scheduler.framework.registry import ArgsError, Registry

MAX_TOTAL_SCORE = 2**63 - 1

#: The method that makes a plugin belong to an extension point.
POINT_METHOD = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}
POINT_TYPE_NAME = {
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "reserve": "ReservePlugin",
    "permit": "PermitPlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
}


class FrameworkError(Exception):
    """A profile that cannot be built (unknown plugin, wrong extension point, bad args)."""


class PluginArgsError(FrameworkError):
    """Invalid args for one plugin; `path` is relative to the plugin's args."""

    def __init__(self, plugin: str, path: str, message: str) -> None:
        super().__init__(f"{plugin}: {path}: {message}" if path else f"{plugin}: {message}")
        self.plugin = plugin
        self.path = path
        self.message = message


@dataclass(frozen=True)
class ProfilePlugins:
    """A built profile: its plugins by name, each extension point's ordered list, and the
    score weights."""

    by_name: dict[str, Plugin]
    pre_enqueue: list[PreEnqueuePlugin]
    queue_sort: list[QueueSortPlugin]
    pre_filter: list[PreFilterPlugin]
    filter: list[FilterPlugin]
    post_filter: list[PostFilterPlugin]
    pre_score: list[PreScorePlugin]
    score: list[ScorePlugin]
    reserve: list[ReservePlugin]
    permit: list[PermitPlugin]
    pre_bind: list[PreBindPlugin]
    bind: list[BindPlugin]
    post_bind: list[PostBindPlugin]
    score_weights: dict[str, int]


def build_profile(spec: ProfileSpec, registry: Registry, handle: Handle) -> ProfilePlugins:
    """The profile's plugins, or FrameworkError saying what is wrong with it."""
    plugins = instantiate(spec, registry, handle)
    lists: dict[str, list[Any]] = {
        point: plugins_for(spec, point, plugins) for point in EXTENSION_POINTS
    }
    name = spec.scheduler_name
    if len(lists["queueSort"]) != 1:
        raise FrameworkError(
            "only one queue sort plugin required for profile with scheduler name "
            f"{name!r}, but got {len(lists['queueSort'])}"
        )
    if not lists["bind"]:
        raise FrameworkError(
            f"at least one bind plugin is needed for profile with scheduler name {name!r}"
        )
    score = cast(list[ScorePlugin], lists["score"])
    return ProfilePlugins(
        by_name=plugins,
        pre_enqueue=lists["preEnqueue"],
        queue_sort=lists["queueSort"],
        pre_filter=lists["preFilter"],
        filter=lists["filter"],
        post_filter=lists["postFilter"],
        pre_score=lists["preScore"],
        score=score,
        reserve=lists["reserve"],
        permit=lists["permit"],
        pre_bind=lists["preBind"],
        bind=lists["bind"],
        post_bind=lists["postBind"],
        score_weights=score_weights(spec, plugins, score),
    )


def instantiate(spec: ProfileSpec, registry: Registry, handle: Handle) -> dict[str, Plugin]:
    """Every plugin the profile enables, built once with its decoded args."""
    needed: list[str] = []
    for point in (MULTI_POINT, *EXTENSION_POINTS):
        for ref in spec.plugin_set(point).enabled:
            if ref.name not in needed:
                needed.append(ref.name)
    for name in spec.plugin_args:
        if name not in needed and name not in registry:
            raise FrameworkError(f"plugin {name!r} in pluginConfig does not exist")
    plugins: dict[str, Plugin] = {}
    for name in needed:
        plugin_spec = registry.get(name)
        if plugin_spec is None:
            point = next(
                p
                for p in (MULTI_POINT, *EXTENSION_POINTS)
                if any(r.name == name for r in spec.plugin_set(p).enabled)
            )
            kind = POINT_TYPE_NAME.get(point, "plugin")
            raise FrameworkError(f"{kind} {name!r} does not exist")
        raw = spec.plugin_args.get(name)
        args: Any = None
        if plugin_spec.decode_args is not None:
            try:
                args = plugin_spec.decode_args(raw)
            except ArgsError as err:
                raise PluginArgsError(name, err.path, err.message) from err
        elif raw:
            raise PluginArgsError(name, "", "this plugin takes no args")
        try:
            plugins[name] = plugin_spec.factory(args, handle)
        except (ArgsError, FrameworkError):
            raise
        except Exception as err:
            raise FrameworkError(f"initializing plugin {name!r}: {err}") from err
    return plugins


def implements(plugin: Plugin, point: str) -> bool:
    return callable(getattr(plugin, POINT_METHOD[point], None))


def plugins_for(spec: ProfileSpec, point: str, plugins: dict[str, Plugin]) -> list[Any]:
    """The plugin list of one point, with MultiPoint expanded as kube-scheduler does."""
    pset = spec.plugin_set(point)
    type_name = POINT_TYPE_NAME[point]
    enabled: list[str] = []
    for ref in pset.enabled:
        if not implements(plugins[ref.name], point):
            raise FrameworkError(f"plugin {ref.name!r} does not extend {type_name} plugin")
        if ref.name in enabled:
            raise FrameworkError(f"plugin {ref.name!r} already registered as {type_name!r}")
        enabled.append(ref.name)
    disabled = {ref.name for ref in pset.disabled}
    multi = spec.plugin_set(MULTI_POINT).enabled
    if "*" in disabled or not multi:
        return [plugins[name] for name in enabled]
    multi_enabled: list[str] = []
    overrides: set[str] = set()
    for ref in multi:
        if not implements(plugins[ref.name], point) or ref.name in disabled:
            continue
        if ref.name in enabled:
            overrides.add(ref.name)
            continue
        if ref.name in multi_enabled:
            raise FrameworkError(f"plugin {ref.name!r} already registered as {type_name!r}")
        multi_enabled.append(ref.name)
    ordered = [n for n in enabled if n in overrides] + multi_enabled
    ordered += [n for n in enabled if n not in overrides]
    return [plugins[name] for name in ordered]


def score_weights(
    spec: ProfileSpec, plugins: dict[str, Plugin], score: list[ScorePlugin]
) -> dict[str, int]:
    """Each Score plugin's weight (1 when unset); the total must not overflow int64."""
    weights: dict[str, int] = {}
    total = 0
    refs = list(spec.plugin_set("score").enabled) + list(spec.plugin_set(MULTI_POINT).enabled)
    for ref in refs:
        if not implements(plugins[ref.name], "score") or ref.name in weights:
            continue
        weights[ref.name] = ref.weight or 1
        if weights[ref.name] * MAX_NODE_SCORE > MAX_TOTAL_SCORE - total:
            raise FrameworkError("score plugins: total score of Score plugins could overflow")
        total += weights[ref.name] * MAX_NODE_SCORE
    for pl in score:
        if weights.get(pl.name, 0) == 0:
            raise FrameworkError(f"score plugin {pl.name!r} is not configured with weight")
    return weights
