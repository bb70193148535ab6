"""Per-process caches: named, bounded in size (and optionally age), registered, and cleared by one signal.

Every cache that outlives a request in this process is declared here or registered here, so there is one place
to see them (``registered_caches``), one signal that clears those of a scope (``caches_invalidated``, sent by
``caches_invalidate``), and one function the tests call between tests (``caches_reset``). The scopes:

- ``catalog``: derived from the catalog; cleared when this process swaps in a new catalog snapshot
  (``errcatalog.catalog.snapshot``: an edit here, or a new catalog revision made anywhere).
- ``tokens``: derived from client tokens; cleared when a token is saved or deleted in this process.
- ``process``: keyed by input that never changes (a schema object, an exception class, a template text);
  cleared only by ``caches_reset``.

Pure functions over immutable input (the placeholder parser on template text, the catalog JSON Schema loader)
keep ``functools.lru_cache``/``cache``, which is clearest there, and register their ``cache_clear`` with
``register_cache``. Caches that live and die with one frozen object (a catalog snapshot's renders) are unnamed
``BoundedCache`` instances on that object. ``cached_property`` on frozen objects (``mcpserver.registry.ToolSpec``)
is not a cache of anything that can change and stays as it is.

The kernel layer: imports only the standard library and ``django.dispatch``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Literal

from django.dispatch import Signal

Scope = Literal["catalog", "tokens", "process"]

# Sent with ``scope``: every registered cache of that scope is cleared (receivers of our own may listen too).
caches_invalidated = Signal()

_registered: dict[str, tuple[Scope, Callable[[], None]]] = {}
_registry_lock = threading.Lock()


class BoundedCache[K: Hashable, V]:
    """A dict with at most ``max_entries`` entries, each served by ``get`` for at most ``max_age`` seconds.

    When full it starts over empty rather than evicting one entry: these caches hold a few hot entries, and
    starting over costs nothing on the hot path, where LRU bookkeeping would cost on every hit. Reads take no
    lock (a dict read is atomic); writes take one, so the bound holds with threads (``sync_to_async``, Celery).
    """

    __slots__ = ("_entries", "_lock", "max_age", "max_entries", "name")

    def __init__(self, name: str, *, max_entries: int, max_age: float | None = None) -> None:
        self.name = name
        self.max_entries = max_entries
        self.max_age = max_age
        self._entries: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value for ``key``, or None when absent or older than ``max_age``. An unhashable key raises
        ``TypeError``, as a dict does."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self.max_age is not None and time.monotonic() - entry[0] >= self.max_age:
            return None
        return entry[1]

    def get_with_age(self, key: K) -> tuple[V, float] | None:
        """The value for ``key`` and its age in seconds, even past ``max_age`` (to serve stale during an outage)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        return entry[1], time.monotonic() - entry[0]

    def set(self, key: K, value: V) -> None:
        with self._lock:
            if len(self._entries) >= self.max_entries and key not in self._entries:
                self._entries.clear()
            self._entries[key] = (time.monotonic(), value)

    def pop(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<BoundedCache {self.name}: {len(self._entries)}/{self.max_entries}>"


def process_cache[K: Hashable, V](
    name: str, *, scope: Scope, max_entries: int, max_age: float | None = None
) -> BoundedCache[K, V]:
    """A new ``BoundedCache`` registered under ``name`` (unique, dotted by module) and cleared with ``scope``."""
    cache: BoundedCache[K, V] = BoundedCache(name, max_entries=max_entries, max_age=max_age)
    register_cache(name, cache.clear, scope=scope)
    return cache


def register_cache(name: str, clear: Callable[[], None], *, scope: Scope = "process") -> None:
    """Register a cache kept some other way (an ``lru_cache``'s ``cache_clear``) under ``name`` and ``scope``."""
    with _registry_lock:
        if name in _registered:
            raise ValueError(f"A per-process cache named {name!r} is already registered.")
        _registered[name] = (scope, clear)


def registered_caches() -> dict[str, Scope]:
    """Every registered cache of this process by name, with its scope."""
    return {name: scope for name, (scope, _clear) in _registered.items()}


def caches_invalidate(*, scope: Scope) -> None:
    """Send ``caches_invalidated``: every registered cache of ``scope`` in this process is cleared."""
    caches_invalidated.send(sender=None, scope=scope)


def caches_reset() -> None:
    """Clear every registered cache of every scope (tests call this between tests)."""
    for _scope, clear in list(_registered.values()):
        clear()


def _clear_scope(sender: Any, *, scope: Scope, **kwargs: Any) -> None:
    for cache_scope, clear in list(_registered.values()):
        if cache_scope == scope:
            clear()


caches_invalidated.connect(_clear_scope, dispatch_uid="errcatalog.caching.clear_scope")
