"""The specs kube-pysched is known to fail, each with the kube-pysched plugin it waits for.

This list may only shrink: a spec that starts passing is reported loudly (and fails the CI
test) so that it is removed here; a failure of a spec not listed fails the gate.
"""

from __future__ import annotations

#: Full spec name as in the report (Ginkgo's container texts and leaf text joined by spaces;
#: the e2e framework appends labels such as [Serial] to the leaf text) -> the missing
#: kube-pysched plugin and why the spec needs it.
EXPECTED_FAILURES: dict[str, str] = {
    "[sig-scheduling] SchedulerPreemption PodTopologySpread Preemption "
    "validates proper pods are preempted [Serial]": (
        "PodTopologySpread: without it preemption removes one low pod instead of two and "
        "the preemptor is bound against maxSkew"
    ),
}
