"""Resource amounts as the scheduler counts them: milli-CPU, bytes, pods, extended resources."""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api.quantity import milli_value, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler's defaults for containers that request nothing (schedutil.DefaultMilliCPURequest,
# DefaultMemoryRequest): used only for spreading scores, never for fit.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, prefixed-native and attachable-volume resources."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def is_extended_resource_name(name: str) -> bool:
    """A domain-prefixed resource outside kubernetes.io (e.g. example.com/gpu)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


#: resourceapi.ResourceDeviceClassPrefix: every DeviceClass serves the extended resource
#: `deviceclass.resource.kubernetes.io/<class name>` besides its explicit one.
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_dra_extended_resource_name(name: str) -> bool:
    """IsDRAExtendedResourceName: a name a DeviceClass may serve."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


class Resource:
    """A set of resource amounts; the unit of node allocatable and of pod requests."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, resources: Mapping[str, str | int | float]) -> Resource:
        """Builds a Resource from an API ResourceList ({"cpu": "500m", ...})."""
        res = cls()
        res.add_list(resources)
        return res

    def add_list(self, resources: Mapping[str, str | int | float]) -> None:
        for name, quantity in resources.items():
            if name == CPU:
                self.milli_cpu += milli_value(quantity)
            elif name == MEMORY:
                self.memory += value(quantity)
            elif name == PODS:
                self.allowed_pod_number += value(quantity)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += value(quantity)
            elif is_scalar_resource_name(name):
                self.scalar[name] = self.scalar.get(name, 0) + value(quantity)

    def add(self, other: Resource, sign: int = 1) -> None:
        """Adds (sign=1) or subtracts (sign=-1) another Resource in place."""
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * amount

    def get(self, name: str) -> int:
        """The amount of one resource by its API name."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def is_zero(self) -> bool:
        return (
            self.milli_cpu == 0
            and self.memory == 0
            and self.ephemeral_storage == 0
            and not any(self.scalar.values())
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v}
            == {k: v for k, v in other.scalar.items() if v}
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
            f"ephemeral_storage={self.ephemeral_storage}, pods={self.allowed_pod_number}, "
            f"scalar={self.scalar})"
        )
