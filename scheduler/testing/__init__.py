"""A testing kit for plugins and for the scheduler itself, shipped with the package.

Everything a plugin's unit tests need, without a cluster:

* pods, nodes and PDBs parsed by the real parser: the fluent `PodWrapper`/`NodeWrapper`
  (kube-scheduler's testing/wrappers.go) and the keyword builders `make_pod`, `make_node`,
  `make_pdb` (`pod_json`/`node_json` for the raw API objects);
* `make_snapshot(nodes, pods)`: a real Snapshot and NodeTable, built through the cache;
* `FakeHandle` with `FakeApi`, `FakeRecorder` and `FakeNominator` that record every call;
* `build_plugin(SPEC, args)`: decodes args as a profile's pluginConfig would, builds the plugin;
* `run_plugin(plugin, pod, snapshot)`: PreFilter, Filter, PreScore, Score, NormalizeScore in the
  runtime's order, returning the statuses and scores (`PluginRun`).

Nothing in the scheduler itself imports this package (an import-linter contract).
"""

from scheduler.testing.builders import make_node, make_pdb, make_pod, node_json, pod_json
from scheduler.testing.fakes import FakeApi, FakeNominator, FakeRecorder, RecordedEvent
from scheduler.testing.handle import FakeHandle, build_plugin, make_snapshot
from scheduler.testing.runner import PluginRun, run_plugin
from scheduler.testing.wrappers import NodeWrapper, PodWrapper

__all__ = [
    "FakeApi",
    "FakeHandle",
    "FakeNominator",
    "FakeRecorder",
    "NodeWrapper",
    "PluginRun",
    "PodWrapper",
    "RecordedEvent",
    "build_plugin",
    "make_node",
    "make_pdb",
    "make_pod",
    "make_snapshot",
    "node_json",
    "pod_json",
    "run_plugin",
]
