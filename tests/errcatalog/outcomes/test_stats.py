"""The variant comparison statistics against values published elsewhere (R's prop.test/fisher.test, Wilson 1927)."""

from __future__ import annotations

import pytest

from errcatalog.outcomes.stats import (
    VariantResult,
    compare_variants,
    fisher_exact_test,
    format_p,
    proportion_test,
    two_proportion_z_test,
    wilson_interval,
)


def test_wilson_interval_matches_the_textbook_values():
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(72, 100) == pytest.approx((0.6251, 0.7986), abs=1e-4)


def test_wilson_interval_without_trials_is_the_whole_range():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_z_test_of_72_in_100_against_51_in_100():
    # prop.test(c(72, 51), c(100, 100), correct = FALSE): X-squared = 9.3125, p-value = 0.002276
    assert two_proportion_z_test(72, 100, 51, 100) == pytest.approx(0.002276, abs=1e-6)


def test_z_test_of_equal_proportions_is_one():
    assert two_proportion_z_test(30, 60, 50, 100) == pytest.approx(1.0)
    assert two_proportion_z_test(10, 10, 20, 20) == 1.0  # both always recover: nothing to tell apart


def test_fisher_exact_matches_r():
    # The lady tasting tea: fisher.test(matrix(c(3, 1, 1, 3), 2)) p-value = 0.4857
    assert fisher_exact_test(3, 4, 1, 4) == pytest.approx(0.485714, abs=1e-6)
    # fisher.test(matrix(c(1, 11, 9, 3), 2)) p-value = 0.002759
    assert fisher_exact_test(1, 10, 11, 14) == pytest.approx(0.002759, abs=1e-6)


def test_small_samples_use_fisher_and_large_ones_the_z_test():
    assert proportion_test(3, 4, 1, 4) == fisher_exact_test(3, 4, 1, 4)
    assert proportion_test(72, 100, 51, 100) == two_proportion_z_test(72, 100, 51, 100)


def test_a_clear_difference_names_the_better_wording():
    comparison = compare_variants([VariantResult("terse", 100, 51), VariantResult("friendly", 100, 72)])

    assert comparison.best == "friendly"
    assert comparison.runner_up == "terse"
    assert comparison.significant
    assert comparison.verdict == "`friendly` recovers more often (72% vs 51%, p = 0.002)"


def test_a_small_difference_is_called_noise():
    comparison = compare_variants([VariantResult("friendly", 20, 12), VariantResult("terse", 20, 10)])

    assert comparison.best == "friendly"
    assert not comparison.significant
    assert comparison.verdict.startswith("No difference beyond noise yet (p = 0.")
    assert comparison.verdict.endswith(", need more episodes)")


def test_one_variant_with_episodes_cannot_be_compared():
    comparison = compare_variants([VariantResult("friendly", 20, 12), VariantResult("terse", 0, 0)])

    assert comparison.best is None and comparison.p_value is None and not comparison.significant


def test_p_values_are_written_for_people():
    assert format_p(0.4) == "p = 0.40"
    assert format_p(0.0123) == "p = 0.01"
    assert format_p(0.004) == "p = 0.004"
    assert format_p(0.00001) == "p < 0.001"
