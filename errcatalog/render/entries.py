"""The catalog frozen into plain data: what rendering and classification read (``CatalogSnapshot``).

A snapshot is built either from a catalog document (the YAML/JSON format of ``errcatalog/catalog/data/`` and of
import/export) or, through ``errcatalog.catalog.snapshot``, from the database. Pure: no ORM, no I/O.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from errcatalog.caching import BoundedCache
from errcatalog.render.patterns import PatternSet


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
    # The question protocol's data fields, set per code by the catalog's writers.
    setup_url: str = ""
    action_required: str = ""
    optional_parameters: tuple[str, ...] = ()
    guidance: str = ""
    # The locales this code has variants in (besides the default), indexed once so that choosing one for a
    # client's Accept-Language is a few dictionary lookups per call.
    locales: frozenset[str] = frozenset()
    # By locale: the variants a weighted pick chooses among with their running weight totals, or the one variant
    # served when none has weight (``variant``), worked out on first use: an entry never changes.
    _by_weight: dict[str, tuple[tuple[VariantEntry, ...], tuple[int, ...]] | VariantEntry] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

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
        weighted = self._by_weight.get(locale)
        if weighted is None:
            weighted = self._by_weight[locale] = self._weighted(locale)
        if isinstance(weighted, VariantEntry):
            return weighted
        live, totals = weighted
        # The first variant whose running total passes ``pick`` of the whole: each is chosen by its weight's share.
        return live[min(bisect.bisect_right(totals, pick * totals[-1]), len(live) - 1)]

    def _weighted(self, locale: str) -> tuple[tuple[VariantEntry, ...], tuple[int, ...]] | VariantEntry:
        live = [v for v in self.variants if v.active and v.weight > 0 and v.locale == locale] or [
            v for v in self.variants if v.active and v.weight > 0 and v.locale == ""
        ]
        if not live:
            return ([v for v in self.variants if v.locale in (locale, "")] or list(self.variants))[0]
        return tuple(live), tuple(itertools.accumulate(v.weight for v in live))


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
    tool: str = ""
    transport: str = ""
    active: bool = True
    note: str = ""
    # How an upstream's call failed (errcatalog.vocabulary.UPSTREAM_FAILURE_KINDS), and a case-insensitive RE2
    # pattern over the failure's own text (errcatalog.render.patterns); empty: any.
    kind: str = ""
    pattern: str = ""
    # The catalog's sentence for a failure this rule matches, placed after the code's text: a template that may place
    # the facts its pattern captures (``{name}``, ``{path}``, ``{expected}``: errcatalog.render.patterns) and the
    # other placeholders; left out when a placeholder it uses has no value.
    says: str = ""
    # The rule guesses from common words ("not found" anywhere) rather than knowing a wording: what it answers still
    # counts as unclassified and goes to admin's inbox, so staff can write a rule that knows it.
    generic: bool = False


def _render_cache() -> BoundedCache[Any, Any]:
    # Distinct failures kept per snapshot; past this the cache starts over, which bounds its memory.
    return BoundedCache("snapshot.renders", max_entries=4096)


def _classify_cache() -> BoundedCache[Any, Any]:
    # Distinct facts seen per snapshot are few (one per exception type and status); the bound only guards memory.
    return BoundedCache("snapshot.classifications", max_entries=1024)


def _plan_cache() -> BoundedCache[Any, Any]:
    # Keyed like the classifications (the facts without their text), so as few; the bound only guards memory.
    return BoundedCache("snapshot.classification_plans", max_entries=1024)


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    codes: Mapping[str, CodeEntry]
    hints: Mapping[tuple[str, str], HintEntry] = field(default_factory=dict)
    rules: tuple[RuleEntry, ...] = ()
    version: str = ""
    # Rendered errors of this snapshot, keyed by failure and variant (see errcatalog.render.core.render); the values
    # are core's RenderedError, which this module cannot name (core imports it). These caches live and die with
    # the snapshot, so they are not registered: a new snapshot starts with empty ones.
    render_cache: BoundedCache[Any, Any] = field(default_factory=_render_cache, init=False, compare=False, repr=False)
    # Codes by failure facts (see errcatalog.render.classify.classify): the rules are this snapshot's, so is the answer.
    classify_cache: BoundedCache[Any, Any] = field(
        default_factory=_classify_cache, init=False, compare=False, repr=False
    )
    # For failures that carry text: by their other facts, the rules that may still match once the text is read
    # (see errcatalog.render.classify). Keyed without the text, so their number stays that of the textless facts.
    classify_plans: BoundedCache[Any, Any] = field(default_factory=_plan_cache, init=False, compare=False, repr=False)
    # The rules' patterns, compiled together on first use (``text_patterns``).
    _pattern_set: list[PatternSet] = field(default_factory=list, init=False, compare=False, repr=False)

    @property
    def text_patterns(self) -> PatternSet:
        """All the rules' patterns, compiled once for this snapshot."""
        if not self._pattern_set:
            self._pattern_set.append(PatternSet(r.pattern for r in self.rules if r.pattern))
        return self._pattern_set[0]

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
    def from_document(cls, document: Mapping[str, Any], *, version: str | None = None) -> CatalogSnapshot:
        """Build a snapshot from a catalog document that has already passed schema validation.

        ``version`` names the snapshot (the catalog revision, for one built from the database); without it, a digest
        of the document does.
        """
        codes = []
        variant_keys = _VARIANT_KEYS
        for c in document.get("codes", []):
            variants = tuple(
                VariantEntry(**{k: v for k, v in var.items() if k in variant_keys}) for var in c.get("variants", [])
            )
            values = {k: v for k, v in c.items() if k in _CODE_KEYS}
            values["http_statuses"] = tuple(values.get("http_statuses", ()))
            values["optional_parameters"] = tuple(values.get("optional_parameters", ()))
            values["locales"] = frozenset(v.locale for v in variants if v.locale and v.active)
            codes.append(CodeEntry(variants=variants, **values))
        hints = [
            HintEntry(**{k: v for k, v in h.items() if k in HintEntry.__slots__}) for h in document.get("hints", [])
        ]
        rules = [
            RuleEntry(**{k: v for k, v in r.items() if k in RuleEntry.__slots__}) for r in document.get("rules", [])
        ]
        if version is None:
            version = hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return cls.from_entries(codes, hints, rules, version=version)

    @classmethod
    def from_entries(
        cls, codes: Iterable[CodeEntry], hints: Iterable[HintEntry], rules: Iterable[RuleEntry], *, version: str
    ) -> CatalogSnapshot:
        """A snapshot of entries already built (``errcatalog.catalog.snapshot`` builds them from the database)."""
        return cls(
            codes=MappingProxyType({c.code: c for c in codes}),
            hints=MappingProxyType({(h.tool, h.parameter): h for h in hints}),
            rules=tuple(sorted(rules, key=lambda r: r.position)),
            version=version,
        )


UNKNOWN_CODE = "UNKNOWN_ERROR"
# A document's variant keys that are VariantEntry fields (a set: looked up once per key of ten thousand variants).
_VARIANT_KEYS = frozenset(VariantEntry.__slots__)
_CODE_KEYS = frozenset(f.name for f in fields(CodeEntry) if f.init) - {"variants"}
