"""The process gives its Event recorder one writer per binding worker (scheduler/cmd/app.py):
every bound pod writes a Scheduled Event, so fewer writers than bindings in flight would leave
Events to be written after their pods are bound. Nothing is started."""

from __future__ import annotations

import pytest

from scheduler.cmd.app import App
from scheduler.cmd.options import Options
from scheduler.config.load import parse_config_text
from scheduler.plugins.registry import in_tree_registry
from scheduler.scheduler import BINDING_WORKERS

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: {parallelism}
profiles:
- schedulerName: kube-pysched
"""


@pytest.mark.parametrize(
    ("parallelism", "writers"), [(16, BINDING_WORKERS), (BINDING_WORKERS * 2, BINDING_WORKERS * 2)]
)
def test_the_recorder_has_a_writer_per_binding_worker(parallelism: int, writers: int) -> None:
    cfg = parse_config_text(CONFIG.format(parallelism=parallelism), set(in_tree_registry()))
    # Never contacted: nothing is started.
    app = App(Options(config=cfg, master="http://127.0.0.1:9"))
    try:
        assert app.recorder.senders == writers
    finally:
        app.stop()
