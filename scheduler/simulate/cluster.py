"""A cluster as the simulator reads it: API objects by kind, loaded from YAML files.

`kube-pysched snapshot` writes one `kind: List` (as JSON, which is YAML as well);
`kubectl get -o yaml` and `-o json` write the same shape
(its items carry their kind), and several documents in one file are read as well. A typed list
(`PodList`, as the API server answers) names its items' kind by its own. An object without a
kind, or a document that is neither an object nor a list, is an error naming the file and
the document: a what-if run on a cluster that lost objects on the way would mislead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import yaml

from scheduler.api.json_types import Json
from scheduler.simulate.heap import collector_paused

try:  # the C scanner is faster on a large file
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


class ClusterFileError(ValueError):
    """A file the simulator cannot read as Kubernetes objects."""


@dataclass
class ClusterObjects:
    """Objects by kind, in file order."""

    by_kind: dict[str, list[Json]] = field(default_factory=lambda: defaultdict(list))

    def add(self, obj: Json) -> None:
        self.by_kind[obj["kind"]].append(obj)

    def of(self, kind: str) -> list[Json]:
        return self.by_kind.get(kind, [])

    def __iter__(self) -> Iterator[Json]:
        for objs in self.by_kind.values():
            yield from objs

    def counts(self) -> dict[str, int]:
        return {kind: len(objs) for kind, objs in self.by_kind.items() if objs}


def _items(doc: Any, where: str) -> Iterator[Json]:
    if not isinstance(doc, dict):
        raise ClusterFileError(f"{where}: not a Kubernetes object or list")
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ClusterFileError(f"{where}: the object has no kind")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        item_kind = kind[: -len("List")] if kind != "List" else None
        for i, raw in enumerate(doc["items"]):
            item = raw
            if isinstance(raw, dict) and not raw.get("kind") and item_kind:
                item = {**raw, "kind": item_kind}
                if doc.get("apiVersion"):
                    item.setdefault("apiVersion", doc["apiVersion"])
            yield from _items(item, f"{where} items[{i}]")
        return
    yield doc


def _documents(text: str, path: str) -> list[Any]:
    """JSON (what `kube-pysched snapshot` writes, and YAML too) parsed as JSON, many times
    faster than the YAML parser; anything else as YAML documents."""
    if text.lstrip().startswith("{"):
        try:
            return [orjson.loads(text)]
        except orjson.JSONDecodeError:
            pass  # YAML flow style that is not JSON: the YAML parser decides
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as err:
        raise ClusterFileError(f"{path}: YAML error: {err}") from err


@collector_paused
def read_objects(paths: Iterable[str | Path]) -> ClusterObjects:
    """Every object in the files, lists flattened."""
    objects = ClusterObjects()
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise ClusterFileError(f"{path}: cannot read the file: {err.strerror or err}") from err
        docs = _documents(text, str(path))
        for n, doc in enumerate(docs):
            if doc is None:
                continue
            for obj in _items(doc, f"{path} document {n + 1}"):
                objects.add(obj)
    return objects


def dump_list(objects: Iterable[Json], stream: BinaryIO) -> None:
    """Writes `objects` as one `kind: List`, in JSON: a YAML reader reads it as it is (JSON is
    YAML), and the simulator reads it many times faster than YAML."""
    doc = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    stream.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
