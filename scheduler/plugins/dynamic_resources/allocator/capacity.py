"""Consumable capacity (DRAConsumableCapacity): how much of a device's capacity a request
consumes under the capacity's request policy, and whether it still fits (consumable_capacity.go
of the structured allocator)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from scheduler.framework import CapacityRequestPolicy, DeviceCapacity


def _value(q: Fraction) -> int:
    """Quantity.Value(): rounded up to an integer."""
    return -((-q.numerator) // q.denominator)


def _go_mod(a: int, b: int) -> int:
    """Go's % (the sign of the dividend)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _round_up_range(requested: Fraction, policy: CapacityRequestPolicy) -> Fraction:
    assert policy.valid_range is not None
    low, _, step = policy.valid_range
    assert low is not None
    if requested < low:
        return low
    if step is None:
        return requested
    added = _value(requested) - _value(low)
    step_value = _value(step)
    n = int(added / step_value) if step_value else 0
    if _go_mod(added, step_value) != 0:
        n += 1
    return Fraction(_value(low) + step_value * n)


def consumed_capacity(requested: Fraction | None, capacity: DeviceCapacity) -> Fraction:
    """calculateConsumedCapacity: the policy's default (or the whole capacity) when nothing
    is requested, else the request rounded up to the policy's range step or valid values."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range[0] is not None:
        return _round_up_range(requested, policy)
    if policy.valid_values:
        for valid in policy.valid_values:
            if requested <= valid:
                return valid
    return requested


def _violates(value: Fraction, policy: CapacityRequestPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and value == policy.default:
        return False
    if policy.valid_range is not None:
        low, high, step = policy.valid_range
        if high is not None and value > high:
            return True
        if step is not None and low is not None:
            return _go_mod(_value(value) - _value(low), _value(step)) != 0
        return False
    if policy.valid_values:
        return value not in policy.valid_values
    return False


def fits(
    consumed: Mapping[str, Fraction],
    requests: Mapping[str, Fraction] | None,
    capacity: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Fraction],
) -> bool | None:
    """CmpRequestOverCapacity: whether the request fits beside what is consumed and being
    allocated; None when it names a capacity the device does not have."""
    if requests and any(name not in capacity for name in requests):
        return None
    for name, cap in capacity.items():
        want = consumed_capacity(requests.get(name) if requests else None, cap)
        if _violates(want, cap.request_policy):
            return False
        # Sums only what is there: a Fraction sum per capacity and device is costly.
        total = want
        used = consumed.get(name)
        if used is not None:
            total = used + total
        taking = allocating.get(name)
        if taking is not None:
            total = total + taking
        # The whole capacity alone (nothing requested or consumed) fits without comparing.
        if total is not cap.value and total > cap.value:
            return False
    return True


def consumed_from_request(
    requests: Mapping[str, Fraction] | None, capacity: Mapping[str, DeviceCapacity]
) -> dict[str, Fraction]:
    """GetConsumedCapacityFromRequest: what one allocation consumes of every capacity."""
    return {
        name: consumed_capacity(requests.get(name) if requests else None, cap)
        for name, cap in capacity.items()
    }
