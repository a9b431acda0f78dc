"""Differential test: kube-pysched's structured allocator against upstream's, case by case.

Seeded random cases (e2e/dra/cases.py) go through the DRA oracle (upstream's allocator, built
from the pinned k8s.io/dynamic-resource-allocation) and through kube-pysched's
``allocate_case``; every case must give the same allocations, or the same kind of failure.

``DRA_DIFFERENTIAL_CASES`` (default 300) and ``DRA_DIFFERENTIAL_SEED`` (default 1) choose the
cases; the first differing case is printed as JSON with both answers, and
``e2e.dra.cases.generate_case(seed, index)`` regenerates it alone
(``python -m e2e.dra case SEED INDEX`` prints it with upstream's answer).
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e.dra.cases import generate_case
from e2e.dra.compare import difference, normalise
from e2e.dra.oracle import Oracle

pytestmark = pytest.mark.dra_oracle

#: Where kube-pysched's side of the shared case format lives.
ALLOCATOR_MODULE = "scheduler.plugins.dynamic_resources.allocator.cases"
CASES = int(os.environ.get("DRA_DIFFERENTIAL_CASES", "300"))
SEED = int(os.environ.get("DRA_DIFFERENTIAL_SEED", "1"))

JSON = dict[str, Any]


def _allocate_case() -> Callable[[JSON], JSON]:
    """kube-pysched's allocate_case; skips the test only while its module does not exist."""
    try:
        module = importlib.import_module(ALLOCATOR_MODULE)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == ALLOCATOR_MODULE or ALLOCATOR_MODULE.startswith(missing + "."):
            pytest.skip(f"kube-pysched's structured allocator ({ALLOCATOR_MODULE}) is not there")
        raise
    allocate: Callable[[JSON], JSON] = module.allocate_case
    return allocate


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    with Oracle() as running:
        yield running


def test_python_allocator_answers_as_upstream(oracle: Oracle) -> None:
    allocate_case = _allocate_case()
    differing: list[tuple[int, str, JSON, JSON, object]] = []
    for index in range(CASES):
        case = generate_case(SEED, index)
        upstream = oracle.allocate(case)
        try:
            ours: object = allocate_case(copy.deepcopy(case))
        except Exception:
            ours = {"raised": traceback.format_exc(limit=-3)}
        if (why := difference(upstream, ours)) is not None:
            differing.append((index, why, case, upstream, ours))
    if differing:
        index, why, case, upstream, ours = differing[0]
        pytest.fail(
            f"{len(differing)} of {CASES} cases (seed {SEED}) differ; the first, "
            f"generate_case({SEED}, {index}): {why}\n"
            f"case:\n{json.dumps(case)}\nupstream:\n{json.dumps(upstream)}\n"
            f"kube-pysched:\n{json.dumps(ours, default=str)}",
            pytrace=False,
        )


# --- the comparison itself (no oracle needed) ---------------------------------------------


def _answer(*results: JSON, **extra: Any) -> JSON:
    return {"allocations": [{"devices": {"results": list(results)}, **extra}]}


RESULT = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "gpu-0"}


def test_failures_compare_by_kind_not_wording() -> None:
    assert difference({"error": "upstream words"}, {"error": "other words"}) is None
    assert difference({"allocations": None, "reason": "x"}, {"allocations": None}) is None
    kinds = difference({"allocations": None}, {"error": "e"})
    assert kinds == "upstream: unsatisfiable, kube-pysched: error"
    assert difference({"error": "e"}, {"raised": "Traceback"}) is not None


def test_allocations_compare_field_for_field() -> None:
    assert difference(_answer(RESULT), _answer(RESULT, nodeSelector=None)) is None
    assert difference(_answer(RESULT), _answer({**RESULT, "tolerations": []})) is None
    other = {**RESULT, "device": "gpu-1"}
    assert difference(_answer(RESULT), _answer(other)) == "allocations differ, first at claim #0"
    admin = {**RESULT, "adminAccess": False}
    assert difference(_answer(RESULT), _answer(admin)) is not None


def test_share_ids_compare_by_which_results_share_one() -> None:
    a, b = {**RESULT, "shareID": "uid-1"}, {**RESULT, "shareID": "uid-2"}
    assert normalise(_answer(a, b)) == normalise(
        _answer({**a, "shareID": "x"}, {**b, "shareID": "y"})
    )
    assert normalise(_answer(a, b)) != normalise(
        _answer({**a, "shareID": "x"}, {**b, "shareID": "x"})
    )
