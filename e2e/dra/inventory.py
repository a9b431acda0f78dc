"""What the test DRA driver (e2e/dra/driver.py) publishes: its configuration and the
ResourceSlices and claim device statuses built from it (pure logic, no API calls).

The configuration is one JSON document::

    {
      "gpuDriver": "gpu.e2e.kube-pysched.io",       # optional, these are the defaults
      "nicDriver": "nic.e2e.kube-pysched.io",
      "profiles": {
        "<profile>": {
          "gpus": [{"model": "a100", "memory": "40Gi", "pcieRoot": "pci0000:00",
                    "numaNode": 0, "driverVersion": "1.2.0"}],
          "partitionable": [{"model": "a100", "memory": "40Gi", "compute": 4,
                             "partitions": [{"name": "half", "memory": "20Gi", "compute": 2,
                                             "count": 2}]}],
          "nics": [{"pcieRoot": "pci0000:00", "numaNode": 0, "speed": 100}]
        }
      },
      "taints": {"<node>/<device>": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
      "binding": {"<node>/<device>": {"conditions": ["e2e.kube-pysched.io/attached"],
                                      "failureConditions": ["e2e.kube-pysched.io/failed"],
                                      "bindsToNode": false, "outcome": "ready"}}
    }

A node gets the devices of the profile its label names (see driver.py). Device names per node:
`gpu-<i>` for the GPUs, `pgpu-<i>` for a partitionable GPU as a whole and
`pgpu-<i>-<partition>-<k>` for its partitions (MIG-like: every one consumes the counters of the
set `pgpu-<i>` — `memory` and `compute` — so partitions and the whole GPU exhaust them together),
`nic-<i>` for the NICs (published by the NIC driver). GPUs and NICs carry the standard
`resource.kubernetes.io/pcieRoot` attribute, so a claim can `matchAttribute` across drivers.

Each driver has one pool per node, named after the node: the GPU driver's pool is one slice of
devices plus, with partitionable GPUs, one slice of shared counters (v1 allows only one of
`devices` and `sharedCounters` per slice). A device key `<node>/<device>` in `taints` taints
it; in `binding` it gives the device binding conditions, and the outcome the driver reports on
claims that got it allocated: `ready` (the conditions turn True), `failed` (the failure
conditions turn True) or `pending` (nothing is reported).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

GPU_DRIVER = "gpu.e2e.kube-pysched.io"
NIC_DRIVER = "nic.e2e.kube-pysched.io"
STANDARD_DOMAIN = "resource.kubernetes.io"
OUTCOMES = ("ready", "failed", "pending")
_TOP_KEYS = {"gpuDriver", "nicDriver", "profiles", "taints", "binding"}
_PROFILE_KEYS = {"gpus", "partitionable", "nics"}
_GPU_KEYS = {"model", "memory", "pcieRoot", "numaNode", "driverVersion"}
_PGPU_KEYS = _GPU_KEYS | {"compute", "partitions"}
_PART_KEYS = {"name", "memory", "compute", "count"}
_NIC_KEYS = {"pcieRoot", "numaNode", "speed"}
_BINDING_KEYS = {"conditions", "failureConditions", "bindsToNode", "outcome"}


class ConfigError(ValueError):
    """The driver's configuration cannot be used; the message names the field."""


@dataclass(frozen=True)
class Binding:
    """Binding conditions of one device and the outcome the driver reports for it."""

    conditions: tuple[str, ...]
    failure_conditions: tuple[str, ...]
    binds_to_node: bool
    outcome: str


@dataclass(frozen=True)
class Config:
    """The parsed configuration (profiles kept as validated JSON)."""

    gpu_driver: str = GPU_DRIVER
    nic_driver: str = NIC_DRIVER
    profiles: Mapping[str, JSON] = field(default_factory=dict)
    taints: Mapping[str, tuple[JSON, ...]] = field(default_factory=dict)
    binding: Mapping[str, Binding] = field(default_factory=dict)


def _unknown(what: str, data: Mapping[str, Any], known: set[str]) -> None:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{what}: expected an object, got {type(data).__name__}")
    extra = sorted(set(data) - known)
    if extra:
        raise ConfigError(f"{what}: unknown field(s) {', '.join(extra)}")


def _list(what: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{what}: expected a list, got {type(value).__name__}")
    return value


def parse_config(data: Any) -> Config:
    """Validates a configuration document; unknown fields and wrong types raise ConfigError."""
    _unknown("config", data, _TOP_KEYS)
    profiles = data.get("profiles", {})
    _unknown("profiles", profiles, set(profiles) if isinstance(profiles, Mapping) else set())
    for name, profile in profiles.items():
        _unknown(f"profiles.{name}", profile, _PROFILE_KEYS)
        for i, gpu in enumerate(_list(f"profiles.{name}.gpus", profile.get("gpus", []))):
            _unknown(f"profiles.{name}.gpus[{i}]", gpu, _GPU_KEYS)
        pgpus = _list(f"profiles.{name}.partitionable", profile.get("partitionable", []))
        for i, pgpu in enumerate(pgpus):
            where = f"profiles.{name}.partitionable[{i}]"
            _unknown(where, pgpu, _PGPU_KEYS)
            for k, part in enumerate(_list(f"{where}.partitions", pgpu.get("partitions", []))):
                _unknown(f"{where}.partitions[{k}]", part, _PART_KEYS)
                if "name" not in part:
                    raise ConfigError(f"{where}.partitions[{k}]: name is required")
        for i, nic in enumerate(_list(f"profiles.{name}.nics", profile.get("nics", []))):
            _unknown(f"profiles.{name}.nics[{i}]", nic, _NIC_KEYS)
    taints = data.get("taints", {})
    _unknown("taints", taints, set(taints) if isinstance(taints, Mapping) else set())
    parsed_taints = {}
    for key, values in taints.items():
        _device_key("taints", key)
        parsed_taints[key] = tuple(dict(t) for t in _list(f"taints.{key}", values))
    binding = data.get("binding", {})
    _unknown("binding", binding, set(binding) if isinstance(binding, Mapping) else set())
    parsed_binding = {}
    for key, value in binding.items():
        _device_key("binding", key)
        _unknown(f"binding.{key}", value, _BINDING_KEYS)
        outcome = value.get("outcome", "ready")
        if outcome not in OUTCOMES:
            raise ConfigError(f"binding.{key}.outcome: {outcome!r} is not one of {OUTCOMES}")
        parsed_binding[key] = Binding(
            conditions=tuple(_list(f"binding.{key}.conditions", value.get("conditions", []))),
            failure_conditions=tuple(
                _list(f"binding.{key}.failureConditions", value.get("failureConditions", []))
            ),
            binds_to_node=bool(value.get("bindsToNode", False)),
            outcome=outcome,
        )
    return Config(
        gpu_driver=str(data.get("gpuDriver", GPU_DRIVER)),
        nic_driver=str(data.get("nicDriver", NIC_DRIVER)),
        profiles=dict(profiles),
        taints=parsed_taints,
        binding=parsed_binding,
    )


def _device_key(what: str, key: str) -> None:
    node, _, device = key.partition("/")
    if not node or not device:
        raise ConfigError(f"{what}: key {key!r} is not <node>/<device>")


def _gpu_attributes(gpu: Mapping[str, Any]) -> JSON:
    attributes: JSON = {
        "model": {"string": str(gpu.get("model", "a100"))},
        "numaNode": {"int": int(gpu.get("numaNode", 0))},
        "driverVersion": {"version": str(gpu.get("driverVersion", "1.0.0"))},
    }
    if "pcieRoot" in gpu:
        attributes[f"{STANDARD_DOMAIN}/pcieRoot"] = {"string": str(gpu["pcieRoot"])}
    return attributes


def _decorate(config: Config, node: str, device: JSON) -> JSON:
    """Adds the configured taints and binding conditions of `<node>/<device>`."""
    key = f"{node}/{device['name']}"
    if key in config.taints:
        device["taints"] = [dict(t) for t in config.taints[key]]
    binding = config.binding.get(key)
    if binding is not None:
        device["bindingConditions"] = list(binding.conditions)
        device["bindingFailureConditions"] = list(binding.failure_conditions)
        if binding.binds_to_node:
            device["bindsToNode"] = True
    return device


def gpu_devices(config: Config, node: str, profile: Mapping[str, Any]) -> list[JSON]:
    """The GPU driver's devices of one node, in the order they are published."""
    devices = []
    for i, gpu in enumerate(profile.get("gpus", [])):
        device: JSON = {
            "name": f"gpu-{i}",
            "attributes": _gpu_attributes(gpu),
            "capacity": {"memory": {"value": str(gpu.get("memory", "40Gi"))}},
        }
        devices.append(_decorate(config, node, device))
    for i, pgpu in enumerate(profile.get("partitionable", [])):
        counter_set = f"pgpu-{i}"
        memory = str(pgpu.get("memory", "40Gi"))
        compute = str(pgpu.get("compute", 4))
        whole: JSON = {
            "name": f"pgpu-{i}",
            "attributes": {**_gpu_attributes(pgpu), "partition": {"string": "whole"}},
            "capacity": {"memory": {"value": memory}},
            "consumesCounters": [
                {
                    "counterSet": counter_set,
                    "counters": {"memory": {"value": memory}, "compute": {"value": compute}},
                }
            ],
        }
        devices.append(_decorate(config, node, whole))
        for part in pgpu.get("partitions", []):
            part_memory = str(part.get("memory", "10Gi"))
            part_compute = str(part.get("compute", 1))
            for k in range(int(part.get("count", 1))):
                device = {
                    "name": f"pgpu-{i}-{part['name']}-{k}",
                    "attributes": {
                        **_gpu_attributes(pgpu),
                        "partition": {"string": str(part["name"])},
                        "parent": {"string": f"pgpu-{i}"},
                    },
                    "capacity": {"memory": {"value": part_memory}},
                    "consumesCounters": [
                        {
                            "counterSet": counter_set,
                            "counters": {
                                "memory": {"value": part_memory},
                                "compute": {"value": part_compute},
                            },
                        }
                    ],
                }
                devices.append(_decorate(config, node, device))
    return devices


def counter_sets(profile: Mapping[str, Any]) -> list[JSON]:
    """The shared counters of one node's partitionable GPUs (one set per GPU)."""
    return [
        {
            "name": f"pgpu-{i}",
            "counters": {
                "memory": {"value": str(pgpu.get("memory", "40Gi"))},
                "compute": {"value": str(pgpu.get("compute", 4))},
            },
        }
        for i, pgpu in enumerate(profile.get("partitionable", []))
    ]


def nic_devices(config: Config, node: str, profile: Mapping[str, Any]) -> list[JSON]:
    """The NIC driver's devices of one node."""
    devices = []
    for i, nic in enumerate(profile.get("nics", [])):
        attributes: JSON = {
            "numaNode": {"int": int(nic.get("numaNode", 0))},
            "speed": {"int": int(nic.get("speed", 100))},
        }
        if "pcieRoot" in nic:
            attributes[f"{STANDARD_DOMAIN}/pcieRoot"] = {"string": str(nic["pcieRoot"])}
        devices.append(_decorate(config, node, {"name": f"nic-{i}", "attributes": attributes}))
    return devices


@dataclass(frozen=True)
class Node:
    """A node the driver serves: its name, uid (for ownerReferences) and profile."""

    name: str
    uid: str
    profile: str


def node_slices(config: Config, node: Node, generations: Mapping[str, int]) -> list[JSON]:
    """Every ResourceSlice of one node, both drivers; `generations` by driver name (default 1).

    Raises ConfigError when the node's profile is not configured.
    """
    if node.profile not in config.profiles:
        raise ConfigError(f"node {node.name}: profile {node.profile!r} is not configured")
    profile = config.profiles[node.profile]
    slices = []
    pools: list[tuple[str, str, list[tuple[str, JSON]]]] = []
    gpus = gpu_devices(config, node.name, profile)
    counters = counter_sets(profile)
    gpu_parts: list[tuple[str, JSON]] = []
    if counters:
        gpu_parts.append(("counters", {"sharedCounters": counters}))
    if gpus:
        gpu_parts.append(("", {"devices": gpus}))
    pools.append((config.gpu_driver, "gpu", gpu_parts))
    nics = nic_devices(config, node.name, profile)
    pools.append((config.nic_driver, "nic", [("", {"devices": nics})] if nics else []))
    for driver, kind, parts in pools:
        for suffix, content in parts:
            name = f"{node.name}-{kind}" + (f"-{suffix}" if suffix else "")
            spec: JSON = {
                "driver": driver,
                "nodeName": node.name,
                "pool": {
                    "name": node.name,
                    "generation": generations.get(driver, 1),
                    "resourceSliceCount": len(parts),
                },
                **copy.deepcopy(content),
            }
            slices.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {
                        "name": name,
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Node",
                                "name": node.name,
                                "uid": node.uid,
                                "controller": True,
                            }
                        ],
                    },
                    "spec": spec,
                }
            )
    return slices


def device_statuses(config: Config, claim: Mapping[str, Any], now: str) -> list[JSON] | None:
    """The claim's `status.devices` after the driver reported its binding outcomes, or None
    when nothing changes (not allocated, no device of ours with a ready/failed outcome, or
    every condition already reported)."""
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {})
    existing: list[JSON] = list((claim.get("status") or {}).get("devices") or [])
    by_key = {(d["driver"], d["pool"], d["device"]): d for d in existing}
    changed = False
    for result in results.get("results") or []:
        if result["driver"] not in (config.gpu_driver, config.nic_driver):
            continue
        binding = config.binding.get(f"{result['pool']}/{result['device']}")
        if binding is None or binding.outcome == "pending":
            continue
        types = binding.conditions if binding.outcome == "ready" else binding.failure_conditions
        key = (result["driver"], result["pool"], result["device"])
        status = by_key.get(key)
        if status is None:
            status = {"driver": key[0], "pool": key[1], "device": key[2]}
            by_key[key] = status
            existing.append(status)
        conditions: list[JSON] = status.setdefault("conditions", [])
        have = {c["type"] for c in conditions if c.get("status") == "True"}
        for kind in types:
            if kind in have:
                continue
            conditions[:] = [c for c in conditions if c["type"] != kind]
            conditions.append(
                {
                    "type": kind,
                    "status": "True",
                    "reason": "Attached" if binding.outcome == "ready" else "AttachFailed",
                    "message": f"reported by the test DRA driver ({binding.outcome})",
                    "lastTransitionTime": now,
                }
            )
            changed = True
    return existing if changed else None
