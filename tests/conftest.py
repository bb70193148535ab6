"""Shared fixtures: the default catalog as a snapshot, users for admin and API tests, an empty Redis database; and
the slow kinds of test, marked for the fast lane. The real MCP endpoint's fixtures and a real Celery worker's are
plugins of ``tests/support`` (``pytest_plugins``), for every folder of tests that needs them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator

import pytest
import redis

from errcatalog.caching import caches_reset
from errcatalog.render.entries import CatalogSnapshot

pytest_plugins = ("tests.support.mcp_endpoint", "tests.support.celery_worker")


@pytest.fixture(autouse=True)
def _empty_process_caches():
    """Every test starts with this process's caches empty (``errcatalog.caching``): none sees another's entries."""
    caches_reset()


@pytest.fixture(scope="session", autouse=True)
def _catalog_polling_off():
    """No watcher thread polls the catalog revision in the test process: it would read the database outside the
    tests' transactions. The servers tests start in processes of their own poll as configured; a test of the
    watcher in this process switches it on with the ``settings`` fixture, which puts this value back after it."""
    from django.conf import settings

    settings.ERRCATALOG["CATALOG_POLL_SECONDS"] = 0


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The production hasher is deliberately slow; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def _outcome_spool_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("outcome-spool")


@pytest.fixture(autouse=True)
def _outcome_recording_off(settings, _outcome_spool_dir):
    """The MCP pipeline records every call; tests about recording switch it on themselves.

    Batches spooled without Redis (the REST outcome API sends even with recording off) go to a folder of the test
    session, never to the repository's ``var/``.
    """
    spool_dir = str(_outcome_spool_dir) if settings.OUTCOMES["SPOOL_DIR"] else ""
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": False, "SPOOL_DIR": spool_dir}


@pytest.fixture(scope="session")
def default_document() -> dict:
    from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
    from errcatalog.catalog.document import read_catalog_file

    return read_catalog_file(DEFAULT_CATALOG_PATH)


@pytest.fixture(scope="session")
def default_snapshot(default_document) -> CatalogSnapshot:
    return CatalogSnapshot.from_document(default_document)


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(
        username="writer", password="pw-writer", is_staff=True, is_superuser=True
    )


@pytest.fixture
def plain_user(django_user_model):
    return django_user_model.objects.create_user(username="reader", password="pw-reader")


# The environment variables through which the application itself finds Redis. The tests never read them: a
# developer's REDIS_URL points at the application's own data.
APPLICATION_REDIS_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL")


@pytest.fixture(scope="session", autouse=True)
def _no_application_redis():
    """Refuse to run with the application's Redis configured: its cache and queues would be the tests' (a test's
    ``cache.clear()`` empties the Redis database of the cache). Tests get Redis from ``redis_url`` only."""
    configured = [name for name in APPLICATION_REDIS_VARIABLES if os.environ.get(name)]
    if configured:
        pytest.exit(
            f"Unset {' and '.join(configured)} to run the tests: they would use and empty the application's Redis. "
            "Tests that need Redis use ERRCATALOG_TEST_REDIS_URL, or a redis-server of their own without it.",
            returncode=4,
        )


@pytest.fixture(scope="session")
def _test_redis_server(tmp_path_factory) -> Iterator[str]:
    """The Redis the tests may empty: ERRCATALOG_TEST_REDIS_URL, or else a ``redis-server`` of the test session's
    own on a free port (no persistence), stopped at the end. Redis databases of the machine are not touched."""
    configured = os.environ.get("ERRCATALOG_TEST_REDIS_URL")
    if configured:
        yield configured
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "These tests need Redis: set ERRCATALOG_TEST_REDIS_URL to a Redis database they may empty, or install "
            "redis-server (apt-get install redis-server) so that they start one of their own."
        )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(  # noqa: S603 (the system's redis-server, fixed arguments)
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    client.close()
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def redis_url(_test_redis_server):
    """The tests' Redis database (``_test_redis_server``), emptied before and after the test.

    Every test that uses Redis takes it from here, so parallel runs can each have their own database
    (ERRCATALOG_TEST_REDIS_URL) and no test reaches another. A test that needs Redis fails, never skips, when that
    Redis is not running.
    """
    client = redis.Redis.from_url(_test_redis_server)
    client.flushdb()
    yield _test_redis_server
    client.flushdb()
    client.close()


@pytest.fixture
def short_lived_connections():
    """Threads of the call path close their database connections after each use, so the test database can go."""
    from django.db import connection

    max_age = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = 0
    yield
    connection.settings_dict["CONN_MAX_AGE"] = max_age


@pytest.fixture(scope="session")
def dev_up(tmp_path_factory):
    """``./dev up`` serving on a free port for the session (tests/support/devup.py): what a new user starts first."""
    from tests.support import devup

    served = devup.start(tmp_path_factory.mktemp("dev-up"))
    yield served
    devup.stop(served)


# --- The slow kinds, which the fast lane leaves out ----------------------------------------------------------------

# What makes a test slow is what it starts besides this process: a real headless browser, the app served in processes
# of its own (./dev up, uvicorn, a Celery worker, a server of test fixtures), HAProxy, or real MCP servers installed
# from npm or PyPI. A test is of a kind when it asks for one of the kind's fixtures or its module holds one of the
# kind's helpers, so that a new test of a kind is marked without anyone remembering to. `./dev test --fast` runs the
# tests of no kind; `./dev test` and CI run everything.
SLOW_KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "browser": (frozenset({"sync_playwright", "async_playwright"}), frozenset()),
    "served": (
        frozenset(
            {
                "ServedApp",
                "devup",
                "embedded_environment",
                "UpstreamProcess",
                "gateway_before",
                "run_through_errcatalog",
            }
        ),
        frozenset({"dev_up", "celery_worker_process", "conformance_url", "virtual_served", "offerings_app"}),
    ),
    "haproxy": (frozenset({"HAPROXY_CFG"}), frozenset()),
    "upstreams": (
        frozenset(
            {
                "npm_package",
                "npm_program",
                "pypi_program",
                "everything_server",
                "filesystem_server",
                "git_server",
                "fetch_server",
                "time_server",
                "run_stdio",
            }
        ),
        frozenset({"everything_http"}),
    ),
}


def slow_kinds(module_names: Iterable[str], fixture_names: Iterable[str]) -> set[str]:
    """The slow kinds of a test whose module holds ``module_names`` and which asks for ``fixture_names``."""
    names, fixtures = set(module_names), set(fixture_names)
    return {kind for kind, (helpers, of_kind) in SLOW_KINDS.items() if helpers & names or of_kind & fixtures}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        module = getattr(item, "module", None)
        for kind in slow_kinds(vars(module) if module else (), getattr(item, "fixturenames", ())):
            item.add_marker(kind)
