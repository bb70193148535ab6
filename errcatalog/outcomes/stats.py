"""Which wording recovers more often, and whether the difference is more than noise. Pure functions.

Each variant of a code is a proportion: episodes that recovered out of episodes that were retried and ended.
A variant's interval is Wilson's 95 % score interval (honest at small n and near 0 % or 100 %, where the
textbook normal interval is not). The best variant is compared with the runner-up by a two-sided pooled
two-proportion z-test, or by Fisher's exact test when an expected cell count is below 5 (the usual rule under
which the normal approximation stops being trustworthy).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95 %: the 0.975 quantile of the standard normal distribution.
Z_95 = 1.959963984540054
SIGNIFICANCE = 0.05
# Fisher's exact test replaces the z-test when an expected count of a 2x2 cell is below this.
MIN_EXPECTED_FOR_Z = 5.0


@dataclass(frozen=True, slots=True)
class VariantResult:
    """One variant of one code: ``recovered`` out of ``episodes`` retried-and-ended episodes."""

    variant: str
    episodes: int
    recovered: int

    @property
    def rate(self) -> float | None:
        return self.recovered / self.episodes if self.episodes else None


@dataclass(frozen=True, slots=True)
class Comparison:
    best: str | None
    runner_up: str | None
    p_value: float | None
    significant: bool
    verdict: str


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``trials``; (0, 1) when there are no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    center = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def two_proportion_z_test(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided p-value of the pooled z-test for ``x1/n1`` against ``x2/n2``; 1.0 when it is undefined."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    pooled = (x1 + x2) / (n1 + n2)
    variance = pooled * (1 - pooled) * (1 / n1 + 1 / n2)
    if variance <= 0:
        return 1.0  # Both all-recovered or both never-recovered: no evidence of a difference.
    z = (x1 / n1 - x2 / n2) / math.sqrt(variance)
    return min(1.0, math.erfc(abs(z) / math.sqrt(2)))


def fisher_exact_test(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2x2 table [[x1, n1 - x1], [x2, n2 - x2]].

    Sums the hypergeometric probabilities of every table with the same margins that is at most as likely as the
    observed one (the convention R's ``fisher.test`` and SciPy use), with a small relative tolerance for ties.
    """
    successes, total = x1 + x2, n1 + n2
    low, high = max(0, successes - n2), min(successes, n1)

    def log_probability(k: int) -> float:
        return _log_comb(n1, k) + _log_comb(n2, successes - k) - _log_comb(total, successes)

    observed = log_probability(x1)
    p = sum(math.exp(log_probability(k)) for k in range(low, high + 1) if log_probability(k) <= observed + 1e-7)
    return min(1.0, p)


def proportion_test(x1: int, n1: int, x2: int, n2: int) -> float:
    """Fisher's exact test for small samples, the z-test otherwise (see the module docstring)."""
    successes, total = x1 + x2, n1 + n2
    if total == 0:
        return 1.0
    failures = total - successes
    smallest_expected = min(n1, n2) * min(successes, failures) / total
    if smallest_expected < MIN_EXPECTED_FOR_Z:
        return fisher_exact_test(x1, n1, x2, n2)
    return two_proportion_z_test(x1, n1, x2, n2)


def compare_variants(results: Sequence[VariantResult]) -> Comparison:
    """Compare the best variant (highest recovery rate, then most episodes) with the runner-up."""
    ranked = sorted((r for r in results if r.episodes > 0), key=lambda r: (-(r.rate or 0.0), -r.episodes, r.variant))
    if len(ranked) < 2:
        return Comparison(None, None, None, False, "Needs ended, retried episodes of at least two variants.")
    best, runner_up = ranked[0], ranked[1]
    p_value = proportion_test(best.recovered, best.episodes, runner_up.recovered, runner_up.episodes)
    significant = p_value < SIGNIFICANCE and (best.rate or 0.0) > (runner_up.rate or 0.0)
    if significant:
        verdict = (
            f"`{best.variant or 'default'}` recovers more often "
            f"({_percent(best.rate)} vs {_percent(runner_up.rate)}, {format_p(p_value)})"
        )
    else:
        verdict = f"No difference beyond noise yet ({format_p(p_value)}, need more episodes)"
    return Comparison(best.variant, runner_up.variant, p_value, significant, verdict)


def format_p(p_value: float) -> str:
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.2f}" if p_value >= 0.01 else f"p = {p_value:.3f}"


def _percent(rate: float | None) -> str:
    return f"{round((rate or 0.0) * 100)}%"


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def thompson_shares(results: Sequence[VariantResult], *, rng: random.Random, draws: int = 4000) -> dict[str, float]:
    """Each variant's share of renders under Thompson sampling: its probability of being the best.

    A variant's recovery rate has the posterior Beta(1 + recovered, 1 + failed) (a uniform prior updated by its
    episodes); the probability that it is the highest is estimated from ``draws`` joint draws, so a variant that
    is clearly better gets nearly every render and two that cannot be told apart yet split them. ``rng`` makes a run
    repeatable.
    """
    if not results:
        return {}
    wins = dict.fromkeys((r.variant for r in results), 0)
    for _ in range(draws):
        best = max(results, key=lambda r: rng.betavariate(1 + r.recovered, 1 + r.episodes - r.recovered))
        wins[best.variant] += 1
    return {name: count / draws for name, count in wins.items()}
