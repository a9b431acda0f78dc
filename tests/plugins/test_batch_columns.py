"""All node plugins' batch columns."""

from __future__ import annotations

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.plugins import (
    node_name,
    node_ports,
    node_unschedulable,
)
from scheduler.testing import build_plugin, make_node, make_pod, make_snapshot


def test_batch_columns_have_one_entry_per_row() -> None:
    snap = make_snapshot([make_node(f"n{i}") for i in range(5)])
    pod = make_pod(host_ports=[80])
    for spec in (node_name.SPEC, node_unschedulable.SPEC, node_ports.SPEC):
        column = build_plugin(spec).filter_batch(CycleState(), pod, snap.table)
        assert column.dtype == np.bool_ and column.shape == (5,)
