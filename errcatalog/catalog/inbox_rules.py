"""Rules made from the inbox of unclassified upstream failures: a suggestion, a preview and the save.

Staff pick a group (``errcatalog.gateway.models.UpstreamFailureGroup``), choose a code and adjust the suggested
pattern; ``preview`` shows, for each of the group's recent samples, the code it gets today, the code it would get
with the rule and the text the model would then read. ``rule_from_group`` saves the rule through the catalog's one
write path and removes the group when the rule classifies all its samples, so the inbox keeps only what the rules
still miss (a failure of that signature the rule does not match starts the group again).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction

from errcatalog.catalog.models import ClassificationRule, ErrorCode
from errcatalog.catalog.services import classification_rule_create
from errcatalog.gateway.models import UpstreamFailureGroup
from errcatalog.gateway.signatures import suggested_pattern
from errcatalog.render import Failure, render, tool_result
from errcatalog.render.classify import FailureFacts, classification, classify, known
from errcatalog.render.entries import CatalogSnapshot, RuleEntry
from errcatalog.render.patterns import TEXT_MAX_CHARS, PatternSet
from errcatalog.vocabulary import UNCLASSIFIED_UPSTREAM_CODES

CHANGE_REASON = "made from the inbox of unclassified upstream failures"


@dataclass(frozen=True, slots=True)
class SamplePreview:
    """What one sample gets, today and with the rule. ``text`` is the sample, for staff only."""

    text: str
    found: bool  # the rule's pattern finds the text
    code_now: str
    code_with_rule: str
    model_text: str  # what a client shows the model for the code with the rule
    classified: bool  # a specific rule chooses ``code_with_rule`` (errcatalog.render.classify.known)


def candidate_rule(group: UpstreamFailureGroup, *, code: str, pattern: str, position: int, any_tool: bool) -> RuleEntry:
    """The rule a group would get: on its upstream, its kind and (unless ``any_tool``) its tool."""
    return RuleEntry(
        position=position,
        code=code,
        upstream=group.upstream,
        tool="" if any_tool else group.tool,
        kind=group.kind,
        pattern=pattern,
    )


def suggestion(group: UpstreamFailureGroup, snapshot: CatalogSnapshot) -> dict[str, Any]:
    """The form's first values: the pattern from the group's signature, a position before the fallback it fell to."""
    return {"pattern": suggested_pattern(group.signature), "position": suggested_position(snapshot, group.kind)}


def suggested_position(snapshot: CatalogSnapshot, kind: str) -> int:
    """The highest free position before the first rule for ``kind`` that does not know what it answers (a generic
    rule, or a fallback: no pattern, an unclassified code), so the new rule is tried before the failures fall to
    either; 1 when nothing is free before it."""
    fallback = min(
        (
            r.position
            for r in snapshot.rules
            if r.active
            and r.kind in ("", kind)
            and (r.generic or (r.code in UNCLASSIFIED_UPSTREAM_CODES and not r.pattern))
        ),
        default=None,
    )
    taken = {r.position for r in snapshot.rules}
    start = (fallback if fallback is not None else max(taken, default=0) + 1) - 1
    return next((p for p in range(start, 0, -1) if p not in taken), 1)


def with_rule(snapshot: CatalogSnapshot, rule: RuleEntry) -> CatalogSnapshot:
    """``snapshot`` with ``rule`` in its place (a rule at the same position is replaced), caches fresh."""
    rules = tuple(sorted((*(r for r in snapshot.rules if r.position != rule.position), rule), key=lambda r: r.position))
    return replace(snapshot, rules=rules, version=f"{snapshot.version}+rule-preview")


def preview(
    snapshot: CatalogSnapshot, group: UpstreamFailureGroup, rule: RuleEntry, samples: list[str]
) -> list[SamplePreview]:
    """For each sample: whether the pattern finds it, its code today and with ``rule``, and the model's text then."""
    changed = with_rule(snapshot, rule)
    patterns = PatternSet([rule.pattern]) if rule.pattern else None
    previews = []
    for text in samples:
        facts = FailureFacts(upstream=group.upstream, tool=group.tool, kind=group.kind, text=text[:TEXT_MAX_CHARS])
        found = classification(changed, facts)
        code = changed.entry(found.code).code
        rendered = render(changed, Failure(code, tool_name=group.tool), pick=0.0)
        content = tool_result(rendered, "markdown")["content"]
        previews.append(
            SamplePreview(
                text=text,
                found=patterns is None or bool(patterns.matching(text)),
                code_now=snapshot.entry(classify(snapshot, facts)).code,
                code_with_rule=code,
                model_text=content[0]["text"] if content else "",
                classified=known(code, found.rule),
            )
        )
    return previews


@transaction.atomic
def rule_from_group(
    group: UpstreamFailureGroup, rule: RuleEntry, previews: list[SamplePreview], *, note: str = ""
) -> tuple[ClassificationRule, bool]:
    """Save ``rule``; remove the group when the rule classifies every sample previewed. Returns the rule and whether
    the group was removed. Raises ``ValidationError`` as the catalog's write path does (a taken position, a pattern
    RE2 refuses)."""
    created = classification_rule_create(
        change_reason=CHANGE_REASON,
        position=rule.position,
        error_code=ErrorCode.objects.get(code=rule.code),
        upstream=rule.upstream,
        tool=rule.tool,
        kind=rule.kind,
        pattern=rule.pattern,
        note=note[:200],
    )
    emptied = bool(previews) and all(p.classified for p in previews)
    if emptied:
        group.delete()
    return created, emptied
