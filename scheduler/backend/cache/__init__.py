"""The scheduler's cache of nodes and pods (including assumed pods) and its per-cycle snapshot."""

from scheduler.backend.cache.cache import Cache, CacheError
from scheduler.backend.cache.snapshot import Snapshot

__all__ = ["Cache", "CacheError", "Snapshot"]
