"""Dynamic Resource Allocation objects (resource.k8s.io/v1) as the allocator reads them:
DeviceClasses, ResourceClaims and their templates, DeviceTaintRules. Parsed once from the API's
JSON; what the allocator cannot reason about raises DRAParseError naming the object and field.
ResourceSlices are in scheduler.api.dra_slices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.api.dra_common import (
    DeviceTaint,
    DRAParseError,
    kind_name,
    parse_quantity_field,
    parse_taint,
)

#: DeviceRequest allocationMode values.
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
#: resourceapi.ExtendedResourceClaimAnnotation.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"

ALLOCATION_MODE_ALL = "All"

#: DeviceToleration operators.
TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OP_EXISTS = "Exists"

#: resource.k8s.io/v1 limit on results per claim (AllocationResultsMaxSize).
ALLOCATION_RESULTS_MAX_SIZE = 32

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "TOLERATION_OP_EQUAL",
    "TOLERATION_OP_EXISTS",
    "DRAParseError",
    "DeviceClaimConfig",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceTaintRule",
    "DeviceToleration",
    "ExactRequest",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "parse_device_class",
    "parse_device_taint_rule",
    "parse_resource_claim",
    "parse_resource_claim_template",
]


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int | None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceclaim.ToleratesTaint: an unknown operator tolerates nothing."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", TOLERATION_OP_EQUAL):
            return self.value == taint.value
        return self.operator == TOLERATION_OP_EXISTS

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.key:
            out["key"] = self.key
        out["operator"] = self.operator or TOLERATION_OP_EQUAL
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """The device-selecting part of a request or of one firstAvailable subrequest."""

    name: str
    device_class_name: str
    selectors: tuple[str | None, ...]
    """CEL expressions; None for a selector of a type this scheduler does not know."""
    allocation_mode: str
    count: int
    admin_access: bool | None
    tolerations: tuple[DeviceToleration, ...]
    capacity_requests: Mapping[str, Fraction] | None
    """spec...capacity.requests by qualified name; None when the request has no capacity."""


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None
    first_available: tuple[ExactRequest, ...]


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...]
    match_attribute: str | None
    distinct_attribute: str | None


@dataclass(frozen=True, slots=True, eq=False)
class DeviceClaimConfig:
    """A claim's or a class's opaque configuration, copied into the allocation result."""

    requests: tuple[str, ...]
    configuration: Mapping[str, Any] = field(repr=False)
    """The DeviceConfiguration JSON (today `opaque`)."""


@dataclass(frozen=True, slots=True, eq=False)
class DeviceClass:
    name: str
    uid: str
    resource_version: str
    selectors: tuple[str | None, ...]
    config: tuple[DeviceClaimConfig, ...]
    extended_resource_name: str
    created: str = ""
    """metadata.creationTimestamp (RFC 3339): of two classes naming the same extended
    resource, the newer one serves it (upstream's extended resource cache)."""


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    resource_version: str
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...]
    config: tuple[DeviceClaimConfig, ...]
    allocation: Mapping[str, Any] | None = field(repr=False)
    """status.allocation as the API returned it (None while unallocated)."""
    reserved_for: tuple[Mapping[str, Any], ...] = field(repr=False)
    deleting: bool = False
    controller_uid: str = ""
    """The uid of the claim's controller owner ("" without one): a claim generated from a
    template is its pod's."""
    devices: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    """status.devices (drivers' per-device conditions, read for binding conditions)."""
    finalizers: tuple[str, ...] = ()
    extended_resource: bool = False
    """Annotated resource.kubernetes.io/extended-resource-claim: "true": the claim the scheduler
    created for a pod's extended resources backed by DRA."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True, eq=False)
class ResourceClaimTemplate:
    namespace: str
    name: str
    uid: str
    claim_spec: Mapping[str, Any] = field(repr=False)
    """spec.spec: the claim spec claims made from this template get."""


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    """Adds `taint` to every device the selector names (driver, pool, device; unset = any)."""

    name: str
    driver: str | None
    pool: str | None
    device: str | None
    taint: DeviceTaint


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _list(raw: Any, what: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise DRAParseError(f"{what}: must be a list, got {type(raw).__name__}")
    return raw


def _selectors(raw: Any, what: str) -> tuple[str | None, ...]:
    out: list[str | None] = []
    for i, sel in enumerate(_list(raw, what)):
        cel = (sel or {}).get("cel") if isinstance(sel, Mapping) else None
        expression = cel.get("expression") if isinstance(cel, Mapping) else None
        if cel is not None and not isinstance(expression, str):
            raise DRAParseError(f"{what}[{i}].cel.expression: must be a string")
        out.append(expression)
    return tuple(out)


def _tolerations(raw: Any, what: str) -> tuple[DeviceToleration, ...]:
    out = []
    for i, tol in enumerate(_list(raw, what)):
        seconds = tol.get("tolerationSeconds")
        if seconds is not None and not isinstance(seconds, int):
            raise DRAParseError(f"{what}[{i}].tolerationSeconds: must be an integer")
        out.append(
            DeviceToleration(
                key=tol.get("key") or "",
                operator=tol.get("operator") or TOLERATION_OP_EQUAL,
                value=tol.get("value") or "",
                effect=tol.get("effect") or "",
                toleration_seconds=seconds,
            )
        )
    return tuple(out)


def _exact(raw: Mapping[str, Any], name: str, what: str, subrequest: bool) -> ExactRequest:
    mode = raw.get("allocationMode") or ALLOCATION_MODE_EXACT_COUNT
    count = raw.get("count")
    if count is None:
        count = 1 if mode == ALLOCATION_MODE_EXACT_COUNT else 0
    if not isinstance(count, int) or isinstance(count, bool):
        raise DRAParseError(f"{what}.count: must be an integer")
    admin = None if subrequest else raw.get("adminAccess")
    if admin is not None and not isinstance(admin, bool):
        raise DRAParseError(f"{what}.adminAccess: must be a boolean")
    capacity = raw.get("capacity")
    capacity_requests: dict[str, Fraction] | None = None
    if isinstance(capacity, Mapping):
        capacity_requests = {
            str(key): parse_quantity_field(val, f"{what}.capacity.requests[{key}]")
            for key, val in (capacity.get("requests") or {}).items()
        }
    return ExactRequest(
        name=name,
        device_class_name=raw.get("deviceClassName") or "",
        selectors=_selectors(raw.get("selectors"), f"{what}.selectors"),
        allocation_mode=mode,
        count=count,
        admin_access=admin,
        tolerations=_tolerations(raw.get("tolerations"), f"{what}.tolerations"),
        capacity_requests=capacity_requests,
    )


def _config(raw: Any, what: str) -> tuple[DeviceClaimConfig, ...]:
    out = []
    for i, cfg in enumerate(_list(raw, what)):
        if not isinstance(cfg, Mapping):
            raise DRAParseError(f"{what}[{i}]: must be an object")
        body = {k: v for k, v in cfg.items() if k != "requests"}
        out.append(DeviceClaimConfig(tuple(cfg.get("requests") or ()), body))
    return tuple(out)


def parse_device_class(obj: Mapping[str, Any]) -> DeviceClass:
    meta = _meta(obj)
    spec = obj.get("spec") or {}
    name = meta.get("name", "")
    where = f"DeviceClass {name}: spec"
    return DeviceClass(
        name=name,
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        selectors=_selectors(spec.get("selectors"), f"{where}.selectors"),
        config=_config(spec.get("config"), f"{where}.config"),
        extended_resource_name=spec.get("extendedResourceName") or "",
        created=meta.get("creationTimestamp") or "",
    )


def parse_claim_spec(
    spec: Mapping[str, Any], what: str
) -> tuple[tuple[DeviceRequest, ...], tuple[DeviceConstraint, ...], tuple[DeviceClaimConfig, ...]]:
    """The requests, constraints and config of a ResourceClaimSpec (claims and templates)."""
    devices = spec.get("devices") or {}
    requests = []
    for i, req in enumerate(_list(devices.get("requests"), f"{what}.devices.requests")):
        name = req.get("name") or ""
        where = f"{what}.devices.requests[{i}]"
        exactly = req.get("exactly")
        subs = _list(req.get("firstAvailable"), f"{where}.firstAvailable")
        requests.append(
            DeviceRequest(
                name=name,
                exactly=_exact(exactly, name, f"{where}.exactly", False) if exactly else None,
                first_available=tuple(
                    _exact(sub, sub.get("name") or "", f"{where}.firstAvailable[{j}]", True)
                    for j, sub in enumerate(subs)
                ),
            )
        )
    constraints = tuple(
        DeviceConstraint(
            requests=tuple(c.get("requests") or ()),
            match_attribute=c.get("matchAttribute"),
            distinct_attribute=c.get("distinctAttribute"),
        )
        for c in _list(devices.get("constraints"), f"{what}.devices.constraints")
    )
    config = _config(devices.get("config"), f"{what}.devices.config")
    return tuple(requests), constraints, config


def parse_resource_claim(obj: Mapping[str, Any]) -> ResourceClaim:
    meta = _meta(obj)
    status = obj.get("status") or {}
    name = kind_name("ResourceClaim", meta)
    requests, constraints, config = parse_claim_spec(obj.get("spec") or {}, f"{name}: spec")
    return ResourceClaim(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        resource_version=meta.get("resourceVersion", ""),
        requests=requests,
        constraints=constraints,
        config=config,
        allocation=status.get("allocation"),
        reserved_for=tuple(status.get("reservedFor") or ()),
        deleting=meta.get("deletionTimestamp") is not None,
        controller_uid=next(
            (r.get("uid", "") for r in meta.get("ownerReferences") or () if r.get("controller")),
            "",
        ),
        devices=tuple(status.get("devices") or ()),
        finalizers=tuple(meta.get("finalizers") or ()),
        extended_resource=(meta.get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION)
        == "true",
    )


def parse_resource_claim_template(obj: Mapping[str, Any]) -> ResourceClaimTemplate:
    meta = _meta(obj)
    spec = (obj.get("spec") or {}).get("spec") or {}
    # Parsed for its errors: a template whose claims could not be read is reported here.
    parse_claim_spec(spec, f"{kind_name('ResourceClaimTemplate', meta)}: spec.spec")
    return ResourceClaimTemplate(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        claim_spec=spec,
    )


def parse_device_taint_rule(obj: Mapping[str, Any]) -> DeviceTaintRule:
    meta = _meta(obj)
    spec = obj.get("spec") or {}
    name = meta.get("name", "")
    selector = spec.get("deviceSelector") or {}
    unknown = set(selector) - {"driver", "pool", "device"}
    if unknown:
        raise DRAParseError(
            f"DeviceTaintRule {name}: spec.deviceSelector: unsupported fields {sorted(unknown)}"
        )
    return DeviceTaintRule(
        name=name,
        driver=selector.get("driver"),
        pool=selector.get("pool"),
        device=selector.get("device"),
        taint=parse_taint(spec.get("taint") or {}, f"DeviceTaintRule {name}: spec.taint"),
    )
