"""The config file's profiles made into frameworks and the one scheduling queue they share."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.backend.queue import QueueProfile, SchedulingQueue
from scheduler.clock import Clock, RealClock
from scheduler.config.types import KubeSchedulerConfiguration
from scheduler.features import FeatureGates
from scheduler.framework.profile_spec import ProfileSpec
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import (
    Framework,
    FrameworkError,
    FrameworkServices,
    PluginArgsError,
)


def profile_specs(config: KubeSchedulerConfiguration) -> list[ProfileSpec]:
    """The config file's profiles in the framework runtime's terms."""
    return [profile.to_spec() for profile in config.profiles]


def build_frameworks(
    config: KubeSchedulerConfiguration, registry: Registry, services: FrameworkServices
) -> dict[str, Framework]:
    """One framework per profile; plugin args are decoded and validated here. An error names
    the config file, the profile and the plugin's pluginConfig entry, as a FieldError does."""
    frameworks: dict[str, Framework] = {}
    for i, spec in enumerate(profile_specs(config)):
        try:
            frameworks[spec.scheduler_name] = Framework(spec, registry, services)
        except PluginArgsError as err:
            raise FrameworkError(_args_error(config, i, err)) from err
        except FrameworkError as err:
            where = f"profiles[{i}] (schedulerName {spec.scheduler_name!r})"
            raise FrameworkError(f"{config.source}: {where}: {err}") from err
    return frameworks


def _args_error(config: KubeSchedulerConfiguration, index: int, err: PluginArgsError) -> str:
    profile = config.profiles[index]
    entry = next((j for j, pc in enumerate(profile.plugin_config) if pc.name == err.plugin), None)
    if entry is None:  # a plugin's default args: there is no entry in the file to point at
        path = f"profiles[{index}].pluginConfig[name={err.plugin}].args"
    else:
        path = f"profiles[{index}].pluginConfig[{entry}].args"
    if err.path:
        path += f".{err.path}"
    return (
        f"{config.source}: {path}: {err.message} "
        f"(plugin {err.plugin}, profile {profile.scheduler_name!r})"
    )


def build_queue(
    frameworks: Mapping[str, Framework],
    config: KubeSchedulerConfiguration,
    features: FeatureGates,
    max_in_unschedulable: float,
    clock: Clock | None = None,
) -> SchedulingQueue:
    """All profiles share one QueueSort plugin (config validation guarantees it). `clock`:
    the queue's time (backoffs, timestamps); the wall clock unless given."""
    first = next(iter(frameworks.values()))
    sort = first.queue_sort()
    queue = SchedulingQueue(
        clock=clock if clock is not None else RealClock(),
        less=first.less,
        sort_key=getattr(sort, "sort_key", None),
        profiles={
            name: QueueProfile(
                pre_enqueue=fwk.pre_enqueue_plugins,
                events_to_register=fwk.events_to_register(),
                sign_pod=fwk.sign_pod,
            )
            for name, fwk in frameworks.items()
        },
        features=features,
        pod_initial_backoff=float(config.pod_initial_backoff_seconds),
        pod_max_backoff=float(config.pod_max_backoff_seconds),
        pod_max_in_unschedulable_pods_duration=max_in_unschedulable,
    )
    for fwk in frameworks.values():
        fwk.set_queue(queue.nominator, queue.activate)
    return queue
