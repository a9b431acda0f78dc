"""The eviction API's PodDisruptionBudget check, as `kubectl drain` meets it.

`kubectl drain` evicts through `pods/eviction`, which the API server refuses when the pod's
budget allows no more disruptions (429; kubectl retries until the budget allows it or its
timeout). An eviction the API server would grant uses up one of the budget's allowed
disruptions and records the pod in `status.disruptedPods`, so a second eviction under the same
budget sees what is left, as it would live. The checks follow the eviction subresource:

* a pod that is Pending, Succeeded or Failed, or already being deleted, is evicted regardless;
* a budget without a selector covers no pod, one with an empty selector every pod of its
  namespace; a pod two budgets cover is refused (the subresource does not support it);
* a pod that is not ready is evicted without using the budget under
  `unhealthyPodEvictionPolicy: AlwaysAllow`, or under the default `IfHealthyBudget` when the
  budget's healthy pods reach its desired count;
* a budget whose status is older than its spec (`observedGeneration` behind `generation`)
  refuses, as does one with no disruptions allowed (or a negative count, or more than
  2,000 evictions its controller has not confirmed).

The budgets' status is the snapshot's: the disruption controller recounts it only as the
recreated pods become ready, which a drain's simulation does not wait for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from scheduler.api.json_types import Json
from scheduler.api.labels import LabelSelector, SelectorError

TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."
#: Evictions a budget may have pending confirmation before the subresource refuses more.
MAX_DISRUPTED_PODS = 2000
#: The eviction time recorded in `status.disruptedPods` (only its keys are read).
EPOCH = "1970-01-01T00:00:00Z"
SEVERAL = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)


def _ready(pod: Json) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


@dataclass
class Budgets:
    """The snapshot's PodDisruptionBudgets; `evict` updates their status as evictions land."""

    pdbs: list[Json] = field(default_factory=list)

    @classmethod
    def of(cls, pdbs: Iterable[Json]) -> Budgets:
        return cls(list(pdbs))

    def _covering(self, pod: Json) -> list[Json]:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        out = []
        for pdb in self.pdbs:
            if (pdb.get("metadata") or {}).get("namespace", "default") != meta.get(
                "namespace", "default"
            ):
                continue
            try:
                selector = LabelSelector.parse((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue  # the eviction subresource skips a budget it cannot read
            if selector is None or not selector.matches(labels):
                continue
            out.append(pdb)
        return out

    def evict(self, pod: Json) -> str | None:
        """None when the eviction is granted (the budget charged), else the refusal."""
        meta = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Pending", "Succeeded", "Failed") or meta.get("deletionTimestamp"):
            return None
        covering = self._covering(pod)
        if not covering:
            return None
        if len(covering) > 1:
            return SEVERAL
        pdb = covering[0]
        name = pdb["metadata"]["name"]
        spec = pdb.get("spec") or {}
        status = pdb.setdefault("status", {})
        if not _ready(pod):
            if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
                return None
            desired = int(status.get("desiredHealthy") or 0)
            if desired > 0 and int(status.get("currentHealthy") or 0) >= desired:
                return None
        generation = int(pdb["metadata"].get("generation") or 0)
        if int(status.get("observedGeneration") or 0) < generation:
            return (
                f"{TOO_MANY} The disruption budget {name} is still being processed by the server."
            )
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            return f"poddisruptionbudget {name}: pdb disruptions allowed is negative"
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            return (
                f"poddisruptionbudget {name}: DisruptedPods map too big - too many evictions "
                "not confirmed by PDB controller"
            )
        if allowed == 0:
            return (
                f"{TOO_MANY} The disruption budget {name} needs "
                f"{status.get('desiredHealthy', 0)} healthy pods and has "
                f"{status.get('currentHealthy', 0)} currently"
            )
        status["disruptionsAllowed"] = allowed - 1
        status.setdefault("disruptedPods", {})[meta["name"]] = EPOCH
        return None
