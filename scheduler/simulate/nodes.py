"""Nodes a what-if adds or removes: `--add-nodes TEMPLATE --count N` and
`--remove-nodes SELECTOR`.

A template is a Node manifest; its copies are named `NAME-1` .. `NAME-N` (or, for a template
with only `metadata.generateName`, `PREFIX1` .. `PREFIXN`), each with its own uid and its
`kubernetes.io/hostname` label set to its name; every other label (the zone, the region, the
instance type) is kept as the template has it, as a node group's nodes share them.

`--remove-nodes` takes a label selector as `kubectl get -l` does: `key=value`, `key==value`,
`key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` and `!key`, ANDed by commas.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable

from scheduler.api.json_types import Json
from scheduler.api.labels import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    LabelSelector,
    Requirement,
)
from scheduler.simulate.cluster import ClusterObjects
from scheduler.simulate.workloads import UnknownWorkloadError, WorkloadError, uid_for

HOSTNAME = "kubernetes.io/hostname"
_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*")
_EQUALITY = re.compile(rf"\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})\s*")
_EXISTS = re.compile(rf"\s*(?P<not>!?)\s*(?P<key>{_KEY})\s*")


def _clauses(text: str) -> list[str]:
    """The selector split at the commas outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def parse_selector(text: str) -> LabelSelector:
    """A label selector in kubectl's `-l` syntax; anything else is a ValueError naming it."""
    if not text.strip():
        raise ValueError("an empty selector would select every node")
    reqs: list[Requirement] = []
    for clause in _clauses(text):
        if m := _SET.fullmatch(clause):
            values = [v.strip() for v in m["values"].split(",")]
            if not all(re.fullmatch(_VALUE, v) for v in values):
                raise ValueError(f"invalid values in {clause.strip()!r}")
            op = IN if m["op"] == "in" else NOT_IN
            reqs.append(Requirement(m["key"], op, frozenset(values)))
        elif m := _EQUALITY.fullmatch(clause):
            op = NOT_IN if m["op"] == "!=" else IN
            reqs.append(Requirement(m["key"], op, frozenset([m["value"]])))
        elif m := _EXISTS.fullmatch(clause):
            op = DOES_NOT_EXIST if m["not"] else EXISTS
            reqs.append(Requirement(m["key"], op, frozenset()))
        else:
            raise ValueError(f"cannot parse {clause.strip()!r} in the selector {text!r}")
    return LabelSelector(tuple(reqs))


def _labels(node: Json) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def matching_nodes(cluster: ClusterObjects, selectors: Iterable[str]) -> list[str]:
    """The names of the nodes any of the selectors matches; a selector matching none is an
    error (a what-if that removes nothing is a mistyped one)."""
    names: list[str] = []
    for text in selectors:
        selector = parse_selector(text)
        found = [n["metadata"]["name"] for n in cluster.of("Node") if selector.matches(_labels(n))]
        if not found:
            raise UnknownWorkloadError(f"--remove-nodes {text}: no node of the snapshot matches")
        names += [n for n in found if n not in names]
    return names


def node_copies(template: Json, count: int, taken: set[str]) -> list[Json]:
    """`count` copies of the Node `template`, named as the module says; a name the cluster
    already has is an error."""
    if template.get("kind") != "Node":
        raise WorkloadError(f"--add-nodes: the template is a {template.get('kind')}, not a Node")
    meta = template.get("metadata") or {}
    status = template.get("status") or {}
    if not (status.get("allocatable") or status.get("capacity")):
        raise WorkloadError(
            "--add-nodes: the template has no status.allocatable (nor status.capacity): "
            "its copies would have room for nothing"
        )
    if meta.get("name"):
        names = [f"{meta['name']}-{i}" for i in range(1, count + 1)]
    elif meta.get("generateName"):
        names = [f"{meta['generateName']}{i}" for i in range(1, count + 1)]
    else:
        raise WorkloadError("--add-nodes: the template has neither metadata.name nor generateName")
    copies = []
    for name in names:
        if name in taken:
            raise WorkloadError(f"--add-nodes: the snapshot already has a node {name!r}")
        node = copy.deepcopy(template)
        node_meta = {
            k: v
            for k, v in meta.items()
            if k not in ("generateName", "uid", "resourceVersion", "creationTimestamp")
        }
        node_meta["name"] = name
        node_meta["uid"] = uid_for(name, "node")
        node_meta["labels"] = {**_labels(template), HOSTNAME: name}
        node["metadata"] = node_meta
        spec = {k: v for k, v in (template.get("spec") or {}).items() if k != "providerID"}
        node["spec"] = spec
        node["status"] = copy.deepcopy(status)
        if not node["status"].get("allocatable"):
            node["status"]["allocatable"] = copy.deepcopy(status["capacity"])
        copies.append(node)
    return copies
