"""StatusColumn and NodeToStatus's rows form: the same answers as one Status per node."""

from __future__ import annotations

import random

import numpy as np

from scheduler.framework.status import Code, Status
from scheduler.framework.status_column import StatusColumn, StatusColumnBuilder
from scheduler.framework.types import NodeInfo, NodeToStatus
from scheduler.testing import make_node

SHORT = Status(Code.UNSCHEDULABLE, "Insufficient cpu")
TAINTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint")


def test_a_column_groups_rows_by_object_and_gives_them_back_in_order() -> None:
    own = Status(Code.UNSCHEDULABLE, "Insufficient cpu")  # equal to SHORT, another object
    per_row = [SHORT, None, TAINTED, SHORT, own, None]
    column = StatusColumn.of(per_row)
    assert len(column.statuses) == 4
    assert column.to_list() == per_row
    assert all(a is b for a, b in zip(column.to_list(), per_row, strict=True))
    assert column.rows_without_status().tolist() == [1, 5]
    assert dict(zip(map(id, column.statuses), column.counts(), strict=True)) == {
        id(SHORT): 2,
        id(None): 2,
        id(TAINTED): 1,
        id(own): 1,
    }


def test_a_builder_places_parts_and_single_rows_and_leaves_the_rest_passing() -> None:
    out = StatusColumnBuilder(6)
    out.put(np.array([4, 0, 2]), StatusColumn.of([SHORT, TAINTED, SHORT]))
    out.put_one(5, TAINTED)
    out.put_one(2, None)  # a row first worded, then found to pass
    assert out.build().to_list() == [TAINTED, None, None, None, SHORT, TAINTED]


def test_rows_set_at_once_answer_as_if_set_node_by_node() -> None:
    rng = random.Random(7)
    names = [f"n{i}" for i in range(40)]
    infos = [NodeInfo(make_node(name)) for name in names]
    index = {name: i for i, name in enumerate(names)}
    choices = [SHORT, TAINTED, None, Status(Code.UNSCHEDULABLE, "Insufficient memory")]
    for _ in range(50):
        order = np.array(rng.sample(range(len(names)), rng.randint(0, len(names))), np.intp)
        per_row = [rng.choice(choices) for _ in order]
        before = dict.fromkeys(rng.sample(names, 3), SHORT)
        after = dict.fromkeys(rng.sample(names, 2), TAINTED)

        lazy, plain = NodeToStatus(), NodeToStatus()
        for name, status in before.items():
            lazy.set(name, status)
            plain.set(name, status)
        lazy.set_rows(names, index, order, StatusColumn.of(per_row))
        for row, status in zip(order.tolist(), per_row, strict=True):
            if status is not None:
                plain.set(names[row], status)
        probe = NodeToStatus()  # the same, asked only for counts and sizes before any name
        probe.set_rows(names, index, order, StatusColumn.of(per_row))
        pairs = zip(order.tolist(), per_row, strict=True)
        listed = [(names[r], s) for r, s in pairs if s is not None]
        assert len(probe) == len(listed)
        assert sorted(n for _, n in probe.status_counts()) == sorted(
            n for _, n in _counts(dict(listed))
        )
        if rng.random() < 0.5:  # as when PreFilter narrowed the nodes, or not
            lazy.absent_status = plain.absent_status = Status(Code.UNSCHEDULABLE, "narrowed")
        for code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
            fresh = NodeToStatus()  # nodes_with_code first, before any other question
            fresh.absent_status = lazy.absent_status
            for name, status in before.items():
                fresh.set(name, status)
            fresh.set_rows(names, index, order, StatusColumn.of(per_row))
            assert _names(fresh.nodes_with_code(infos, code)) == _names(
                plain.nodes_with_code(infos, code)
            )
            at_once = NodeToStatus()  # with the rows' NodeInfos: answered from the rows
            at_once.absent_status = lazy.absent_status
            for name, status in before.items():
                at_once.set(name, status)
            at_once.set_rows(names, index, order, StatusColumn.of(per_row), infos)
            assert at_once.nodes_with_code(infos, code) == plain.nodes_with_code(infos, code)
            assert at_once._rows is not None  # no per-name map was built
        assert [lazy.get(name) for name in names] == [plain.get(name) for name in names]
        assert sorted(_counts(lazy), key=repr) == sorted(_counts(plain), key=repr)
        for name, status in after.items():
            lazy.set(name, status)
            plain.set(name, status)
        assert list(lazy.items()) == list(plain.items())
        assert len(lazy) == len(plain)


def _names(infos: list[NodeInfo]) -> list[str]:
    return [info.name for info in infos]


def _counts(source: NodeToStatus | dict[str, Status]) -> list[tuple[Status, int]]:
    if isinstance(source, dict):
        probe = NodeToStatus()
        for name, status in source.items():
            probe.set(name, status)
        source = probe
    return source.status_counts()
