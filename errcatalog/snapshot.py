"""A frozen, plain-data copy of the catalog: what the renderer and classifier work from.

A snapshot is built either from a catalog document (the YAML/JSON format of ``errcatalog/data/`` and of
import/export) or from the database. Loading from the database is cached per process and invalidated through
a version counter in the Django cache, which every save of a catalog row bumps (see ``errcatalog.signals``).
A process keeps serving the snapshot it holds while Redis or the database is unreachable.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from errcatalog.dependencies import DATABASE, DATABASE_ERRORS, REDIS, REDIS_ERRORS


@dataclass(frozen=True, slots=True)
class VariantEntry:
    name: str
    message: str
    instruction: str
    cause: str = ""
    question: str = ""
    header: str = "Error"
    weight: int = 100
    locale: str = ""
    active: bool = True


@dataclass(frozen=True, slots=True)
class CodeEntry:
    code: str
    category: str
    kind: str  # "error" or "needs_input"
    variants: tuple[VariantEntry, ...]
    retryable: bool = False
    retry_after_seconds: int | None = None
    http_statuses: tuple[int, ...] = ()
    jsonrpc_code: int | None = None
    system: bool = False
    doc_url: str = ""
    explanation: str = ""
    active: bool = True
    # Seed 003's data fields, set per code by the catalog's writers.
    setup_url: str = ""
    action_required: str = ""
    optional_parameters: tuple[str, ...] = ()
    guidance: str = ""
    # The locales this code has variants in (besides the default), indexed once so that choosing one for a
    # client's Accept-Language is a few dictionary lookups per call.
    locales: frozenset[str] = frozenset()

    def variant(self, *, name: str | None = None, locale: str = "", pick: float = 0.0) -> VariantEntry:
        """Choose a variant: by name when given, else by weight (``pick`` is a number in [0, 1)).

        Variants of the requested locale win over locale-less ones; paused (weight 0) and inactive variants
        are chosen only by name.
        """
        if name is not None:
            named = [v for v in self.variants if v.name == name]
            for wanted in (locale, ""):
                for v in named:
                    if v.locale == wanted:
                        return v
            raise KeyError(f"{self.code} has no variant {name!r}")
        live = [v for v in self.variants if v.active and v.weight > 0 and v.locale == locale] or [
            v for v in self.variants if v.active and v.weight > 0 and v.locale == ""
        ]
        if not live:
            live = [v for v in self.variants if v.locale in (locale, "")] or list(self.variants)
            return live[0]
        threshold = pick * sum(v.weight for v in live)
        for v in live:
            threshold -= v.weight
            if threshold < 0:
                return v
        return live[-1]


@dataclass(frozen=True, slots=True)
class HintEntry:
    tool: str
    parameter: str
    description: str = ""
    parameter_type: str = ""
    example: str = ""
    question: str = ""


@dataclass(frozen=True, slots=True)
class RuleEntry:
    position: int
    code: str
    exception: str = ""
    status_min: int | None = None
    status_max: int | None = None
    jsonrpc_code: int | None = None
    upstream: str = ""
    transport: str = ""
    active: bool = True
    note: str = ""


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    codes: Mapping[str, CodeEntry]
    hints: Mapping[tuple[str, str], HintEntry] = field(default_factory=dict)
    rules: tuple[RuleEntry, ...] = ()
    version: str = ""
    # Rendered errors of this snapshot, keyed by failure and variant (see errcatalog.render.core.render).
    render_cache: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    # Codes by failure facts (see errcatalog.classify.classify): the rules are this snapshot's, so is the answer.
    classify_cache: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def entry(self, code: str) -> CodeEntry:
        """The entry for ``code``; an unknown or inactive code falls back to UNKNOWN_ERROR."""
        found = self.codes.get(code)
        if found is None or not found.active:
            found = self.codes.get(UNKNOWN_CODE)
        if found is None:
            raise LookupError(f"The catalog has neither {code} nor {UNKNOWN_CODE}.")
        return found

    def hint(self, tool: str | None, parameter: str) -> HintEntry | None:
        if tool is None:
            return None
        return self.hints.get((tool, parameter))

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> CatalogSnapshot:
        """Build a snapshot from a catalog document that has already passed schema validation."""
        codes = {}
        for c in document.get("codes", []):
            variants = tuple(
                VariantEntry(**{k: v for k, v in var.items() if k in VariantEntry.__slots__})
                for var in c.get("variants", [])
            )
            fields = {k: v for k, v in c.items() if k in CodeEntry.__slots__ and k != "variants"}
            fields["http_statuses"] = tuple(fields.get("http_statuses", ()))
            fields["optional_parameters"] = tuple(fields.get("optional_parameters", ()))
            fields["locales"] = frozenset(v.locale for v in variants if v.locale and v.active)
            codes[c["code"]] = CodeEntry(variants=variants, **fields)
        hints = {
            (h["tool"], h["parameter"]): HintEntry(**{k: v for k, v in h.items() if k in HintEntry.__slots__})
            for h in document.get("hints", [])
        }
        rules = tuple(
            sorted(
                (
                    RuleEntry(**{k: v for k, v in r.items() if k in RuleEntry.__slots__})
                    for r in document.get("rules", [])
                ),
                key=lambda r: r.position,
            )
        )
        digest = hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return cls(codes=MappingProxyType(codes), hints=MappingProxyType(hints), rules=rules, version=digest)


UNKNOWN_CODE = "UNKNOWN_ERROR"

# --- Database-backed snapshot, cached per process ---------------------------------------------------------

VERSION_CACHE_KEY = "errcatalog:catalog-version"
# How long a process trusts its snapshot before asking the shared cache whether the catalog changed: an edit
# in admin reaches every web process within this many seconds, at one cache read per second per process.
RECHECK_SECONDS = 1.0
# The version a snapshot carries when it was kept (or loaded) while Redis was unreachable. The shared version is
# never empty, so the first check after Redis returns differs from it: the process reloads, and bumps the shared
# version so that processes which did not notice the outage reload too (an edit may have been made meanwhile).
_UNCHECKED = ""

_lock = threading.Lock()
_cached: tuple[str, float, CatalogSnapshot] | None = None


def catalog_snapshot() -> CatalogSnapshot:
    """The current catalog from the database, rebuilt only when an edit has bumped the shared version.

    Neither Redis nor the database is needed once a snapshot is loaded: while Redis is unreachable the process
    serves the snapshot it holds (reloading when Redis is back), and while the database is, the last one built.
    """
    global _cached
    now = time.monotonic()
    cached = _cached
    if cached is not None and now - cached[1] < RECHECK_SECONDS:
        return cached[2]
    version = _shared_version(recovering=cached is not None and cached[0] == _UNCHECKED)
    if version is None:
        REDIS.degraded("the catalog is served from the snapshot this process holds until Redis is back")
        if cached is not None:
            _cached = (_UNCHECKED, now, cached[2])
            return cached[2]
    version = version or _UNCHECKED
    if cached is not None and cached[0] == version:
        _cached = (version, now, cached[2])
        return cached[2]
    with _lock:
        from errcatalog.catalog_document import catalog_document_from_db

        try:
            snapshot = CatalogSnapshot.from_document(catalog_document_from_db())
        except DATABASE_ERRORS as exc:
            if cached is None:
                raise
            DATABASE.failed(exc)
            DATABASE.degraded("the catalog is served from the snapshot this process holds")
            # The old version stays, so the next check (in a second) tries to rebuild again.
            _cached = (cached[0], now, cached[2])
            return cached[2]
        _cached = (version, now, snapshot)
    return snapshot


def _shared_version(*, recovering: bool) -> str | None:
    """The catalog version in the shared cache (created when missing), or None while Redis is unreachable."""
    from django.core.cache import cache

    if not REDIS.available():
        return None
    try:
        if recovering:
            version = str(time.time_ns())
            cache.set(VERSION_CACHE_KEY, version, timeout=None)
        else:
            version = cache.get(VERSION_CACHE_KEY)
            if version is None:
                version = str(time.time_ns())
                cache.add(VERSION_CACHE_KEY, version, timeout=None)
                version = cache.get(VERSION_CACHE_KEY, version)
    except REDIS_ERRORS as exc:
        REDIS.failed(exc)
        return None
    REDIS.succeeded()
    return version


def catalog_changed() -> None:
    """Mark the catalog as edited so every process rebuilds its snapshot."""
    global _cached
    from django.core.cache import cache

    _cached = None
    try:
        cache.set(VERSION_CACHE_KEY, str(time.time_ns()), timeout=None)
    except REDIS_ERRORS as exc:
        # This process rebuilds now; it bumps the shared version when it sees Redis again (``_UNCHECKED``).
        REDIS.failed(exc)
        REDIS.degraded("catalog edits reach the other processes when Redis is back")


def catalog_snapshot_held() -> bool:
    """Whether this process holds a catalog snapshot (it can answer MCP calls without the database)."""
    return _cached is not None


async def acatalog_snapshot() -> CatalogSnapshot:
    """``catalog_snapshot`` for async code: no thread hop while this process's snapshot is fresh."""
    cached = _cached
    if cached is not None and time.monotonic() - cached[1] < RECHECK_SECONDS:
        return cached[2]
    from asgiref.sync import sync_to_async

    return await sync_to_async(_catalog_snapshot_in_thread, thread_sensitive=False)()


def _catalog_snapshot_in_thread() -> CatalogSnapshot:
    # Outside Django's request cycle nobody else tidies this worker thread's connection.
    from django.db import close_old_connections

    close_old_connections()
    try:
        return catalog_snapshot()
    finally:
        close_old_connections()
