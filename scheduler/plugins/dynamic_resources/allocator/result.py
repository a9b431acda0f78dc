"""The v1 AllocationResult of one claim from the search's choices: device results, the class
and claim configuration that applies to the chosen requests, and the node selector."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import ResourceClaim, format_quantity

from .requests import RequestData, RequestKey
from .search import DeviceResult, Search
from .types import AllocationError, Features

SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


def _device_result(r: DeviceResult, binding: bool) -> dict[str, Any]:
    c = r.candidate
    out: dict[str, Any] = {
        "request": r.request_name,
        "driver": c.id.driver,
        "pool": c.id.pool,
        "device": c.id.device,
    }
    if r.admin_access:
        out["adminAccess"] = True
    if r.request.tolerations:
        out["tolerations"] = [t.to_json() for t in r.request.tolerations]
    if binding and c.device.binding_conditions:
        out["bindingConditions"] = list(c.device.binding_conditions)
    if binding and c.device.binding_failure_conditions:
        out["bindingFailureConditions"] = list(c.device.binding_failure_conditions)
    if r.share_id:
        out["shareID"] = str(uuid.uuid4())
    if r.consumed:
        out["consumedCapacity"] = {
            name: format_quantity(value, binary=True) for name, value in r.consumed.items()
        }
    return out


def _selected_names(
    search: Search | Chosen, ci: int, claim: ResourceClaim
) -> list[tuple[str, str]]:
    """(request name, chosen subrequest's full name or "") per request of the claim."""
    out = []
    for ri, request in enumerate(claim.requests):
        data = search.request_data[RequestKey(ci, ri, 0)]
        if data.parent is None:
            out.append((request.name, ""))
        else:
            sub = request.first_available[search.selected.get((ci, ri), 0)]
            out.append((request.name, f"{request.name}/{sub.name}"))
    return out


def _config(search: Search | Chosen, ci: int, claim: ResourceClaim) -> list[dict[str, Any]]:
    config: list[dict[str, Any]] = []
    by_class: dict[str, tuple[int, int]] = {}
    for ri in range(len(claim.requests)):
        data = search.request_data[RequestKey(ci, ri, 0)]
        if data.parent is not None:
            data = search.request_data[RequestKey(ci, ri, search.selected.get((ci, ri), 0))]
        cls = data.device_class
        span = by_class.get(cls.name)
        if span is not None:
            for i in range(*span):
                config[i]["requests"].append(data.name)
            continue
        start = len(config)
        for cfg in cls.config:
            config.append({"source": SOURCE_CLASS, "requests": [data.name], **cfg.configuration})
        by_class[cls.name] = (start, len(config))
    names = _selected_names(search, ci, claim)
    for cfg in claim.config:
        if not cfg.requests:
            config.append({"source": SOURCE_CLAIM, "requests": [], **cfg.configuration})
            continue
        for name, sub_name in names:
            if name in cfg.requests or (sub_name and sub_name in cfg.requests):
                config.append(
                    {"source": SOURCE_CLAIM, "requests": list(cfg.requests), **cfg.configuration}
                )
                break
    for entry in config:
        requests = entry["requests"]
        if requests and all(n in requests or (s and s in requests) for n, s in names):
            entry["requests"] = []
    for entry in config:
        if not entry["requests"]:
            del entry["requests"]
    return config


def _requirement_key(req: Mapping[str, Any]) -> tuple[str, str, frozenset[str]]:
    return (req.get("key", ""), req.get("operator", ""), frozenset(req.get("values") or ()))


def _node_selector(
    results: list[DeviceResult], node_name: str, binds_to_node: bool = True
) -> dict[str, Any] | None:
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for r in results:
        c = r.candidate
        target = c.device.target if c.slice.per_device_node_selection else c.slice.target
        if target.node_name or (binds_to_node and c.device.binds_to_node):
            return {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            }
        raw = target.node_selector_raw
        if raw is None:
            continue
        terms = raw.get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if terms:
            for source, into in (
                (terms[0].get("matchFields") or [], fields),
                (terms[0].get("matchExpressions") or [], expressions),
            ):
                for req in source:
                    if all(_requirement_key(req) != _requirement_key(have) for have in into):
                        into.append(req)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = [dict(e) for e in expressions]
    if fields:
        term["matchFields"] = [dict(f) for f in fields]
    return {"nodeSelectorTerms": [term]}


@dataclass(frozen=True, slots=True)
class Chosen:
    """A search's choices on one node, made into AllocationResults only when asked: Filter
    allocates on many nodes, Reserve wants the results of one. Only choices whose results
    cannot fail to build are kept this way (`deferrable`)."""

    features: Features
    node_name: str
    claims: list[ResourceClaim]
    results: list[list[DeviceResult]]
    request_data: Mapping[RequestKey, RequestData]
    selected: Mapping[tuple[int, int], int]

    @classmethod
    def of(cls, search: Search) -> Chosen:
        return cls(
            search.features,
            search.node_name,
            search.claims,
            search.results,
            search.request_data,
            search.selected,
        )

    def build(self) -> list[dict[str, Any]]:
        return allocation_results(self)


def deferrable(search: Search) -> bool:
    """Every chosen device is in a slice (or, per device, of a device) naming the node: the
    node selector is then the node's name, which cannot fail to build."""
    for results in search.results:
        for r in results:
            c = r.candidate
            target = c.device.target if c.slice.per_device_node_selection else c.slice.target
            if not target.node_name:
                return False
    return True


def allocation_results(search: Search | Chosen) -> list[dict[str, Any]]:
    out = []
    binding = search.features.binding_conditions
    for ci, claim in enumerate(search.claims):
        results = search.results[ci]
        devices: dict[str, Any] = {"results": [_device_result(r, binding) for r in results]}
        config = _config(search, ci, claim)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        try:
            # The stable variant does not look at bindsToNode.
            selector = _node_selector(results, search.node_name, not search.features.stable)
        except AllocationError as err:
            raise AllocationError(f"create NodeSelector for claim {claim.name}: {err}") from err
        if selector is not None:
            allocation["nodeSelector"] = selector
        out.append(allocation)
    return out
