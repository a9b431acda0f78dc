"""Build the DRA allocation oracle: upstream's structured allocator behind a JSON-lines CLI.

Why: kube-pysched's Python allocator must give the same allocations as upstream's on the same
inputs. The oracle links the pinned ``k8s.io/dynamic-resource-allocation`` module (the staging
version of the pinned Kubernetes release) into a small command whose source lives in the repo
(``e2e/dra/oracle/main.go``); the differential test feeds both the same cases.

Built like helm and the control plane: a generated module in the cache
(``<cache root>/dra-oracle-<version>/src``), a file lock, a stamp written only after the binary
reported the pinned module version. The stamp records a hash of ``main.go``, so an edited
oracle is rebuilt instead of a stale one answering.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from e2e.cluster.build import (
    STAMP_NAME,
    BuildError,
    _go,
    _locked,
    _run,
    _write_stamp,
    cache_root,
)
from e2e.cluster.versions import GO_DIRECTIVE, KUBERNETES_VERSION, staging_version

ALLOCATOR_MODULE = "k8s.io/dynamic-resource-allocation"
ORACLE_MODULE = "kube-pysched/dra-oracle"
BINARY_NAME = "dra-oracle"
#: The oracle's Go source, copied into the generated module at build time.
ORACLE_SOURCE = Path(__file__).resolve().parents[1] / "dra" / "oracle" / "main.go"


def oracle_version(kubernetes_version: str = KUBERNETES_VERSION) -> str:
    """The allocator module version matching a Kubernetes release (v1.37.2 -> v0.37.2)."""
    return staging_version(kubernetes_version)


def oracle_dir(version: str | None = None) -> Path:
    """``<cache root>/dra-oracle-<version>``: module, build log, stamp and binary."""
    return cache_root() / f"dra-oracle-{version or oracle_version()}"


def dra_oracle_path(version: str | None = None) -> Path:
    """Where the oracle binary lives once built (it may not exist yet)."""
    return oracle_dir(version) / "bin" / BINARY_NAME


def source_digest() -> str:
    """sha256 of the oracle's Go source, recorded in the stamp."""
    return hashlib.sha256(ORACLE_SOURCE.read_bytes()).hexdigest()


def is_dra_oracle_built(version: str | None = None) -> bool:
    """True when a completed build of the current source (stamp, binary) is cached."""
    stamp = oracle_dir(version) / STAMP_NAME
    if not stamp.is_file() or not os.access(dra_oracle_path(version), os.X_OK):
        return False
    try:
        recorded = json.loads(stamp.read_text()).get("source_sha256")
    except (OSError, ValueError):
        return False
    return bool(recorded == source_digest())


def ensure_dra_oracle(
    version: str | None = None, *, force: bool = False, out: TextIO | None = None
) -> Path:
    """Return the oracle binary, building it once per (version, source) under a lock."""
    out = out or sys.stderr
    version = version or oracle_version()
    odir = oracle_dir(version)
    odir.mkdir(parents=True, exist_ok=True)
    with _locked(odir / ".lock"):
        if force or not is_dra_oracle_built(version):
            _build_locked(odir, version, out)
    return dra_oracle_path(version)


def _build_locked(odir: Path, version: str, out: TextIO) -> None:
    (odir / STAMP_NAME).unlink(missing_ok=True)
    log = odir / "build.log"
    log.write_text(f"building the DRA oracle against {ALLOCATOR_MODULE} {version}\n")
    src = odir / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    started = time.monotonic()
    print(f"[dra-oracle] building into {odir} (log: {log})", file=out, flush=True)
    digest = source_digest()
    (src / "go.mod").write_text(
        f"module {ORACLE_MODULE}\n\ngo {GO_DIRECTIVE}\n\nrequire {ALLOCATOR_MODULE} {version}\n"
    )
    shutil.copyfile(ORACLE_SOURCE, src / "main.go")
    _run([_go(), "mod", "tidy"], src, log, out)
    tidy = _step(out, "generate module + go mod tidy", started)

    t0 = time.monotonic()
    partial = odir / "bin.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    binary = partial / BINARY_NAME
    _run([_go(), "build", "-trimpath", "-ldflags=-s -w", "-o", str(binary), "."], src, log, out)
    go_build = _step(out, "go build", t0)

    # go mod tidy may not move the allocator module (its requirements are the pinned ones), but
    # a surprise there would make the oracle answer for another release: check what got linked.
    said = _run([str(binary), "-version"], partial, log, out).strip()
    if said != f"{ALLOCATOR_MODULE} {version}":
        raise BuildError(f"{binary} -version printed {said!r}, expected {version}")
    final = odir / "bin"
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    seconds = {"tidy": tidy, "go_build": go_build, "total": time.monotonic() - started}
    _write_stamp(
        odir,
        {
            "module": ALLOCATOR_MODULE,
            "version": version,
            "source_sha256": digest,
            "seconds": seconds,
        },
    )
    print(f"[dra-oracle] done in {seconds['total']:.0f}s -> {final / BINARY_NAME}", file=out)


def _step(out: TextIO, what: str, t0: float) -> float:
    elapsed = time.monotonic() - t0
    print(f"[dra-oracle] {what}: {elapsed:.1f}s", file=out, flush=True)
    return elapsed
