from pathlib import Path

from e2e.bench.attempts import BOUND, FAILED, PREEMPTED, Line, main, parse_line, summarize

KLOG_FAILED = (
    'I1128 05:23:07.995509   16165 schedule_one.go:1194] "Unable to schedule pod; no fit; '
    'waiting" pod="ns/pod-21" err="0/10 nodes are available: 10 Insufficient cpu. preemption: '
    'found a potential placement for pod on node n-3, preempting 4 victims"'
)
KLOG_PREEMPTED = (
    'I1128 05:23:12.180818   16165 executor.go:310] "Async Preemption finished completely" '
    'preemptor="ns/pod-21" node="n-3" result="success"'
)
JSON_FAILED = (
    '{"pod":"ns/pod-1","err":"0/10 nodes are available: 10 Insufficient cpu. preemption: not '
    'eligible due to a terminating pod on the nominated node.","event":"unable to schedule pod; '
    'no fit; waiting","level":"info","timestamp":"2026-11-28T05:26:10.757013Z"}'
)


def test_reads_kube_scheduler_klog_lines_and_kube_pysched_json_lines() -> None:
    failed = parse_line(KLOG_FAILED)
    assert failed is not None
    assert (failed.pod, failed.kind) == ("ns/pod-21", FAILED)
    assert failed.reason.endswith("on node n-3, preempting 4 victims")
    preempted = parse_line(KLOG_PREEMPTED)
    assert preempted is not None and preempted.kind == PREEMPTED
    assert round(preempted.at - failed.at, 6) == 4.185309
    line = parse_line(JSON_FAILED)
    assert line is not None and (line.pod, line.kind) == ("ns/pod-1", FAILED)
    assert parse_line('I1128 05:23:07.995509   1 x.go:1] "Something else" pod="ns/pod-1"') is None
    assert parse_line('{"event":"informers synced"}') is None
    assert parse_line("not a log line") is None


def test_escaped_quotes_inside_a_klog_value_stay_in_the_value() -> None:
    line = parse_line(
        'I1128 05:23:07.000000   1 s.go:1] "Unable to schedule pod; no fit; waiting" '
        'pod="ns/pod-2" err="node(s) had untolerated taint {k: \\"v\\"}" x="y"'
    )
    assert line is not None and line.reason == 'node(s) had untolerated taint {k: "v"}'


def test_summary_counts_retries_reasons_and_the_wait_after_preemption() -> None:
    placement = "preemption: found a potential placement for pod on node n-{}, preempting 4 victims"
    terminating = "preemption: not eligible due to a terminating pod on the nominated node."
    lines = [
        Line(0.0, "ns/pod-0", FAILED, placement.format(1)),
        Line(0.5, "ns/pod-0", PREEMPTED),
        Line(1.0, "ns/pod-0", FAILED, terminating),  # a retry while pod-1 waits for its first
        Line(2.0, "ns/pod-1", FAILED, placement.format(2)),
        Line(2.5, "ns/pod-1", PREEMPTED),
        Line(3.0, "ns/pod-0", BOUND),
        Line(3.5, "ns/pod-1", FAILED, terminating),  # after every first attempt
        Line(6.5, "ns/pod-1", BOUND),
        Line(3.2, "ns/pod-2", BOUND),  # fit at once: the last first attempt
        Line(0.2, "ns/init-7", FAILED, terminating),  # not a measured pod
    ]

    summary = summarize(lines)

    assert (summary.pods, summary.bound, summary.failed) == (3, 3, 4)
    assert summary.reasons == {
        "found a potential placement for pod on node <node>, preempting 4 victims": 2,
        "not eligible due to a terminating pod on the nominated node": 2,
    }
    assert (summary.retries, summary.retries_during_first_pass) == (2, 1)
    assert summary.first_span_s == 3.2  # pod-0's first attempt at 0, pod-2's at 3.2
    assert summary.preempted_to_bound_median_s == 3.25  # 2.5 and 4.0


def test_a_log_without_attempt_lines_is_an_error(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet.log"
    quiet.write_text('{"event":"informers synced","timestamp":"2026-11-28T05:14:21Z"}\n')
    verbose = tmp_path / "verbose.log"
    verbose.write_text(KLOG_FAILED + "\n" + KLOG_PREEMPTED + "\n")
    assert main([str(verbose)]) == 0
    assert main([str(verbose), str(quiet)]) == 1
