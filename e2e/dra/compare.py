"""Compare an allocator's answer with the oracle's, as the differential test does.

What must match: the kind of answer (satisfiable, unsatisfiable, error) and, when satisfiable,
every allocation field for field, in order. An exception raised by the allocator under test
comes in as ``{"raised": <traceback>}`` and always differs. What may differ: error and
unsatisfiable wording (kube-pysched words its own), empty lists and maps versus absent fields
(the same API object), and the value of generated share IDs (random UUIDs upstream; only which
results share one counts).
"""

from __future__ import annotations

from typing import Any

from e2e.dra.oracle import answer_kind, answers_of

JSON = dict[str, Any]


def difference_from_any(upstream: JSON, ours: object) -> str | None:
    """None when ours agrees with upstream's answer or one of its alternatives (answers of
    other pool orders), else how it differs from the first."""
    candidates = answers_of(upstream)
    if any(difference(candidate, ours) is None for candidate in candidates):
        return None
    why = difference(candidates[0], ours)
    others = len(candidates) - 1
    return f"{why} (nor like upstream's {others} other answers)" if others else why


def difference(upstream: JSON, ours: object) -> str | None:
    """None when the answers agree, else one line saying how they differ."""
    if isinstance(ours, dict) and "raised" in ours:
        return f"kube-pysched raised {str(ours['raised']).strip().splitlines()[-1]}"
    if not isinstance(ours, dict) or not ("allocations" in ours or "error" in ours):
        return f"kube-pysched's answer is not an answer: {ours!r:.200}"
    theirs, mine = answer_kind(upstream), answer_kind(ours)
    if theirs != mine:
        return f"upstream: {theirs}, kube-pysched: {mine}"
    if theirs != "satisfiable":
        return None
    expected, got = normalise(upstream["allocations"]), normalise(ours["allocations"])
    if expected == got:
        return None
    if not isinstance(got, list) or len(got) != len(expected):
        return "a different number of allocations"
    first = next(i for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g)
    return f"allocations differ, first at claim #{first}"


def normalise(value: Any) -> Any:
    """Drop empty and null fields; number share IDs by first appearance."""
    share_ids: dict[str, str] = {}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, item in node.items():
                if key == "shareID" and isinstance(item, str):
                    out[key] = share_ids.setdefault(item, f"share-{len(share_ids)}")
                    continue
                cleaned = walk(item)
                if cleaned not in (None, [], {}):
                    out[key] = cleaned
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(value)
