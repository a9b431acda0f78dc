"""Build the pinned control-plane binaries from Go modules into a per-version cache.

Why a generated wrapper module: k8s.io/kubernetes cannot be ``go install``-ed because its
go.mod replaces the staging modules with local directories. A tiny module that requires
k8s.io/kubernetes and replaces each staging module with its published v0.X.Y version builds
the real upstream commands, and etcd links from the very same dependency graph.

The build runs once per version: a stamp file is written only after every binary was built
and answered ``--version``; anything without a stamp is rebuilt from scratch. The Go module
and build caches stay in Go's default places so that they are shared with other builds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from e2e.cluster.versions import (
    GO_DIRECTIVE,
    HELM_VERSION,
    KUBERNETES_VERSION,
    KWOK_VERSION,
    SCHEDULER_PLUGINS_REPLACE_OVERRIDES,
    SCHEDULER_PLUGINS_VERSION,
    cache_key,
    staging_version,
)

#: Every binary a finished build provides.
BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
)

#: Kubernetes commands built from k8s.io/kubernetes (etcd and kwok are built separately).
K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")

STAMP_NAME = "build-complete.json"
WRAPPER_MODULE = "kube-pysched/controlplane"


class BuildError(RuntimeError):
    """The Go toolchain failed; the message carries the tail of the build log."""


def cache_root() -> Path:
    """Root of the cache: $KUBE_PYSCHED_CACHE, else $XDG_CACHE_HOME/kube-pysched, else ~/.cache."""
    override = os.environ.get("KUBE_PYSCHED_CACHE")
    if override:
        return Path(override).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "kube-pysched").resolve()


def version_dir(
    kubernetes_version: str = KUBERNETES_VERSION, kwok_version: str = KWOK_VERSION
) -> Path:
    """Directory holding one version's sources, build log, stamp and binaries."""
    return cache_root() / cache_key(kubernetes_version, kwok_version)


def bin_dir_for(
    kubernetes_version: str = KUBERNETES_VERSION, kwok_version: str = KWOK_VERSION
) -> Path:
    """Where the binaries of that version live once built (they may not exist yet)."""
    return version_dir(kubernetes_version, kwok_version) / "bin"


def is_built(
    kubernetes_version: str = KUBERNETES_VERSION, kwok_version: str = KWOK_VERSION
) -> bool:
    """True when a completed build (stamp plus every binary) is in the cache."""
    vdir = version_dir(kubernetes_version, kwok_version)
    bin_dir = vdir / "bin"
    return (vdir / STAMP_NAME).is_file() and all(
        os.access(bin_dir / name, os.X_OK) for name in BINARIES
    )


def build(
    kubernetes_version: str = KUBERNETES_VERSION,
    kwok_version: str = KWOK_VERSION,
    *,
    force: bool = False,
    out: TextIO | None = None,
) -> Path:
    """Build every binary once (idempotent) and return the bin directory.

    Concurrent callers serialise on a lock file, so two test sessions starting at the same
    time do not build twice.
    """
    out = out or sys.stderr
    vdir = version_dir(kubernetes_version, kwok_version)
    vdir.mkdir(parents=True, exist_ok=True)
    with _locked(vdir / ".lock"):
        if not force and is_built(kubernetes_version, kwok_version):
            return vdir / "bin"
        _build_locked(vdir, kubernetes_version, kwok_version, out)
    return vdir / "bin"


def ensure_kwok(kwok_version: str = KWOK_VERSION, *, out: TextIO | None = None) -> Path:
    """Return a kwok binary, building only kwok when no full build is cached.

    Used against an external cluster ($KUBECONFIG), where nothing else is needed.
    """
    out = out or sys.stderr
    full = bin_dir_for(KUBERNETES_VERSION, kwok_version) / "kwok"
    if is_built(KUBERNETES_VERSION, kwok_version):
        return full
    kdir = cache_root() / f"kwok-{kwok_version}"
    kdir.mkdir(parents=True, exist_ok=True)
    with _locked(kdir / ".lock"):
        binary = kdir / "bin" / "kwok"
        if (kdir / STAMP_NAME).is_file() and os.access(binary, os.X_OK):
            return binary
        log = kdir / "build.log"
        log.write_text("")
        _install_kwok(kwok_version, kdir / "bin", log, out)
        _write_stamp(kdir, {"kwok": kwok_version})
        return binary


def helm_path(helm_version: str = HELM_VERSION) -> Path:
    """Where that helm version's binary lives once built (it may not exist yet)."""
    return cache_root() / f"helm-{helm_version}" / "bin" / "helm"


def ensure_helm(helm_version: str = HELM_VERSION, *, out: TextIO | None = None) -> Path:
    """Return a helm binary, building it once per version with ``go install`` of its module.

    helm.sh/helm/v3/cmd/helm installs as it is (no replace directives in its go.mod); the
    version and the default Kubernetes version (``helm template``'s and ``helm lint``'s
    Capabilities, v1.20 when unset) are stamped with -ldflags as helm's own Makefile does, and
    the binary must answer ``version`` before the stamp is written. Cold (empty Go module
    and build caches) this takes about two minutes on two cores.
    """
    out = out or sys.stderr
    hdir = cache_root() / f"helm-{helm_version}"
    hdir.mkdir(parents=True, exist_ok=True)
    with _locked(hdir / ".lock"):
        binary = helm_path(helm_version)
        if (hdir / STAMP_NAME).is_file() and os.access(binary, os.X_OK):
            return binary
        log = hdir / "build.log"
        log.write_text(f"building helm {helm_version}\n")
        partial = hdir / "bin.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        t0 = time.monotonic()
        print(f"[cluster-build] building helm {helm_version} (log: {log})", file=out, flush=True)
        ldflags = _helm_ldflags(helm_version, hdir, log, out)
        env = dict(_go_env(), GOBIN=str(partial), GOFLAGS="-mod=mod")
        _run(
            [
                _go(),
                "install",
                "-trimpath",
                f"-ldflags={ldflags}",
                f"helm.sh/helm/v3/cmd/helm@{helm_version}",
            ],
            partial,
            log,
            out,
            env=env,
        )
        _run([str(partial / "helm"), "version", "--short"], partial, log, out)
        final = binary.parent
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)
        seconds = _step(out, f"go install helm {helm_version}", t0)
        _write_stamp(hdir, {"helm": helm_version, "seconds": seconds})
        return binary


def scheduler_plugins_path(version: str = SCHEDULER_PLUGINS_VERSION) -> Path:
    """Where scheduler-plugins' kube-scheduler of that version lives once built."""
    return cache_root() / f"scheduler-plugins-{version}" / "bin" / "kube-scheduler"


def scheduler_plugins_built(version: str = SCHEDULER_PLUGINS_VERSION) -> bool:
    """True when a completed scheduler-plugins build (stamp plus binary) is cached."""
    binary = scheduler_plugins_path(version)
    return (binary.parent.parent / STAMP_NAME).is_file() and os.access(binary, os.X_OK)


def ensure_scheduler_plugins(
    version: str = SCHEDULER_PLUGINS_VERSION, *, out: TextIO | None = None
) -> Path:
    """Return scheduler-plugins' kube-scheduler, building it once per version.

    Why a wrapper module: sigs.k8s.io/scheduler-plugins' go.mod pins k8s.io/kubernetes and
    its staging modules with replace directives, so ``go install ...@version`` is refused. A
    generated module requiring it, with the same (published-version) replaces, builds its
    cmd/scheduler from its release's dependency graph (save the replaces the proxy refuses, see
    versions.py). Only the gang benchmark (and its smoke test, when the binary is cached) needs
    it; cold it takes about ten minutes on two cores (the k8s v1.34 module graph downloaded,
    then compiled; see docs/benchmarks.md).
    """
    out = out or sys.stderr
    sdir = cache_root() / f"scheduler-plugins-{version}"
    sdir.mkdir(parents=True, exist_ok=True)
    with _locked(sdir / ".lock"):
        binary = scheduler_plugins_path(version)
        if scheduler_plugins_built(version):
            return binary
        (sdir / STAMP_NAME).unlink(missing_ok=True)
        log = sdir / "build.log"
        log.write_text(f"building sigs.k8s.io/scheduler-plugins {version}\n")
        t0 = time.monotonic()
        print(
            f"[cluster-build] building scheduler-plugins {version} (log: {log})",
            file=out,
            flush=True,
        )
        src = sdir / "src"
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir()
        kubernetes = _write_scheduler_plugins_module(src, version, log, out)
        _run([_go(), "mod", "tidy"], src, log, out)
        linked = _overrides_linked(src, log, out)
        tidy = _step(out, "scheduler-plugins wrapper module + go mod tidy", t0)
        partial = sdir / "bin.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        t1 = time.monotonic()
        # The Kubernetes release it links, not scheduler-plugins' own tag (which its Makefile
        # stamps): component-base derives the emulation version from gitVersion and refuses
        # to start with a "v0.34" binary version (not between 1.31 and 0.34).
        ldflags = f"-s -w -X k8s.io/component-base/version.gitVersion={kubernetes}"
        _run(
            [
                _go(),
                "build",
                "-trimpath",
                "-ldflags",
                ldflags,
                "-o",
                str(partial / "kube-scheduler"),
                f"{_SCHEDULER_PLUGINS_MODULE}/cmd/scheduler",
            ],
            src,
            log,
            out,
        )
        go_build = _step(out, "go build scheduler-plugins cmd/scheduler", t1)
        _run([str(partial / "kube-scheduler"), "--version"], partial, log, out)
        shutil.rmtree(binary.parent, ignore_errors=True)
        partial.rename(binary.parent)
        seconds = {"tidy": tidy, "go_build": go_build, "total": time.monotonic() - t0}
        overrides = dict(SCHEDULER_PLUGINS_REPLACE_OVERRIDES)
        _write_stamp(
            sdir,
            {
                "scheduler_plugins": version,
                "kubernetes": kubernetes,
                "seconds": seconds,
                "replace_overrides": overrides,
                "overridden_linked": linked,
            },
        )
        print(
            f"[cluster-build] scheduler-plugins done in {seconds['total']:.0f}s -> {binary}",
            file=out,
            flush=True,
        )
        return binary


_SCHEDULER_PLUGINS_MODULE = "sigs.k8s.io/scheduler-plugins"


def _write_scheduler_plugins_module(src: Path, version: str, log: Path, out: TextIO) -> str:
    """go.mod requiring scheduler-plugins at `version` with its own replaces carried over (a
    dependency's replaces are ignored, so the wrapper must state them), and a tools.go pinning
    its cmd/scheduler. Returns the k8s.io/kubernetes version those replaces pin."""
    mod = f"{_SCHEDULER_PLUGINS_MODULE}@{version}"
    info = _run([_go(), "mod", "download", "-json", mod], src, log, out)
    replaces = module_replaces(Path(json.loads(info)["GoMod"]).read_text())
    pinned = [ver for old, _, ver in replaces if old == "k8s.io/kubernetes"]
    if not pinned:
        raise BuildError(f"{mod}'s go.mod does not pin k8s.io/kubernetes with a replace")
    lines = [
        "module kube-pysched/scheduler-plugins",
        "",
        f"go {GO_DIRECTIVE}",
        "",
        f"require {_SCHEDULER_PLUGINS_MODULE} {version}",
        "",
        *(
            f"replace {old} => {new} {SCHEDULER_PLUGINS_REPLACE_OVERRIDES.get(old, ver)}"
            for old, new, ver in replaces
        ),
        "",
    ]
    (src / "go.mod").write_text("\n".join(lines))
    (src / "tools.go").write_text(
        "//go:build tools\n\n// Package tools pins the command built from this module.\n"
        f'package tools\n\nimport _ "{_SCHEDULER_PLUGINS_MODULE}/cmd/scheduler"\n'
    )
    return pinned[0]


def _overrides_linked(src: Path, log: Path, out: TextIO) -> list[str]:
    """The overridden modules some package of which cmd/scheduler links (those are the ones
    whose version differs from scheduler-plugins' release in the binary)."""
    deps = _run(
        [_go(), "list", "-deps", f"{_SCHEDULER_PLUGINS_MODULE}/cmd/scheduler"], src, log, out
    ).split()
    linked = sorted(
        mod
        for mod in SCHEDULER_PLUGINS_REPLACE_OVERRIDES
        if any(pkg == mod or pkg.startswith(mod + "/") for pkg in deps)
    )
    if linked:
        print(
            f"[cluster-build] scheduler-plugins links overridden modules: {', '.join(linked)}",
            file=out,
            flush=True,
        )
    return linked


def module_replaces(gomod: str) -> list[tuple[str, str, str]]:
    """The (module, replacement, version) replaces of a go.mod that point at published
    versions (single-line and block form); local-directory replaces are left out."""
    found: list[tuple[str, str, str]] = []
    in_block = False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("replace ("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        if not in_block and not line.startswith("replace "):
            continue
        parts = line.removeprefix("replace ").split()
        if len(parts) == 4 and parts[1] == "=>" and not parts[2].startswith("."):
            found.append((parts[0], parts[2], parts[3]))
    return found


def _helm_ldflags(helm_version: str, cwd: Path, log: Path, out: TextIO) -> str:
    """helm's Makefile LDFLAGS: its version, and Kubernetes 1.<client-go's minor> as the
    default KubeVersion (read from helm's go.mod, as the Makefile reads `go list -m`)."""
    mod = f"helm.sh/helm/v3@{helm_version}"
    info = _run([_go(), "mod", "download", "-json", mod], cwd, log, out)
    gomod = Path(json.loads(info)["GoMod"]).read_text()
    found = [
        line.split()[1]
        for line in gomod.splitlines()
        if line.strip().startswith("k8s.io/client-go ")
        or line.startswith("require k8s.io/client-go ")
    ]
    if not found:
        raise BuildError(f"no k8s.io/client-go requirement in {mod}'s go.mod")
    _, minor, _ = found[0].removeprefix("v").split(".", 2)
    flags = ["-s", "-w", f"-X helm.sh/helm/v3/internal/version.version={helm_version}"]
    flags.append("-X helm.sh/helm/v3/internal/version.gitTreeState=clean")
    for pkg in ("helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"):
        flags += [f"-X {pkg}.k8sVersionMajor=1", f"-X {pkg}.k8sVersionMinor={minor}"]
    return " ".join(flags)


# --- internals -------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _go() -> str:
    found = shutil.which("go") or (
        "/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None
    )
    if not found:
        raise BuildError("the Go toolchain ('go') is needed to build the control plane")
    return found


def _go_env() -> dict[str, str]:
    # GOWORK=off: a go.work in a parent directory must not capture the wrapper module.
    env = dict(os.environ, GOWORK="off")
    env.setdefault("GOTOOLCHAIN", "auto")
    return env


def _build_locked(vdir: Path, k8s: str, kwok: str, out: TextIO) -> None:
    stamp = vdir / STAMP_NAME
    stamp.unlink(missing_ok=True)
    partial = vdir / "bin.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    log = vdir / "build.log"
    log.write_text(f"building Kubernetes {k8s} and kwok {kwok}\n")
    timings: dict[str, float] = {}

    src = vdir / "src"
    shutil.rmtree(src, ignore_errors=True)
    started = time.monotonic()
    print(f"[cluster-build] building into {vdir} (log: {log})", file=out, flush=True)
    _write_wrapper_module(src, k8s, log, out)
    _run([_go(), "mod", "tidy"], src, log, out)
    timings["tidy"] = _step(out, "generate wrapper module + go mod tidy", started)

    t0 = time.monotonic()
    pkgs = [f"k8s.io/kubernetes/cmd/{c}" for c in K8S_COMMANDS] + ["./cmd/etcd"]
    _run(
        [_go(), "build", "-trimpath", "-ldflags", _k8s_ldflags(k8s), "-o", f"{partial}/", *pkgs],
        src,
        log,
        out,
    )
    timings["go_build"] = _step(out, "go build (k8s + etcd)", t0)

    t0 = time.monotonic()
    _install_kwok(kwok, partial, log, out)
    timings["kwok"] = _step(out, "go install kwok", t0)

    _verify(partial, log, out)
    final = vdir / "bin"
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    timings["total"] = time.monotonic() - started
    _write_stamp(vdir, {"kubernetes": k8s, "kwok": kwok, "seconds": timings})
    print(f"[cluster-build] done in {timings['total']:.0f}s -> {final}", file=out, flush=True)


def _step(out: TextIO, what: str, t0: float) -> float:
    elapsed = time.monotonic() - t0
    print(f"[cluster-build] {what}: {elapsed:.1f}s", file=out, flush=True)
    return elapsed


def _write_wrapper_module(src: Path, k8s: str, log: Path, out: TextIO) -> None:
    """Generate go.mod, a tools.go that pins the commands, and the etcd main package."""
    (src / "cmd" / "etcd").mkdir(parents=True)
    write_go_mod(src, WRAPPER_MODULE, k8s, log, out)
    imports = "\n".join(f'\t_ "k8s.io/kubernetes/cmd/{c}"' for c in K8S_COMMANDS)
    (src / "tools.go").write_text(
        "//go:build tools\n\n// Package tools pins the commands built from this module.\n"
        f"package tools\n\nimport (\n{imports}\n)\n"
    )
    (src / "cmd" / "etcd" / "main.go").write_text(
        "// Command etcd is etcd's own main, linked against the Kubernetes dependency graph.\n"
        'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
        "func main() { etcdmain.Main(os.Args) }\n"
    )


def write_go_mod(src: Path, module: str, k8s: str, log: Path, out: TextIO) -> None:
    """A go.mod requiring k8s.io/kubernetes at `k8s`, each staging module replaced by its
    published version (what makes the upstream commands and tests buildable from a module)."""
    staging = staging_version(k8s)
    replaces = _staging_modules(k8s, src.parent, log, out)
    lines = [
        f"module {module}",
        "",
        f"go {GO_DIRECTIVE}",
        "",
        f"require k8s.io/kubernetes {k8s}",
        "",
        *(f"replace {mod} => {mod} {staging}" for mod in replaces),
        "",
    ]
    (src / "go.mod").write_text("\n".join(lines))


def _staging_modules(k8s: str, cwd: Path, log: Path, out: TextIO) -> list[str]:
    """Modules that k8s.io/kubernetes replaces with ./staging directories."""
    info = _run([_go(), "mod", "download", "-json", f"k8s.io/kubernetes@{k8s}"], cwd, log, out)
    gomod = Path(json.loads(info)["GoMod"]).read_text()
    mods: list[str] = []
    in_block = False
    for raw in gomod.splitlines():
        line = raw.strip()
        if line.startswith("replace ("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        body = line.removeprefix("replace ").strip() if not in_block else line
        if (in_block or line.startswith("replace ")) and "=> ./staging/" in body:
            mods.append(body.split()[0])
    if not mods:
        raise BuildError(f"found no staging replaces in k8s.io/kubernetes@{k8s}'s go.mod")
    return mods


def _k8s_ldflags(k8s: str) -> str:
    """Strip symbols and stamp the release version the way Kubernetes' own build does."""
    major, minor, _ = k8s.removeprefix("v").split(".", 2)
    values = {
        "gitVersion": k8s,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
    }
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{key}={val}" for key, val in values.items()]
    return " ".join(flags)


def _install_kwok(kwok: str, dest: Path, log: Path, out: TextIO) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    env = dict(_go_env(), GOBIN=str(dest))
    _run(
        [_go(), "install", "-trimpath", "-ldflags=-s -w", f"sigs.k8s.io/kwok/cmd/kwok@{kwok}"],
        dest,
        log,
        out,
        env=env,
    )


def _verify(bin_dir: Path, log: Path, out: TextIO) -> None:
    """Every binary must at least start and print its version before the stamp is written."""
    for name in BINARIES:
        args = ["version", "--client"] if name == "kubectl" else ["--version"]
        _run([str(bin_dir / name), *args], bin_dir, log, out)


def _write_stamp(vdir: Path, data: dict[str, object]) -> None:
    tmp = vdir / (STAMP_NAME + ".tmp")
    tmp.write_text(json.dumps(dict(data, built_at=time.time()), indent=2) + "\n")
    tmp.rename(vdir / STAMP_NAME)


def _run(
    cmd: list[str], cwd: Path, log: Path, out: TextIO, env: dict[str, str] | None = None
) -> str:
    """Run a build command, appending its output to the build log; return its stdout."""
    with log.open("a") as fh:
        fh.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
        fh.flush()
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env or _go_env(),
            stdout=subprocess.PIPE,
            stderr=fh,
            text=True,
            check=False,
        )
        fh.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        print(tail, file=out)
        raise BuildError(f"{' '.join(cmd[:3])} failed (exit {proc.returncode}); log: {log}")
    return proc.stdout
