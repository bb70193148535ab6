"""Values an upstream sends are bounded before use: Retry-After of any shape, status codes outside 100-599."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errcatalog.errors import (
    ApiError,
    ApiRateLimitError,
    ApiServerError,
    bounded_retry_after,
    create_api_error,
    http_status,
    parse_retry_after,
)
from errcatalog.render.classify import classify, facts_from_exception

NOW = 1_800_000_000.0
MAXIMUM = 3600


def http_date(seconds_from_now: float) -> str:
    return format_datetime(datetime.fromtimestamp(NOW + seconds_from_now, UTC), usegmt=True)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120),
        (" 7 ", 7),
        (30, 30),
        (2.5, 3),
        ("0", 0),
        (str(10**12), 10**12),
        (http_date(90), 90),
        (http_date(-90), None),
        ("-5", None),
        (-5, None),
        ("²", None),
        ("١٢", None),
        ("soon", None),
        ("", None),
        (None, None),
        (True, None),
        (float("inf"), None),
        (float("nan"), None),
        ("9" * 100, None),
        ("Wed, 99 Foo 2026 99:99:99 GMT", None),
        ("Wed, 21 Oct 2026 07:28:00", None),
        (b"60", 60),
        ({"x": 1}, None),
    ],
)
def test_retry_after_of_any_shape(value, seconds):
    assert parse_retry_after(value, now=NOW) == seconds


@given(st.one_of(st.text(max_size=80), st.integers(), st.floats(), st.binary(max_size=80), st.none()))
def test_a_bounded_retry_after_is_between_one_second_and_the_maximum(value):
    parsed = parse_retry_after(value, now=NOW)
    assert parsed is None or (isinstance(parsed, int) and parsed >= 0)
    hint = bounded_retry_after(parsed if parsed is not None else 60, maximum=MAXIMUM)
    assert 1 <= hint <= MAXIMUM


@given(st.integers())
def test_status_codes_outside_100_to_599_are_unknown(status):
    assert http_status(status) == (status if 100 <= status <= 599 else None)


@pytest.mark.parametrize("status", [0, 99, 600, 700, 999, -500, 10**12, "503", 503.0, True, None])
def test_an_impossible_status_classifies_as_unknown_not_by_its_range(default_snapshot, status):
    error = create_api_error(status, "upstream answered something", retry_after="5")

    assert type(error) is ApiError and error.status_code is None
    assert facts_from_exception(error).status_code is None
    assert classify(default_snapshot, facts_from_exception(error)) == "UNKNOWN_ERROR"


@pytest.mark.parametrize("retry_after", ["²", "soon", "-1", str(10**12), "Wed, 21 Oct 2015 07:28:00 GMT", None])
def test_a_429_with_any_retry_after_is_a_rate_limit(default_snapshot, retry_after):
    error = create_api_error(429, "slow down", retry_after=retry_after)

    assert isinstance(error, ApiRateLimitError)
    assert classify(default_snapshot, facts_from_exception(error)) == "RATE_LIMIT"


def test_errors_built_directly_are_bounded_too():
    error = ApiServerError(1000, retry_after="garbage")

    assert (error.status_code, error.retry_after) == (None, None)
    assert ApiServerError(503, retry_after=time.time() * 0 + 12).retry_after == 12
    assert parse_retry_after(http_date(3600), now=NOW) == 3600
    assert parse_retry_after(format_datetime(datetime.now(UTC) + timedelta(seconds=100), usegmt=True)) in range(95, 101)
