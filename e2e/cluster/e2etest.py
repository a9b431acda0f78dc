"""Build Kubernetes' own e2e binary (``e2e.test``) of the pinned release into the version cache.

Why a second wrapper module (``<version dir>/e2e/src``) and not the control plane's: the
control-plane module's generated files and stamp stay byte for byte as they are, so adding
the e2e binary never invalidates (rebuilds) a cached control plane. The module requires
k8s.io/kubernetes with the same staging replaces, and its ``tools.go`` imports the test
package plus everything ``test/e2e``'s ``_test.go`` files import: ``go mod tidy`` does not
follow the tests of dependencies, so without those imports go.sum would lack the test-only
modules (ginkgo's reporters, the conformance test data, ...).

Like the control plane, the build runs once: a stamp is written only after the binary answered
``--version`` with the pinned version; it has its own lock, so a second caller waits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from e2e.cluster.build import (
    STAMP_NAME,
    BuildError,
    _go,
    _k8s_ldflags,
    _locked,
    _run,
    _write_stamp,
    version_dir,
    write_go_mod,
)
from e2e.cluster.versions import KUBERNETES_VERSION, KWOK_VERSION

E2E_PACKAGE = "k8s.io/kubernetes/test/e2e"
E2E_WRAPPER_MODULE = "kube-pysched/e2etest"
BINARY_NAME = "e2e.test"

_IMPORT_BLOCK = re.compile(r"^import \((.*?)^\)", re.MULTILINE | re.DOTALL)
_IMPORT_LINE = re.compile(r'^import\s+(?:[\w.]+\s+)?"([^"]+)"', re.MULTILINE)
_QUOTED = re.compile(r'"([^"]+)"')


def e2e_dir(kubernetes_version: str = KUBERNETES_VERSION) -> Path:
    """``<version dir>/e2e``: the wrapper module, build log, stamp and binary."""
    return version_dir(kubernetes_version, KWOK_VERSION) / "e2e"


def e2e_test_path(kubernetes_version: str = KUBERNETES_VERSION) -> Path:
    """Where ``e2e.test`` lives once built (it may not exist yet)."""
    return e2e_dir(kubernetes_version) / "bin" / BINARY_NAME


def is_e2e_test_built(kubernetes_version: str = KUBERNETES_VERSION) -> bool:
    """True when a completed build (stamp plus executable) is cached."""
    edir = e2e_dir(kubernetes_version)
    return (edir / STAMP_NAME).is_file() and os.access(e2e_test_path(kubernetes_version), os.X_OK)


def build_e2e_test(
    kubernetes_version: str = KUBERNETES_VERSION,
    *,
    force: bool = False,
    out: TextIO | None = None,
) -> Path:
    """Build ``e2e.test`` once (idempotent) and return its path."""
    out = out or sys.stderr
    edir = e2e_dir(kubernetes_version)
    edir.mkdir(parents=True, exist_ok=True)
    with _locked(edir / ".lock"):
        if force or not is_e2e_test_built(kubernetes_version):
            _build_locked(edir, kubernetes_version, out)
    return e2e_test_path(kubernetes_version)


def _build_locked(edir: Path, k8s: str, out: TextIO) -> None:
    (edir / STAMP_NAME).unlink(missing_ok=True)
    log = edir / "build.log"
    log.write_text(f"building {E2E_PACKAGE} of Kubernetes {k8s}\n")
    src = edir / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    timings: dict[str, float] = {}
    started = time.monotonic()
    print(f"[e2e-build] building {BINARY_NAME} into {edir} (log: {log})", file=out, flush=True)

    _write_module(src, k8s, log, out)
    _run([_go(), "mod", "tidy"], src, log, out)
    timings["tidy"] = _step(out, "generate wrapper module + go mod tidy", started)

    t0 = time.monotonic()
    partial = edir / "bin.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    binary = partial / BINARY_NAME
    cmd = [_go(), "test", "-c", "-vet=off", "-trimpath", "-ldflags", _k8s_ldflags(k8s)]
    _run([*cmd, "-o", str(binary), E2E_PACKAGE], src, log, out)
    timings["go_test_c"] = _step(out, f"go test -c {E2E_PACKAGE}", t0)

    version = _run([str(binary), "--version"], partial, log, out)
    if k8s not in version:
        raise BuildError(f"{binary} --version printed {version.strip()!r}, expected {k8s}")
    final = edir / "bin"
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    timings["total"] = time.monotonic() - started
    _write_stamp(edir, {"kubernetes": k8s, "package": E2E_PACKAGE, "seconds": timings})
    print(f"[e2e-build] done in {timings['total']:.0f}s -> {final / BINARY_NAME}", file=out)


def _step(out: TextIO, what: str, t0: float) -> float:
    elapsed = time.monotonic() - t0
    print(f"[e2e-build] {what}: {elapsed:.1f}s", file=out, flush=True)
    return elapsed


def _write_module(src: Path, k8s: str, log: Path, out: TextIO) -> None:
    """go.mod (same replaces as the control plane) and a tools.go pinning the test imports."""
    write_go_mod(src, E2E_WRAPPER_MODULE, k8s, log, out)
    imports = sorted({E2E_PACKAGE, *_test_imports(_module_dir(k8s, src.parent, log, out))})
    body = "\n".join(f'\t_ "{path}"' for path in imports)
    (src / "tools.go").write_text(
        "//go:build tools\n\n"
        f"// Package tools pins {E2E_PACKAGE} and its test imports for go mod tidy.\n"
        f"package tools\n\nimport (\n{body}\n)\n"
    )


def _module_dir(k8s: str, cwd: Path, log: Path, out: TextIO) -> Path:
    """The extracted k8s.io/kubernetes module in the Go module cache."""
    info = _run([_go(), "mod", "download", "-json", f"k8s.io/kubernetes@{k8s}"], cwd, log, out)
    return Path(json.loads(info)["Dir"])


def _test_imports(module_dir: Path) -> set[str]:
    """Non-standard-library imports of test/e2e's ``_test.go`` files."""
    found: set[str] = set()
    for path in sorted((module_dir / "test" / "e2e").glob("*_test.go")):
        text = path.read_text()
        for block in _IMPORT_BLOCK.findall(text):
            for line in block.splitlines():
                code = line.split("//", 1)[0]
                found.update(_QUOTED.findall(code))
        found.update(_IMPORT_LINE.findall(text))
    # The standard library has no dot in its first path element; the package itself is
    # imported by path already.
    return {p for p in found if "." in p.split("/", 1)[0]}
