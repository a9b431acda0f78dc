"""Seeded random DRA allocation cases for the differential test of the structured allocator.

A case is what the DynamicResources plugin hands its allocator for one node: the node, the
DeviceClasses, the ResourceSlices, the claims to allocate (in order), the devices already in use
and the DRA feature gates (the format both the Go oracle and kube-pysched's ``allocate_case``
read; see e2e/dra/oracle/main.go).

Why objects are written as the API server returns them: the allocators see informer objects,
which are validated and defaulted (allocationMode, count, toleration operator, taint timeAdded),
so the generator writes those fields itself and only produces objects the API server accepts
(e2e/test_dra_oracle.py creates a sample with a server-side dry run).

The same (seed, index) always gives the same case: each case draws from its own
``random.Random(f"{seed}/{index}")``, so one differing case can be regenerated alone.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

JSON = dict[str, Any]

NODE = "node-a"
OTHER_NODE = "node-b"
RACKS = ("rack-1", "rack-2")
STANDARD_DOMAIN = "resource.kubernetes.io"
PCIE_ROOTS = ("pci0000:00", "pci0000:01", "pci0000:02")
TAINT_KEY = "example.com/unhealthy"
TAINT_TIME = "2026-01-01T00:00:00Z"
ADMIN_NAMESPACE = "dra-admin"
ALL_FEATURES = (
    "adminAccess",
    "prioritizedList",
    "partitionableDevices",
    "deviceTaints",
    "consumableCapacity",
    "bindingConditions",
)

Attributes = dict[str, tuple[str, tuple[Any, ...]]]
Capacities = dict[str, tuple[str, ...]]

#: Per driver: a short kind, attribute name -> (type, values), capacity name -> values.
DRIVERS: dict[str, tuple[str, Attributes, Capacities]] = {
    "gpu.example.com": (
        "gpu",
        {
            "model": ("string", ("a100", "h100", "l4")),
            "numa": ("int", (0, 1)),
            "ecc": ("bool", (True, False)),
            "driverVersion": ("version", ("1.2.0", "1.3.1", "2.0.0")),
        },
        {"memory": ("20Gi", "40Gi", "80Gi")},
    ),
    "nic.example.com": (
        "nic",
        {
            "speed": ("int", (10, 25, 100)),
            "sriov": ("bool", (True, False)),
            "firmware": ("version", ("0.9.0", "1.0.0")),
        },
        {"bandwidth": ("10G", "25G", "100G")},
    ),
    "fpga.example.com": (
        "fpga",
        {"model": ("string", ("u250", "u55c")), "slots": ("int", (1, 2, 4))},
        {},
    ),
}

#: Request selectors per driver, evaluated only on that driver's devices (class selectors go
#: first). Some reference attributes a device may lack: upstream reports that as an error.
SELECTORS: dict[str, tuple[str, ...]] = {
    "gpu.example.com": (
        'device.attributes["gpu.example.com"].model == "h100"',
        'device.attributes["gpu.example.com"].model != "l4"',
        'device.attributes["gpu.example.com"].numa == 0',
        'device.attributes["gpu.example.com"].ecc',
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
        'device.capacity["gpu.example.com"].memory.isLessThan(quantity("80Gi"))',
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
        '"model" in device.attributes["gpu.example.com"] && '
        'device.attributes["gpu.example.com"].model.startsWith("a")',
        'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:01"',
        # Kubernetes' CEL libraries (regex, lists, sets) on attributes.
        'device.attributes["gpu.example.com"].model.find("[0-9]+") == "100"',
        '[0, 1].sum() == device.attributes["gpu.example.com"].numa',
        'sets.contains(["h100", "l4"], [device.attributes["gpu.example.com"].model])',
    ),
    "nic.example.com": (
        'device.attributes["nic.example.com"].speed >= 25',
        'device.attributes["nic.example.com"].sriov == true',
        'device.capacity["nic.example.com"].bandwidth.compareTo(quantity("25G")) >= 0',
        'device.attributes["nic.example.com"].firmware == semver("1.0.0")',
        '[10, 25].max() <= device.attributes["nic.example.com"].speed',
    ),
    "fpga.example.com": (
        'device.attributes["fpga.example.com"].slots > 1',
        'device.attributes["fpga.example.com"].model in ["u250"]',
        'device.attributes["fpga.example.com"].model.findAll("[0-9]")[0] == "5"',
    ),
}

#: Selectors that hold for any driver's device (for the class without a driver selector).
NEUTRAL_SELECTORS = (
    'device.driver != "fpga.example.com"',
    '"model" in device.attributes[device.driver]',
    'device.driver.endsWith(".example.com")',
    'url("https://" + device.driver + "/").getHostname() == device.driver',
    'cidr("10.0.0.0/8").containsIP("10.1.2.3") && device.driver.findAll("[a-z]+").size() == 3',
)


def generate_cases(seed: int, count: int) -> Iterator[JSON]:
    """``count`` cases of one seed; case ``i`` equals ``generate_case(seed, i)``."""
    for index in range(count):
        yield generate_case(seed, index)


def generate_case(seed: int, index: int) -> JSON:
    """One case, determined by (seed, index) alone."""
    return _Case(random.Random(f"{seed}/{index}")).build()


class _Case:
    """Draws one case; the methods fill in the lists in the order the case is built."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rack = rng.choice(RACKS)
        self.drivers = self._drivers()
        self.slices: list[JSON] = []
        self.devices: list[tuple[str, str, JSON]] = []  # (driver, pool, device)
        self.classes: dict[str, tuple[str | None, JSON]] = {}  # name -> (driver, class)

    def build(self) -> JSON:
        for driver in self.drivers:
            for p in range(self.rng.randint(1, 2)):
                self._pool(driver, p)
            self._driver_classes(driver)
        if self.rng.random() < 0.3:
            self._class("any-device", None, [])
        claims = [self._claim(i) for i in range(self.rng.choices((1, 2, 3), (6, 3, 1))[0])]
        used = [
            f"{driver}/{pool}/{device['name']}"
            for driver, pool, device in self.devices
            if self.rng.random() < 0.12
        ]
        return {
            "node": self._node(),
            "classes": [cls for _, cls in self.classes.values()],
            "slices": self.slices,
            "claims": claims,
            "allocatedDevices": used,
            "features": self._features(),
        }

    # --- node, features --------------------------------------------------------------------

    def _node(self) -> JSON:
        labels = {"kubernetes.io/hostname": NODE, "example.com/rack": self.rack}
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": labels}}

    def _features(self) -> JSON:
        # Mostly v1.37's defaults (all on); sometimes gates off, as a cluster may run them.
        if self.rng.random() < 0.8:
            return dict.fromkeys(ALL_FEATURES, True)
        return {name: self.rng.random() < 0.7 for name in ALL_FEATURES}

    def _drivers(self) -> list[str]:
        names = list(DRIVERS)
        count = self.rng.choices((1, 2, 3), (5, 4, 1))[0]
        first = "gpu.example.com" if self.rng.random() < 0.75 else self.rng.choice(names)
        rest = [n for n in names if n != first]
        return [first, *self.rng.sample(rest, count - 1)]

    # --- slices ----------------------------------------------------------------------------

    def _placement(self) -> tuple[str, JSON]:
        kind = self.rng.choices(
            ("node", "other", "selector", "selector-miss", "field", "all", "per-device"),
            (10, 1, 2, 1, 1, 2, 1),
        )[0]
        if kind == "node":
            return kind, {"nodeName": NODE}
        if kind == "other":
            return kind, {"nodeName": OTHER_NODE}
        if kind in ("selector", "selector-miss"):
            rack = self.rack if kind == "selector" else next(r for r in RACKS if r != self.rack)
            term = {"matchExpressions": [_requirement("example.com/rack", [rack])]}
            return kind, {"nodeSelector": {"nodeSelectorTerms": [term]}}
        if kind == "field":
            term = {"matchFields": [_requirement("metadata.name", [NODE])]}
            return kind, {"nodeSelector": {"nodeSelectorTerms": [term]}}
        if kind == "all":
            return kind, {"allNodes": True}
        return kind, {"perDeviceNodeSelection": True}

    def _pool(self, driver: str, p: int) -> None:
        kind = DRIVERS[driver][0]
        placement, where = self._placement()
        shared = placement not in ("node", "other")
        # Node-local pools are named after their node (a pool name may hold slashes).
        node = NODE if placement == "node" else OTHER_NODE
        pool = f"{kind}-pool-{p}" if shared else f"{node}/{kind}-{p}"
        partitioned = kind == "gpu" and placement != "per-device" and self.rng.random() < 0.3
        device_slices = self.rng.randint(1, 2)
        count = device_slices + (1 if partitioned else 0)
        # Now and then a pool that misses a slice (incomplete) or shows an outdated one.
        published = count + (1 if self.rng.random() < 0.05 else 0)
        generation = 2
        counter_sets = [f"{kind}-{p}-phys-{i}" for i in range(self.rng.randint(1, 2))]
        prefix = f"{kind}-{p}-{self.rng.randrange(10**6)}"
        if partitioned:
            sets = [
                {"name": name, "counters": {"memory": {"value": "80Gi"}, "units": {"value": "7"}}}
                for name in counter_sets
            ]
            self._slice(f"{prefix}-counters", driver, pool, generation, published, where, [], sets)
        names = iter(range(100))
        consumes = counter_sets if partitioned else []
        for s in range(device_slices):
            devices = [
                self._device(driver, f"{kind}-{next(names)}", placement, consumes)
                for _ in range(self.rng.randint(1, 8))
            ]
            if s == 1 and self.rng.random() < 0.1:
                # The same device name in two slices of a pool (each slice valid on its own)
                # makes the pool invalid.
                devices.append(dict(self.devices[-1][2]))
            self._slice(f"{prefix}-{s}", driver, pool, generation, published, where, devices, [])
            self.devices += [(driver, pool, d) for d in devices]
        if self.rng.random() < 0.08:  # a slice of an older generation: ignored by GatherPools
            old = [self._device(driver, f"{kind}-old-{i}", placement, []) for i in range(2)]
            self._slice(f"{prefix}-old", driver, pool, generation - 1, 1, where, old, [])

    def _slice(
        self,
        name: str,
        driver: str,
        pool: str,
        generation: int,
        count: int,
        where: JSON,
        devices: list[JSON],
        counters: list[JSON],
    ) -> None:
        spec: JSON = {
            "driver": driver,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            **where,
        }
        if counters:
            spec["sharedCounters"] = counters
        else:
            spec["devices"] = devices
        self.slices.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": spec,
            }
        )

    def _device(self, driver: str, name: str, placement: str, counter_sets: list[str]) -> JSON:
        rng = self.rng
        _, attrs, caps = DRIVERS[driver]
        device: JSON = {"name": name}
        attributes: JSON = {}
        for attr, (kind, values) in attrs.items():
            if rng.random() < 0.985:  # now and then missing: a selector on it fails
                key = attr if rng.random() < 0.7 else f"{driver}/{attr}"
                attributes[key] = {kind: rng.choice(values)}
        if driver != "fpga.example.com" and rng.random() < 0.92:
            attributes[f"{STANDARD_DOMAIN}/pcieRoot"] = {"string": rng.choice(PCIE_ROOTS)}
        device["attributes"] = attributes
        multi = driver == "gpu.example.com" and not counter_sets and rng.random() < 0.12
        capacity: JSON = {}
        for cap, values in caps.items():
            value = rng.choice(values)
            capacity[cap] = {"value": value}
            if multi and cap == "memory":
                capacity[cap]["requestPolicy"] = _request_policy(rng, value)
        if capacity:
            device["capacity"] = capacity
        if multi:
            device["allowMultipleAllocations"] = True
        if counter_sets:
            memory = rng.choice(("10Gi", "20Gi", "40Gi"))
            units = {"10Gi": "1", "20Gi": "2", "40Gi": "3"}[memory]
            counters = {"memory": {"value": memory}, "units": {"value": units}}
            device["consumesCounters"] = [
                {"counterSet": rng.choice(counter_sets), "counters": counters}
            ]
        if rng.random() < 0.12:
            effect = rng.choice(("NoSchedule", "NoExecute", "NoSchedule"))
            value = rng.choice(("true", "flaky"))
            taint = {"key": TAINT_KEY, "value": value, "effect": effect, "timeAdded": TAINT_TIME}
            device["taints"] = [taint]
        if rng.random() < 0.06:
            device["bindingConditions"] = ["example.com/attached"]
            device["bindingFailureConditions"] = ["example.com/failed"]
            if rng.random() < 0.5:
                device["bindsToNode"] = True
        if placement == "per-device":
            device.update(
                rng.choice(
                    (
                        {"nodeName": NODE},
                        {"nodeName": OTHER_NODE},
                        {"allNodes": True},
                        {
                            "nodeSelector": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            _requirement("example.com/rack", [self.rack])
                                        ]
                                    }
                                ]
                            }
                        },
                    )
                )
            )
        return device

    # --- classes ---------------------------------------------------------------------------

    def _driver_classes(self, driver: str) -> None:
        kind = DRIVERS[driver][0]
        driver_selector = f'device.driver == "{driver}"'
        selectors = [driver_selector] if self.rng.random() < 0.9 else []
        self._class(f"{kind}.example.com", driver, selectors)
        if kind == "gpu" and self.rng.random() < 0.4:
            model = 'device.attributes["gpu.example.com"].model == "a100"'
            self._class("gpu-a100.example.com", driver, [driver_selector, model])

    def _class(self, name: str, driver: str | None, selectors: list[str]) -> None:
        spec: JSON = {}
        if selectors:
            spec["selectors"] = [{"cel": {"expression": e}} for e in selectors]
        if driver and self.rng.random() < 0.2:
            spec["config"] = [_opaque(driver, {"profile": "class-default"})]
        cls = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": spec,
        }
        # A class without a driver selector may still hold only one driver's devices.
        self.classes[name] = (driver if selectors else None, cls)

    # --- claims ----------------------------------------------------------------------------

    def _claim(self, index: int) -> JSON:
        rng = self.rng
        admin = rng.random() < 0.06
        count = rng.choices((1, 2, 3), (6, 3, 1))[0]
        requests = [self._request(f"req-{r}", admin) for r in range(count)]
        devices: JSON = {"requests": requests}
        constraints = self._constraints(requests)
        if constraints:
            devices["constraints"] = constraints
        if rng.random() < 0.1:
            driver = rng.choice(self.drivers)
            config = _opaque(driver, {"profile": "claim"})
            if rng.random() < 0.5:
                config["requests"] = [requests[0]["name"]]
            devices["config"] = [config]
        namespace = ADMIN_NAMESPACE if admin else "default"
        uid = f"00000000-0000-4000-8000-{rng.randrange(16**12):012x}"
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"claim-{index}", "namespace": namespace, "uid": uid},
            "spec": {"devices": devices},
        }

    def _request(self, name: str, admin_namespace: bool) -> JSON:
        if self.rng.random() < 0.25:
            subs = [self._exact(admin_namespace, False) for _ in range(self.rng.randint(2, 3))]
            for i, sub in enumerate(subs):
                sub["name"] = f"sub-{i}"
            return {"name": name, "firstAvailable": subs}
        return {"name": name, "exactly": self._exact(admin_namespace, True)}

    def _exact(self, admin_namespace: bool, exactly: bool) -> JSON:
        rng = self.rng
        class_name = rng.choice(list(self.classes))
        driver = self.classes[class_name][0]
        req: JSON = {"deviceClassName": class_name}
        pool = SELECTORS[driver] if driver else NEUTRAL_SELECTORS
        chosen = rng.sample(pool, rng.choices((0, 1, 2), (5, 4, 1))[0])
        if chosen:
            req["selectors"] = [{"cel": {"expression": e}} for e in chosen]
        if rng.random() < 0.12:
            req["allocationMode"] = "All"
        else:
            req["allocationMode"] = "ExactCount"
            req["count"] = rng.choices((1, 2, 3), (6, 3, 1))[0]
        if exactly and admin_namespace and rng.random() < 0.7:
            req["adminAccess"] = True
        if rng.random() < 0.2:
            req["tolerations"] = [self._toleration()]
        if driver == "gpu.example.com" and rng.random() < 0.15:
            req["capacity"] = {"requests": {"memory": rng.choice(("10Gi", "20Gi", "15Gi"))}}
        return req

    def _toleration(self) -> JSON:
        rng = self.rng
        toleration: JSON = {"key": TAINT_KEY, "operator": rng.choice(("Exists", "Equal"))}
        if toleration["operator"] == "Equal":
            toleration["value"] = rng.choice(("true", "flaky"))
        effect = rng.choice(("", "NoSchedule", "NoExecute"))
        if effect:
            toleration["effect"] = effect
        return toleration

    def _constraints(self, requests: list[JSON]) -> list[JSON]:
        rng = self.rng
        exact = [r["exactly"] for r in requests if "exactly" in r]
        multi = len(requests) > 1 or any(
            e.get("count", 1) > 1 or e["allocationMode"] == "All" for e in exact
        )
        if not multi or rng.random() < 0.6:
            return []
        out: list[JSON] = []
        for _ in range(rng.choices((1, 2), (4, 1))[0]):
            constraint: JSON = {}
            targets = requests
            if len(requests) > 1 and rng.random() < 0.5:
                targets = rng.sample(requests, 2)
                constraint["requests"] = [_ref(rng, r) for r in targets]
            # Mostly an attribute the constrained devices have; one they lack can never be
            # matched, and upstream then searches every combination before it gives up.
            candidates = [f"{STANDARD_DOMAIN}/pcieRoot"]
            for driver in sorted(self._drivers_of(targets)):
                candidates += [f"{driver}/{a}" for a in DRIVERS[driver][1] if a != "ecc"]
            if rng.random() < 0.1:
                candidates = [f"{d}/{a}" for d, (_, attrs, _) in DRIVERS.items() for a in attrs]
            key = "matchAttribute" if rng.random() < 0.7 else "distinctAttribute"
            constraint[key] = rng.choice(candidates)
            out.append(constraint)
        return out

    def _drivers_of(self, requests: list[JSON]) -> set[str]:
        """The drivers whose classes the requests (and subrequests) name."""
        exact = [r["exactly"] for r in requests if "exactly" in r]
        exact += [sub for r in requests for sub in r.get("firstAvailable", [])]
        drivers = {self.classes[e["deviceClassName"]][0] for e in exact}
        return {d for d in drivers if d is not None}


def _ref(rng: random.Random, request: JSON) -> str:
    """A constraint's reference: the request, or one of its subrequests."""
    subs = request.get("firstAvailable")
    if subs and rng.random() < 0.5:
        return f"{request['name']}/{rng.choice(subs)['name']}"
    return str(request["name"])


def _requirement(key: str, values: list[str]) -> JSON:
    return {"key": key, "operator": "In", "values": values}


def _opaque(driver: str, parameters: JSON) -> JSON:
    return {"opaque": {"driver": driver, "parameters": parameters}}


def _request_policy(rng: random.Random, value: str) -> JSON:
    """A capacity request policy that fits under the device's capacity ``value``."""
    if rng.random() < 0.5:
        return {"default": "10Gi", "validRange": {"min": "10Gi", "step": "10Gi"}}
    options = [v for v in ("10Gi", "20Gi", "40Gi") if _gi(v) <= _gi(value)]
    return {"default": options[0], "validValues": options}


def _gi(value: str) -> int:
    return int(value.removesuffix("Gi"))
