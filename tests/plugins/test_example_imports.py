"""examples/node-pool, the out-of-tree plugin, uses only the plugin API: its code imports
nothing of kube-pysched but `scheduler.framework` (names of its `__all__`), its tests that and
`scheduler.testing`. The import-linter contracts cover only the in-tree packages; this parses
the example's sources instead."""

from __future__ import annotations

import ast
from pathlib import Path

import scheduler.framework as api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node-pool"
PLUGIN_API = "scheduler.framework"
TESTING_KIT = "scheduler.testing"


def _is_scheduler(module: str) -> bool:
    return module == "scheduler" or module.startswith("scheduler.")


def forbidden_imports(source: str, allow_testing: bool) -> list[str]:
    """The imports of kube-pysched in `source` other than the plugin API (and the testing kit
    when allowed), as `module` or `module.name` at line N."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            found += [f"{m} (line {node.lineno})" for m in modules if _is_scheduler(m)]
        elif isinstance(node, ast.ImportFrom) and node.module and _is_scheduler(node.module):
            module = node.module
            if allow_testing and (module == TESTING_KIT or module.startswith(TESTING_KIT + ".")):
                continue
            if module == PLUGIN_API:
                outside = [a.name for a in node.names if a.name not in api.__all__]
                found += [f"{module}.{name} (line {node.lineno})" for name in outside]
                continue
            found.append(f"{module} (line {node.lineno})")
    return found


def test_the_example_imports_only_the_plugin_api_and_in_its_tests_the_testing_kit() -> None:
    sources = sorted(
        p
        for p in EXAMPLE.rglob("*.py")
        if p.relative_to(EXAMPLE).parts[0] in ("pysched_node_pool", "tests")
    )
    assert any(p.parent.name == "pysched_node_pool" for p in sources)
    found = {
        str(path.relative_to(EXAMPLE)): forbidden
        for path in sources
        if (forbidden := forbidden_imports(path.read_text(), allow_testing="tests" in path.parts))
    }
    assert found == {}


def test_the_check_names_what_reaches_past_the_plugin_api() -> None:
    source = (
        "from scheduler.framework import Pod, NodeTable, not_exported\n"
        "from scheduler.api.objects import Node\n"
        "import scheduler.config\n"
        "from scheduler.testing import make_pod\n"
    )
    assert forbidden_imports(source, allow_testing=False) == [
        "scheduler.framework.not_exported (line 1)",
        "scheduler.api.objects (line 2)",
        "scheduler.config (line 3)",
        "scheduler.testing (line 4)",
    ]
    assert forbidden_imports(source, allow_testing=True)[-1] == "scheduler.config (line 3)"
