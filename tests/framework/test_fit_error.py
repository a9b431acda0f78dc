from scheduler.framework.status import Code, Status
from scheduler.framework.types import Diagnosis, FitError, NodeInfo, NodeToStatus
from scheduler.testing import make_node, make_pod


def test_message_counts_reasons_sorted_as_strings_like_kube_scheduler() -> None:
    diagnosis = Diagnosis()
    diagnosis.node_to_status.set("n1", Status(Code.UNSCHEDULABLE, "Insufficient cpu"))
    diagnosis.node_to_status.set("n2", Status(Code.UNSCHEDULABLE, "Insufficient cpu"))
    for i in range(3, 6):
        diagnosis.node_to_status.set(
            f"n{i}",
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "node(s) had untolerated taint {dedicated: infra}",
            ),
        )
    err = FitError(make_pod(), 5, diagnosis)
    assert err.message() == (
        "0/5 nodes are available: 2 Insufficient cpu, "
        "3 node(s) had untolerated taint {dedicated: infra}."
    )


def test_message_includes_prefilter_and_postfilter_text() -> None:
    diagnosis = Diagnosis(pre_filter_msg="node(s) didn't satisfy plugin NodeAffinity")
    diagnosis.post_filter_msg = "preemption: not eligible due to preemptionPolicy=Never."
    err = FitError(make_pod(), 3, diagnosis)
    assert err.message() == (
        "0/3 nodes are available: node(s) didn't satisfy plugin NodeAffinity. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_absent_nodes_count_with_the_absent_status() -> None:
    diagnosis = Diagnosis()
    diagnosis.node_to_status.absent_status = Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    )
    diagnosis.node_to_status.set("n1", Status(Code.UNSCHEDULABLE, "Too many pods"))
    err = FitError(make_pod(), 12, diagnosis)
    assert err.message() == (
        "0/12 nodes are available: 1 Too many pods, "
        "11 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_nodes_with_a_code_follow_the_node_order_and_count_absent_nodes() -> None:
    """The dry run's candidate nodes: listed statuses by code, and unlisted nodes when the
    absent status has that code (PreFilter narrowed the set)."""
    infos = [NodeInfo(make_node(name)) for name in ("a", "b", "c")]
    statuses = NodeToStatus()
    statuses.set("c", Status(Code.UNSCHEDULABLE, "Insufficient cpu"))
    statuses.set("a", Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "taint"))
    assert [i.name for i in statuses.nodes_with_code(infos, Code.UNSCHEDULABLE)] == ["c"]
    statuses.absent_status = Status(Code.UNSCHEDULABLE)
    assert [i.name for i in statuses.nodes_with_code(infos, Code.UNSCHEDULABLE)] == ["b", "c"]
