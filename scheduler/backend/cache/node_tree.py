"""Node order for snapshots: zones interleaved round-robin, as kube-scheduler's nodeTree.

Spreading the node list across zones means that when only a percentage of nodes is scored, the
scored nodes still come from every zone.
"""

from __future__ import annotations

from scheduler.api.objects import Node

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"


def zone_key(node: Node) -> str:
    """region + ":\\x00:" + zone, or "" for nodes with neither label (utilnode.GetZoneKey)."""
    region = node.labels.get(REGION_LABEL, "")
    zone = node.labels.get(ZONE_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Node names grouped by zone, in insertion order."""

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def add(self, node: Node) -> None:
        zone = zone_key(node)
        if self._zone_of.get(node.name) == zone:
            return
        self.remove(node.name)
        self._zones.setdefault(zone, []).append(node.name)
        self._zone_of[node.name] = zone

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]

    def __len__(self) -> int:
        return len(self._zone_of)

    def ordered(self) -> list[str]:
        """All names, taking one node from each zone in turn."""
        zones = list(self._zones.values())
        if len(zones) == 1:
            return list(zones[0])
        result: list[str] = []
        longest = max((len(z) for z in zones), default=0)
        for i in range(longest):
            for names in zones:
                if i < len(names):
                    result.append(names[i])
        return result
