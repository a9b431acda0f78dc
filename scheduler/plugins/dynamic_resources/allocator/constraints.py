"""Claim constraints across devices: matchAttribute (all the same value) and distinctAttribute
(all different), checked as devices are tentatively added and removed during the search."""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.framework import (
    ATTR_BOOL,
    ATTR_INT,
    ATTR_STRING,
    ATTR_VERSION,
    Device,
    DeviceAttribute,
)

_KNOWN = frozenset((ATTR_BOOL, ATTR_INT, ATTR_STRING, ATTR_VERSION))


def lookup_attribute(device: Device, driver: str, name: str) -> DeviceAttribute | None:
    """A fully qualified attribute: as stored, or unqualified when its domain is the driver."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


class Constraint:
    """One claim constraint; `add` is called before a device is taken, `remove` undoes it."""

    def __init__(self, requests: Iterable[str], attribute: str) -> None:
        self.requests = frozenset(requests)
        self.attribute = attribute

    def applies(self, request: str, subrequest: str) -> bool:
        if not self.requests:
            return True
        if request in self.requests:
            return True
        return bool(subrequest) and f"{request}/{subrequest}" in self.requests

    def add(self, request: str, subrequest: str, device: Device, driver: str) -> bool:
        raise NotImplementedError

    def remove(self, request: str, subrequest: str) -> None:
        raise NotImplementedError


class MatchAttribute(Constraint):
    def __init__(self, requests: Iterable[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.value: DeviceAttribute | None = None
        self.count = 0

    def add(self, request: str, subrequest: str, device: Device, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        if attr is None:
            return False
        if self.count == 0:
            self.value, self.count = attr, 1
            return True
        if attr.kind not in _KNOWN or self.value is None:
            return False
        if attr.kind != self.value.kind or attr.value != self.value.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str) -> None:
        if self.applies(request, subrequest):
            self.count -= 1


class DistinctAttribute(Constraint):
    """The values of the devices added so far, as a stack: `remove` drops the last one (each
    successful add is undone by exactly one remove, in reverse order)."""

    def __init__(self, requests: Iterable[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: list[DeviceAttribute] = []

    def add(self, request: str, subrequest: str, device: Device, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        if attr is None:
            return False
        for seen in self.values:
            if attr.kind not in _KNOWN:
                return False
            if seen.kind == attr.kind and seen.value == attr.value:
                return False
        self.values.append(attr)
        return True

    def remove(self, request: str, subrequest: str) -> None:
        if self.applies(request, subrequest):
            self.values.pop()
