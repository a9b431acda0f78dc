"""Debian packages the e2e suite needs on a fresh machine (CI's included), installed by the
project itself: `make system-packages` (a prerequisite of `make e2e`) runs
`python -m e2e.system_packages`.

* `prometheus` (prometheus, promtool): the dashboard and alert tests;
* `debootstrap`, `buildah`, `umoci`, `runc`: the container image test (e2e/image.py);
* `chromium`: the simulation report opened in headless Chromium (e2e/browser.py).

A package whose commands are already on PATH is left alone. Installing needs apt-get and root;
without them `install` raises `Unavailable` with the reason, which tests turn into a skip with
that reason (a failure where the caller says the tool is required). apt waits for another
apt-get's lock, and `apt-get update` runs only when an install fails (empty or stale lists).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

#: Debian package -> the commands it provides that the tests run.
PACKAGES: Mapping[str, tuple[str, ...]] = {
    "prometheus": ("prometheus", "promtool"),
    "debootstrap": ("debootstrap",),
    "buildah": ("buildah",),
    "umoci": ("umoci",),
    "runc": ("runc",),
    "chromium": ("chromium",),
}


class Unavailable(RuntimeError):
    """A package is missing and cannot be installed on this machine."""


def missing(packages: Sequence[str]) -> list[str]:
    return [p for p in packages if any(shutil.which(c) is None for c in PACKAGES[p])]


def _apt(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    argv = ["apt-get", "-o", "DPkg::Lock::Timeout=600", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=1200)


def install(packages: Sequence[str]) -> None:
    """Installs those of `packages` whose commands are missing; Unavailable if it cannot."""
    todo = missing(packages)
    if not todo:
        return
    names = " ".join(todo)
    if shutil.which("apt-get") is None:
        raise Unavailable(f"{names} not installed and there is no apt-get to install them")
    if os.geteuid() != 0:
        raise Unavailable(f"{names} not installed; as root: apt-get install -y {names}")
    args = ("install", "-y", "--no-install-recommends", *todo)
    result = _apt(*args)
    if result.returncode != 0:
        update = _apt("update")
        if update.returncode != 0:
            raise Unavailable(f"apt-get update failed:\n{update.stderr[-2000:]}")
        result = _apt(*args)
    if result.returncode != 0:
        raise Unavailable(
            f"apt-get install {names} failed:\n{(result.stdout + result.stderr)[-2000:]}"
        )
    still = missing(todo)
    if still:
        raise Unavailable(
            f"installed {names}, but the commands of {' '.join(still)} are not on PATH"
        )


def main() -> int:
    """Not fatal where apt cannot be used: the tests that need a package skip with the reason."""
    try:
        install(list(PACKAGES))
    except Unavailable as exc:
        print(f"*** SYSTEM PACKAGES UNAVAILABLE: {exc}", file=sys.stderr)
        return 0
    print(f"system packages present: {' '.join(PACKAGES)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
