"""NodePoolArgs, decoded strictly from the profile's pluginConfig with kube-pysched's helpers.

    pluginConfig:
    - name: NodePool
      args:
        labelKey: example.com/pool          # required: the node label naming a node's pool
        preferredPools: [reserved, on-demand]  # best first; other pools score 0
        forbiddenPools: [spot]              # nodes in these pools are filtered out

Errors name the field and use Kubernetes' wording, so a bad config fails at start-up as an
in-tree plugin's would: `profiles[0].pluginConfig[0].args.labelKey: Required value: ...`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import (
    ArgsError,
    FieldErrors,
    check_args_object,
    check_list,
    label_key_errors,
)


@dataclass(frozen=True)
class NodePoolArgs:
    label_key: str
    preferred_pools: tuple[str, ...] = ()
    forbidden_pools: frozenset[str] = frozenset()


def _pools(raw: Mapping[str, Any], key: str) -> list[str]:
    values = check_list(raw.get(key), key)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ArgsError(f"{key}[{i}]", f"Invalid value: {value!r}: must be a string")
    return values


def decode_args(raw: Mapping[str, Any] | None) -> NodePoolArgs:
    """Strict: unknown fields, a missing or malformed labelKey, or a pool listed twice fail."""
    obj = check_args_object(raw, ("labelKey", "preferredPools", "forbiddenPools"))
    errs = FieldErrors()
    label_key = obj.get("labelKey", "")
    if not isinstance(label_key, str) or not label_key:
        errs.required("labelKey", "the node label that names a node's pool")
        label_key = ""
    else:
        for message in label_key_errors(label_key):
            errs.invalid("labelKey", label_key, message)
    preferred = _pools(obj, "preferredPools")
    forbidden = _pools(obj, "forbiddenPools")
    seen: set[str] = set()
    for key, pools in (("preferredPools", preferred), ("forbiddenPools", forbidden)):
        for i, pool in enumerate(pools):
            if pool in seen:
                errs.duplicate(f"{key}[{i}]", pool)
            seen.add(pool)
    errs.raise_if_any()
    return NodePoolArgs(label_key, tuple(preferred), frozenset(forbidden))
