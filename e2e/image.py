"""kube-pysched's container image without a Docker engine: ``python -m e2e.image build|run``.

No registry is reachable here, so ``FROM python:3.11-slim`` (../Dockerfile, the canonical recipe)
cannot be pulled. Instead:

1. base: ``debootstrap --variant=minbase --include=python3 bookworm`` (Debian's python3 is
   3.11), committed with buildah as ``localhost/kube-pysched-base:bookworm-<key>``; built once
   and cached in buildah storage under ``~/.cache/kube-pysched/image/``;
2. wheels: kube-pysched and its dependencies with the dev venv's pip, constrained to the
   versions installed in the venv (what lint and the tests ran against);
3. ``buildah bud --isolation chroot`` of image/Containerfile (vfs storage: no overlay, no
   daemon); reused while the sources, the pins and the base are unchanged (a label holds their
   hash); exported as an OCI archive ``~/.cache/kube-pysched/image/kube-pysched-<v>.oci.tar``;
4. run: the archive is unpacked with umoci (its runtime config comes from the image config:
   user 65532:65532, the entrypoint, the environment) and run with runc, with the root
   filesystem read-only, no capabilities, the host's network namespace (the local control
   plane listens on loopback) and read-only bind mounts for kubeconfig and configuration.

Needs root and the Debian packages debootstrap, buildah, umoci and runc (crun 1.8 refuses this
host's hybrid cgroup layout; podman 4.3 puts RLIMIT_NOFILE/NPROC into every container, which
this sandbox refuses). docs/operations.md "Container image".
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.cluster.build import cache_root
from e2e.cluster.processes import ManagedProcess
from scheduler import __version__

REPO_ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = REPO_ROOT / "image" / "Containerfile"
SUITE = "bookworm"
BASE_PACKAGES = ("python3",)
DEFAULT_MIRROR = "http://deb.debian.org/debian"
IMAGE_NAME = "localhost/kube-pysched"
SOURCE_LABEL = "io.kube-pysched.source"
TOOLS = ("debootstrap", "buildah", "umoci", "runc")
APT_HINT = "apt-get install -y debootstrap buildah umoci runc"
# runc's state directory for our containers only (not the default /run/runc).
RUNC_ROOT = Path("/run/kube-pysched-runc")
# The bits of the base that no program in the image reads.
_TRIM = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
)


class ImageError(RuntimeError):
    """A step of building or running the image failed (the message says which and why)."""


def image_root() -> Path:
    return cache_root() / "image"


def host_problem() -> str | None:
    """Why the image cannot be built and run on this host, or None if it can."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"missing {', '.join(missing)} (Debian: {APT_HINT})"
    if os.geteuid() != 0:
        return "needs root (debootstrap, buildah's chroot isolation and rootful runc)"
    return None


def _run(argv: Sequence[str], what: str, *, log: Path | None = None) -> str:
    """Run a build step; its stdout, or ImageError with the tail of its output."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(a) for a in argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as fh:
            fh.write(f"$ {' '.join(map(str, argv))}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        raise ImageError(
            f"{what} failed (exit {proc.returncode}): {' '.join(map(str, argv))}\n{tail}"
        )
    _say(f"{what}: {time.monotonic() - t0:.1f}s")
    return proc.stdout


def _say(message: str) -> None:
    print(f"[image] {message}", file=sys.stderr, flush=True)


def _buildah(*args: str) -> list[str]:
    root = image_root()
    return [
        "buildah",
        "--root",
        str(root / "storage"),
        "--runroot",
        str(root / "runroot"),
        "--storage-driver",
        "vfs",
        *args,
    ]


def _image_id(ref: str) -> str | None:
    proc = subprocess.run(
        _buildah("inspect", "--type", "image", "--format", "{{.FromImageID}}", ref),
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _image_label(ref: str, label: str) -> str:
    proc = subprocess.run(
        _buildah(
            "inspect",
            "--type",
            "image",
            "--format",
            f'{{{{index .OCIv1.Config.Labels "{label}"}}}}',
            ref,
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def base_image(mirror: str = DEFAULT_MIRROR, *, force: bool = False) -> str:
    """The debootstrapped Debian base as a buildah image (built once per suite/mirror/packages)."""
    key = hashlib.sha256(f"{SUITE} {mirror} {' '.join(BASE_PACKAGES)} {_TRIM}".encode()).hexdigest()
    ref = f"localhost/kube-pysched-base:{SUITE}-{key[:12]}"
    if not force and _image_id(ref):
        return ref
    work = image_root() / f"base-{key[:12]}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rootfs = work / "rootfs"
    log = image_root() / "build.log"
    include = ",".join(BASE_PACKAGES)
    argv = ["debootstrap", "--variant=minbase", f"--include={include}", SUITE, rootfs, mirror]
    _run(argv, f"debootstrap {SUITE} ({mirror})", log=log)
    for rel in _TRIM:
        target = rootfs / rel
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    ctr = _run(_buildah("from", "scratch"), "buildah from scratch").strip()
    try:
        mnt = _run(_buildah("mount", ctr), "buildah mount").strip()
        _run(["cp", "-a", f"{rootfs}/.", f"{mnt}/"], "copy the rootfs")
        _run(_buildah("umount", ctr), "buildah umount")
        _run(
            _buildah(
                "config",
                "--env",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--env",
                "LANG=C.UTF-8",
                "--label",
                f"io.kube-pysched.base=debootstrap {SUITE} {mirror} {include}",
                ctr,
            ),
            "buildah config (base)",
        )
        _run(_buildah("commit", "--rm", ctr, ref), f"buildah commit {ref}")
    except BaseException:
        subprocess.run(_buildah("rm", ctr), capture_output=True, check=False)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ref


@dataclass(frozen=True)
class Image:
    """A built image: its reference and id, the OCI archive and the unpacked bundle."""

    ref: str
    image_id: str
    archive: Path
    bundle: Path
    config: Mapping[str, Any]  # the OCI image config's "config" (User, Entrypoint, Cmd, Env)

    @property
    def rootfs(self) -> Path:
        return self.bundle / "rootfs"


def _constraints() -> str:
    """The venv's installed versions (not kube-pysched itself) as pip constraints."""
    out = _run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], "pip freeze (pins)")
    return "".join(
        line + "\n" for line in out.splitlines() if line and not line.startswith("kube-pysched")
    )


def _source_files() -> list[Path]:
    files = [REPO_ROOT / "pyproject.toml", REPO_ROOT / "README.md", CONTAINERFILE]
    files += sorted(
        p
        for package in ("scheduler", "controller")
        for p in (REPO_ROOT / package).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    return files


def _source_key(base: str, constraints: str) -> str:
    digest = hashlib.sha256(f"{base}\n{constraints}".encode())
    for path in _source_files():
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build(mirror: str = DEFAULT_MIRROR, *, force: bool = False, force_base: bool = False) -> Image:
    """Build (or reuse) the image, export it as an OCI archive and unpack it for runc."""
    problem = host_problem()
    if problem:
        raise ImageError(problem)
    root = image_root()
    root.mkdir(parents=True, exist_ok=True)
    base = base_image(mirror, force=force_base)
    constraints = _constraints()
    key = _source_key(base, constraints)
    ref = f"{IMAGE_NAME}:{__version__}"
    archive = root / f"kube-pysched-{__version__}.oci.tar"
    if force or _image_label(ref, SOURCE_LABEL) != key or not archive.is_file():
        _build_image(ref, base, key, constraints)
        tmp = archive.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        _run(_buildah("push", ref, f"oci-archive:{tmp}:{__version__}"), "export the OCI archive")
        tmp.replace(archive)
    else:
        _say(f"reusing {ref} (sources unchanged, {key})")
    image_id = _image_id(ref)
    if image_id is None:
        raise ImageError(f"{ref} is not in {root / 'storage'} after the build")
    bundle, config = _unpack(archive, image_id)
    return Image(ref, image_id, archive, bundle, config)


def _build_image(ref: str, base: str, key: str, constraints: str) -> None:
    ctx = image_root() / "context"
    shutil.rmtree(ctx, ignore_errors=True)
    src = ctx / "src"
    src.mkdir(parents=True)
    # Build the wheel from a copy: an in-tree build would leave build/ and *.egg-info behind.
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, src / name)
    for package in ("scheduler", "controller"):
        shutil.copytree(
            REPO_ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    pins = ctx / "constraints.txt"
    pins.write_text(constraints)
    wheels = ctx / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--wheel-dir",
            wheels,
            "--constraint",
            pins,
            src,
            "pip",
        ],
        "pip wheel (kube-pysched and its dependencies)",
        log=image_root() / "build.log",
    )
    (pip_wheel,) = wheels.glob("pip-*.whl")
    pip_wheel.replace(ctx / "pip.whl")
    shutil.rmtree(src)
    pins.unlink()
    _run(
        _buildah(
            "bud",
            "--isolation",
            "chroot",
            "--layers=false",
            "--build-arg",
            f"BASE={base}",
            "--label",
            f"{SOURCE_LABEL}={key}",
            "-f",
            str(CONTAINERFILE),
            "-t",
            ref,
            str(ctx),
        ),
        f"buildah bud {ref}",
        log=image_root() / "build.log",
    )
    shutil.rmtree(ctx, ignore_errors=True)
    # The previous build of the tag, now untagged.
    subprocess.run(_buildah("rmi", "--prune"), capture_output=True, check=False)


def _unpack(archive: Path, image_id: str) -> tuple[Path, dict[str, Any]]:
    """umoci-unpack the archive into bundle-<id> (once per image); the image config."""
    root = image_root()
    bundle = root / f"bundle-{image_id[:12]}"
    config_path = bundle / "image-config.json"
    if not config_path.is_file():
        for old in root.glob("bundle-*"):
            shutil.rmtree(old, ignore_errors=True)
        layout = root / "oci-layout.tmp"
        shutil.rmtree(layout, ignore_errors=True)
        layout.mkdir()
        with tarfile.open(archive) as tar:
            tar.extractall(layout, filter="tar")
        tmp = root / "bundle.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        _run(
            ["umoci", "unpack", "--image", f"{layout}:{__version__}", tmp],
            "umoci unpack",
        )
        (tmp / "image-config.json").write_text(json.dumps(_oci_config(layout)))
        shutil.rmtree(layout)
        tmp.rename(bundle)
    config: dict[str, Any] = json.loads(config_path.read_text())
    return bundle, config


def _oci_config(layout: Path) -> dict[str, Any]:
    def blob(digest: str) -> dict[str, Any]:
        algo, hexdigest = digest.split(":", 1)
        data: dict[str, Any] = json.loads((layout / "blobs" / algo / hexdigest).read_bytes())
        return data

    index = json.loads((layout / "index.json").read_text())
    manifest = blob(index["manifests"][0]["digest"])
    config: dict[str, Any] = blob(manifest["config"]["digest"]).get("config", {})
    return config


class Container:
    """kube-pysched (or ``entrypoint``) from the image under runc: read-only root, no
    capabilities, the image's user, the host network, read-only bind mounts (dest -> source)."""

    def __init__(
        self,
        image: Image,
        args: Sequence[str],
        *,
        mounts: Mapping[str, Path] | None = None,
        entrypoint: Sequence[str] | None = None,
        workdir: Path,
        name: str = "kube-pysched",
    ) -> None:
        self.image = image
        self.name = name
        self.id = f"{name}-{uuid.uuid4().hex[:8]}"
        self.bundle = workdir / f"runc-{self.id}"
        self.log_path = workdir / f"{name}.log"
        self.process: ManagedProcess | None = None
        self.bundle.mkdir(parents=True)
        spec = self.spec(args, mounts or {}, entrypoint)
        (self.bundle / "config.json").write_text(json.dumps(spec, indent=1))

    def spec(
        self, args: Sequence[str], mounts: Mapping[str, Path], entrypoint: Sequence[str] | None
    ) -> dict[str, Any]:
        """umoci's runtime config (from the image config), locked down."""
        spec: dict[str, Any] = json.loads((self.image.bundle / "config.json").read_text())
        process = spec["process"]
        process["terminal"] = False
        entry = list(entrypoint) if entrypoint is not None else self.image.config["Entrypoint"]
        process["args"] = [*entry, *args]
        process["capabilities"] = {
            k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")
        }
        process["noNewPrivileges"] = True
        spec["root"] = {"path": str(self.image.rootfs), "readonly": True}
        spec["hostname"] = self.name
        linux = spec["linux"]
        linux["namespaces"] = [n for n in linux["namespaces"] if n["type"] != "network"]
        for dest, source in mounts.items():
            spec["mounts"].append(
                {
                    "destination": dest,
                    "type": "bind",
                    "source": str(source),
                    "options": ["rbind", "ro", "nosuid", "nodev", "noexec"],
                }
            )
        return spec

    def _argv(self) -> list[str]:
        return ["runc", "--root", str(RUNC_ROOT), "run", "--bundle", str(self.bundle), self.id]

    def run(self, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run to completion; stdout and stderr captured."""
        try:
            return subprocess.run(
                self._argv(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        finally:
            self.delete()

    def start(self) -> Container:
        """Start in the background (runc forwards SIGTERM to the container's process)."""
        self.process = ManagedProcess(self.name, self._argv(), self.log_path).start()
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def tail(self, lines: int = 60) -> str:
        return self.process.tail(lines) if self.process is not None else ""

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.process is None:
            return None
        self.process.stop(timeout)
        self.delete()
        return self.process.returncode

    def delete(self) -> None:
        """Remove runc's state for this container (killing it if it still runs)."""
        subprocess.run(
            ["runc", "--root", str(RUNC_ROOT), "delete", "--force", self.id],
            capture_output=True,
            check=False,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.image", description=__doc__)
    parser.add_argument(
        "--mirror",
        default=os.environ.get("KUBE_PYSCHED_DEBIAN_MIRROR", DEFAULT_MIRROR),
        help="Debian mirror for debootstrap ($KUBE_PYSCHED_DEBIAN_MIRROR)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="build (or reuse) the image and its OCI archive")
    p_build.add_argument("--force", action="store_true", help="rebuild the image")
    p_build.add_argument("--force-base", action="store_true", help="rebuild the Debian base too")
    p_run = sub.add_parser(
        "run", help="run kube-pysched from the image (read-only root, uid 65532, host network)"
    )
    p_run.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="SRC:DEST",
        help="read-only bind mount (repeatable)",
    )
    p_run.add_argument("args", nargs=argparse.REMAINDER, help="kube-pysched's arguments")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        image = build(
            args.mirror,
            force=getattr(args, "force", False),
            force_base=getattr(args, "force_base", False),
        )
    except ImageError as exc:
        print(f"image: {exc}", file=sys.stderr)
        return 1
    if args.command == "build":
        size = image.archive.stat().st_size / 2**20
        print(f"{image.ref} ({image.image_id[:12]}) in {time.monotonic() - t0:.1f}s")
        print(f"  OCI archive: {image.archive} ({size:.0f} MiB)")
        print(
            f"  config:      User={image.config.get('User')} "
            f"Entrypoint={image.config.get('Entrypoint')}"
        )
        print(
            f"  load it:     skopeo copy oci-archive:{image.archive} "
            f"docker-daemon:kube-pysched:{__version__}"
        )
        return 0
    mounts = {}
    for item in args.mount:
        source, _, dest = item.partition(":")
        mounts[dest] = Path(source).resolve()
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    runs = image_root() / "runs"
    runs.mkdir(exist_ok=True)
    container = Container(image, rest, mounts=mounts, workdir=runs)
    try:
        return subprocess.run(container._argv(), check=False).returncode
    finally:
        container.delete()
        with contextlib.suppress(OSError):
            shutil.rmtree(container.bundle)


if __name__ == "__main__":
    sys.exit(main())
