"""The specs kube-pysched is known to fail, each with the kube-pysched plugin it waits for.

This list may only shrink: a spec that starts passing is reported loudly (and fails the CI
test) so that it is removed here; a failure of a spec not listed fails the gate.

NOT_JUDGED holds specs that test a plugin kube-pysched lacks but that it sometimes passes
anyway, through resource scoring, when the nodes happen to be equally loaded as the spec
starts (pods of the previous spec are often still being deleted with their namespace). Their
outcome is shown but decides nothing, until the named plugin lands; this list only shrinks too.
"""

from __future__ import annotations

#: Full spec name as in the report (Ginkgo's container texts and leaf text joined by spaces;
#: the e2e framework appends labels such as [Serial] to the leaf text) -> the missing
#: kube-pysched plugin and why the spec needs it.
EXPECTED_FAILURES: dict[str, str] = {}

#: Full spec name -> the plugin whose absence makes the outcome a matter of luck.
NOT_JUDGED: dict[str, str] = {}

#: The workload selection's list (runner.WORKLOAD: GenericWorkload on, the v1beta1 API served),
#: same rules: full spec name -> the missing kube-pysched piece and why the spec needs it.
EXPECTED_WORKLOAD_FAILURES: dict[str, str] = {
    "[sig-scheduling] GangScheduling [FeatureGate:GenericWorkload] should schedule pods only "
    "when quorum is reached [Beta] [Feature:OffByDefault]": (
        "GangScheduling: kube-pysched has no plugin for v1beta1 PodGroups yet (docs/gang.md; "
        "Coscheduling leaves them alone), so the first member of a minCount=2 group is bound "
        "alone within a second and Running, where the spec requires it Pending until the "
        "second member exists"
    ),
    "[sig-scheduling] WorkloadAwarePreemption [FeatureGate:GenericWorkload] workload-aware "
    "preemption should preempt entire group with All disruption mode by a pod group [Beta] "
    "[Feature:OffByDefault]": (
        "group-aware preemption: DefaultPreemption picks victims pod by pod and ignores the "
        "victims' PodGroup disruptionMode All; it preempts the one victim hp1 needs and "
        "leaves the other member of PG-victim running, where the spec requires the whole "
        "group preempted together"
    ),
}
