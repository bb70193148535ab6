"""A shared service's state in one process: skipped for a second after a failure, logged once per outage."""

from __future__ import annotations

import logging
import time

import pytest
import redis

from errcatalog.dependencies import Dependency


@pytest.fixture
def cache_server(monkeypatch) -> Dependency:
    monkeypatch.setattr("errcatalog.dependencies.RETRY_SECONDS", 0.05)
    return Dependency("Cache server")


def test_a_failure_skips_the_service_until_one_caller_probes_it_again(cache_server):
    assert cache_server.available() and not cache_server.down
    cache_server.failed(redis.ConnectionError("Error 111 connecting to secret-host:6379"))
    assert cache_server.down
    assert cache_server.available() is False
    time.sleep(0.06)
    assert cache_server.available() is True  # this caller probes
    assert cache_server.available() is False  # the others keep skipping meanwhile
    cache_server.succeeded()
    assert not cache_server.down
    assert cache_server.available() is True


def test_an_outage_and_each_degradation_are_logged_once(cache_server, caplog):
    caplog.set_level(logging.WARNING, logger="errcatalog.dependencies")
    for _ in range(2):  # two outages
        for _ in range(50):  # many calls during each
            cache_server.failed(redis.ConnectionError("Error 111 connecting to secret-host:6379"))
            cache_server.degraded("the rate limit counts in each process")
            cache_server.degraded("the snapshot is kept")
        cache_server.succeeded()
        cache_server.succeeded()
    lines = [record.getMessage() for record in caplog.records]
    assert (
        lines
        == [
            "Cache server is unreachable (ConnectionError); trying again every 0.05 s",
            "Cache server is unavailable: the rate limit counts in each process",
            "Cache server is unavailable: the snapshot is kept",
            lines[3],
        ]
        * 2
    )
    assert lines[3].startswith("Cache server is reachable again after ")
    assert "secret-host" not in "\n".join(lines)  # the exception's text never reaches the log
