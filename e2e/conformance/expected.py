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
EXPECTED_WORKLOAD_FAILURES: dict[str, str] = {}

#: The DRA selection's list (runner.DRA: Kubernetes' kubelet-less DRA specs), same rules.
EXPECTED_DRA_FAILURES: dict[str, str] = {}
