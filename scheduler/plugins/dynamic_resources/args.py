"""DynamicResourcesArgs: v1 defaults (SetDefaults_DynamicResourcesArgs with v1.37's gates:
DRASchedulerFilterTimeout, DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on) and
ValidateDynamicResourcesArgs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework import ArgsError, FieldErrors, check_args_object

FILTER_TIMEOUT = "filterTimeout"
BINDING_TIMEOUT = "bindingTimeout"
DEFAULT_FILTER_TIMEOUT = 10.0
DEFAULT_BINDING_TIMEOUT = 600.0

_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|ms|s|m|h))+|0)")
_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")


@dataclass(frozen=True)
class DynamicResourcesArgs:
    filter_timeout: float = DEFAULT_FILTER_TIMEOUT
    """Seconds one node's allocation may take in Filter; 0 disables the bound."""
    binding_timeout: float = DEFAULT_BINDING_TIMEOUT
    """Seconds PreBind waits for devices' binding conditions."""
    filter_timeout_set: bool = False
    binding_timeout_set: bool = False
    """Whether the config set them: a timeout whose gate is off may not be set."""


def _duration(raw: Mapping[str, Any], key: str, default: float) -> float:
    """A metav1.Duration field: a Go duration string ("10s", "1m30s")."""
    value = raw.get(key)
    if value is None:
        return default
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ArgsError(key, f"Invalid value: {value!r}: time: invalid duration {value!r}")
    seconds = sum(float(n) * _SECONDS[unit] for n, unit in _TERM.findall(match.group(2)))
    return -seconds if match.group(1) == "-" else seconds


def decode_args(raw: Mapping[str, Any] | None) -> DynamicResourcesArgs:
    """Strict decoding, defaults, and upstream's validation: filterTimeout zero or positive,
    bindingTimeout at least one second."""
    args = check_args_object(raw, (FILTER_TIMEOUT, BINDING_TIMEOUT))
    filter_timeout = _duration(args, FILTER_TIMEOUT, DEFAULT_FILTER_TIMEOUT)
    binding_timeout = _duration(args, BINDING_TIMEOUT, DEFAULT_BINDING_TIMEOUT)
    errs = FieldErrors()
    if filter_timeout < 0:
        errs.invalid(FILTER_TIMEOUT, args[FILTER_TIMEOUT], "must be zero or positive")
    if binding_timeout < 1:
        errs.invalid(BINDING_TIMEOUT, args[BINDING_TIMEOUT], "must be at least 1 second")
    errs.raise_if_any()
    return DynamicResourcesArgs(
        filter_timeout,
        binding_timeout,
        filter_timeout_set=args.get(FILTER_TIMEOUT) is not None,
        binding_timeout_set=args.get(BINDING_TIMEOUT) is not None,
    )
