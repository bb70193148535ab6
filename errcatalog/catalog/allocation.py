"""Adaptive allocation: the variants of an ``adaptive`` code get their weights from how often each one recovers.

A periodic task (``errcatalog.allocate_variants``, every ``ALLOCATION["EVERY_SECONDS"]``) runs ``allocate``: for
every active, adaptive code that is not frozen, and each locale of its variants with at least two active ones, it
reads each variant's retried, ended episodes and recoveries over the window from the daily rollups (never from raw
events), computes Thompson sampling's shares (``errcatalog.outcomes.stats.thompson_shares``) and writes them as
weights through the catalog's write path, so each change is in the variant's history (user ``errcatalog-system``,
with the numbers behind it as the reason) and reaches every process like any edit. The renderer keeps picking by
weight from its frozen snapshot: the call path is unchanged and never queries.

Only calls errcatalog served count, and outcomes reported through the API by tokens staff opted in
(``ClientToken.outcomes_count_for_allocation``): any other report is a claim nobody checked, and letting it count
would let whoever holds a reporting token choose the wording every caller gets.

Guard rails, in ``ERRCATALOG["ALLOCATION"]``: every active variant keeps ``MIN_SHARE_PERCENT`` (so it keeps being
measured); shares stay even until every active variant has ``MIN_EPISODES`` ended episodes; one run moves a share by
at most ``MAX_STEP_PERCENT`` points; ``allocation_frozen`` on a code keeps its weights as they are.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from errcatalog.access.selectors import allocation_reporter_ids
from errcatalog.catalog import services
from errcatalog.catalog.models import Allocation, ErrorCode, TemplateVariant
from errcatalog.outcomes.metrics import variant_recoveries
from errcatalog.outcomes.stats import VariantResult, thompson_shares, wilson_interval

logger = logging.getLogger("errcatalog.allocation")

# The weights the allocator writes: shares in thousandths (a variant's weight is at most 1000).
WEIGHT_SCALE = 1000
# Who the history names for the allocator's changes: a user that cannot log in.
SYSTEM_USERNAME = "errcatalog-system"


@dataclass(frozen=True, slots=True)
class Guards:
    min_share: float
    min_episodes: int
    max_step: float

    @classmethod
    def from_settings(cls) -> Guards:
        options = settings.ERRCATALOG["ALLOCATION"]
        return cls(options["MIN_SHARE_PERCENT"] / 100, options["MIN_EPISODES"], options["MAX_STEP_PERCENT"] / 100)


def next_shares(
    current: Mapping[str, float], results: Mapping[str, VariantResult], guards: Guards, *, rng: random.Random
) -> dict[str, float]:
    """The shares one run moves ``current`` (variant → share, summing to 1) to, within the guard rails."""
    names = sorted(current)
    outcomes = [results.get(name, VariantResult(name, 0, 0)) for name in names]
    if any(result.episodes < guards.min_episodes for result in outcomes):
        target = dict.fromkeys(names, 1 / len(names))  # not enough evidence yet: even shares
    else:
        target = thompson_shares(outcomes, rng=rng)
    target = floored(target, guards.min_share)
    step = guards.max_step
    moved = {name: current[name] + max(-step, min(step, target[name] - current[name])) for name in names}
    total = sum(moved.values())
    return floored({name: share / total for name, share in moved.items()}, guards.min_share)


def floored(shares: Mapping[str, float], floor: float) -> dict[str, float]:
    """``shares`` with every one at least ``floor``, the rest scaled down in proportion to make room."""
    floor = min(floor, 1 / len(shares)) if shares else floor
    result = dict(shares)
    fixed: set[str] = set()
    while True:
        low = {name for name, share in result.items() if name not in fixed and share < floor}
        if not low:
            return result
        fixed |= low
        free = [name for name in result if name not in fixed]
        room = 1 - floor * len(fixed)
        rest = sum(shares[name] for name in free)
        for name in fixed:
            result[name] = floor
        for name in free:
            result[name] = room * shares[name] / rest if rest else room / len(free)


def weights(shares: Mapping[str, float]) -> dict[str, int]:
    """Shares as variant weights (thousandths, at least 1: a weight of 0 pauses a variant)."""
    return {name: max(1, round(share * WEIGHT_SCALE)) for name, share in shares.items()}


def allocate(*, now: datetime | None = None, seed: int | str | None = None) -> list[str]:
    """One run over every adaptive code; returns a line per variant whose weight changed."""
    now = now or timezone.now()
    guards = Guards.from_settings()
    days = settings.ERRCATALOG["ALLOCATION"]["WINDOW_DAYS"]
    changes: list[str] = []
    codes = ErrorCode.objects.filter(allocation=Allocation.ADAPTIVE, allocation_frozen=False, active=True)
    reporters = allocation_reporter_ids()
    for code in codes.prefetch_related("variants"):
        results = {r.variant: r for r in variant_recoveries(code.code, days=days, now=now, counted_reporters=reporters)}
        for locale, variants in _active_by_locale(code):
            if len(variants) < 2:
                continue
            # Repeatable per run: the same window and seed give the same draws.
            rng = random.Random(f"{seed if seed is not None else now.isoformat()}:{code.code}:{locale}")  # noqa: S311
            changes.extend(_reweighted(code, variants, results, guards, rng))
    if changes:
        logger.info("Adaptive allocation changed %d weights: %s", len(changes), "; ".join(changes))
    return changes


def _active_by_locale(code: ErrorCode) -> list[tuple[str, list[TemplateVariant]]]:
    """A code's active variants, by locale (each locale's variants share renders among themselves)."""
    by_locale: dict[str, list[TemplateVariant]] = {}
    for variant in code.variants.all():
        if variant.active:
            by_locale.setdefault(variant.locale, []).append(variant)
    return sorted(by_locale.items())


@transaction.atomic
def _reweighted(
    code: ErrorCode,
    variants: Sequence[TemplateVariant],
    results: Mapping[str, VariantResult],
    guards: Guards,
    rng: random.Random,
) -> list[str]:
    total = sum(v.weight for v in variants)
    current = {v.name: (v.weight / total if total else 1 / len(variants)) for v in variants}
    shares = next_shares(current, results, guards, rng=rng)
    if all(abs(shares[name] - share) < 1 / WEIGHT_SCALE for name, share in current.items()):
        return []  # the same shares, whatever the weights' scale: nothing to record
    new = weights(shares)
    user = system_user()
    changes = []
    for variant in variants:
        weight = new[variant.name]
        if weight == variant.weight:
            continue
        result = results.get(variant.name, VariantResult(variant.name, 0, 0))
        before, after = round(100 * current[variant.name]), round(100 * weight / sum(new.values()))
        reason = f"adaptive: {before}% -> {after}% ({result.recovered}/{result.episodes} recovered)"
        variant._history_user = user  # type: ignore[attr-defined]  # read by django-simple-history
        services.template_variant_update(variant=variant, weight=weight, change_reason=reason)
        changes.append(f"{variant}: {reason}")
    return changes


def system_user() -> AbstractBaseUser:
    """The user the allocator's changes are recorded under; it cannot log in."""
    user, created = get_user_model().objects.get_or_create(
        username=SYSTEM_USERNAME, defaults={"is_active": False, "first_name": "errcatalog", "last_name": "(system)"}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


# --- What the dashboard shows --------------------------------------------------------------------------------


def allocation_report(*, now: datetime | None = None) -> list[dict[str, Any]]:
    """For each adaptive code and locale of its variants: each active variant's share now and its recovery rate with
    its 95 % interval over the allocation window, the shares over the window (from the variants' history), and the
    recoveries the allocation gained against even shares (each variant's episodes at its own rate, against all the
    episodes at the variants' mean rate; None until every variant has ended episodes)."""
    now = now or timezone.now()
    days = settings.ERRCATALOG["ALLOCATION"]["WINDOW_DAYS"]
    since = now - timedelta(days=days)
    report = []
    codes = ErrorCode.objects.filter(allocation=Allocation.ADAPTIVE, active=True).prefetch_related("variants")
    reporters = allocation_reporter_ids()
    for code in codes:
        results = {r.variant: r for r in variant_recoveries(code.code, days=days, now=now, counted_reporters=reporters)}
        for locale, variants in _active_by_locale(code):
            total = sum(v.weight for v in variants) or 1
            rows = []
            for variant in sorted(variants, key=lambda v: v.name):
                result = results.get(variant.name, VariantResult(variant.name, 0, 0))
                low, high = wilson_interval(result.recovered, result.episodes)
                rows.append(
                    {
                        "variant": variant.name,
                        "share": variant.weight / total,
                        "episodes": result.episodes,
                        "recovered": result.recovered,
                        "rate": result.rate,
                        "ci_low": low,
                        "ci_high": high,
                    }
                )
            report.append(
                {
                    "code": code.code,
                    "locale": locale,
                    "frozen": code.allocation_frozen,
                    "variants": rows,
                    "gained": _gained(rows),
                    "history": _share_history(code, variants, since, now),
                }
            )
    return report


def _gained(rows: Sequence[Mapping[str, Any]]) -> float | None:
    if len(rows) < 2 or any(not row["episodes"] for row in rows):
        return None
    mean_rate = sum(row["rate"] for row in rows) / len(rows)
    return sum(row["recovered"] for row in rows) - mean_rate * sum(row["episodes"] for row in rows)


def _share_history(
    code: ErrorCode, variants: Sequence[TemplateVariant], since: datetime, now: datetime
) -> list[dict[str, Any]]:
    """The shares as the window opened, after each change in it, and now: [{"t": ISO time, "shares": {variant:
    percent}}]. Replayed backwards from the current weights through the variants' history, so edits that left no
    history (a bulk update) cannot skew it."""
    rows = TemplateVariant.history.filter(error_code_id=code.pk, id__in=[v.pk for v in variants]).order_by(
        "history_date"
    )
    earlier: dict[int, list[int]] = {}
    in_window = []
    for row in rows.values("id", "weight", "history_date"):
        if row["history_date"] >= since:
            in_window.append((row, len(earlier.get(row["id"], []))))
        earlier.setdefault(row["id"], []).append(row["weight"])
    names = {v.pk: v.name for v in variants}
    state = {v.name: v.weight for v in variants}
    points = [{"t": now.isoformat(), "shares": _percentages(state)}]
    for row, index in reversed(in_window):
        points.append({"t": row["history_date"].isoformat(), "shares": _percentages(state)})
        if index:  # the weight before this change
            state[names[row["id"]]] = earlier[row["id"]][index - 1]
        else:  # the variant did not exist before
            state.pop(names[row["id"]], None)
    points.append({"t": since.isoformat(), "shares": _percentages(state)})
    return list(reversed(points))


def _percentages(weights: Mapping[str, int]) -> dict[str, float]:
    total = sum(weights.values()) or 1
    return {name: round(100 * weight / total, 1) for name, weight in sorted(weights.items())}
