"""kube-pysched-controller: keeps scheduler-plugins' PodGroup status (a kopf operator).

A separate process and package from the scheduler: kopf runs on asyncio, the scheduler's hot
path does not, and nothing in ``scheduler`` may import this package (an import-linter contract).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kube-pysched")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
