"""Shared fixtures: the default catalog as a snapshot, users for admin and API tests, an empty Redis database."""

from __future__ import annotations

import os

import pytest
import redis

from errcatalog.snapshot import CatalogSnapshot


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The production hasher is deliberately slow; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _outcome_recording_off(settings):
    """The MCP pipeline records every call; tests about recording switch it on themselves."""
    settings.OUTCOMES = {**settings.OUTCOMES, "ENABLED": False}


@pytest.fixture(scope="session")
def default_document() -> dict:
    from errcatalog.catalog_document import DEFAULT_CATALOG_PATH, read_catalog_file

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


@pytest.fixture
def redis_url():
    """A Redis database of the machine's server, emptied before and after the test.

    ``ERRCATALOG_TEST_REDIS_URL`` chooses it (default: database 15 of 127.0.0.1:6379), so that parallel runs
    can each have their own. A test that needs Redis fails, never skips, when Redis is not running.
    """
    url = os.environ.get("ERRCATALOG_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()
