"""API clients for each kind of caller, the default catalog in the database, and outcomes to read metrics from."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.snapshot import catalog_changed
from errcatalog.outcomes import rollups
from errcatalog.outcomes.models import Episode, OutcomeRecord
from tests.support.api import CATALOG_MODELS, bearer_client, grant


@pytest.fixture(scope="package")
def _default_catalog_rows(django_db_setup, django_db_blocker):
    """The shipped default catalog, loaded once for this package the way the embedded setup loads it.

    Loading takes about half a second, so it is committed once and every test's changes are rolled back as
    usual; afterwards the rows are removed so tests elsewhere start from an empty catalog. (A
    ``transaction=True`` test here would flush them: give such a test its own loading.)
    """
    with django_db_blocker.unblock():
        call_command("catalog_load_defaults", verbosity=0)
    yield
    with django_db_blocker.unblock():
        for model in (ClassificationRule, TemplateVariant, ParameterHint, ErrorCode):
            model.objects.all().delete()
            model.history.model.objects.all().delete()


@pytest.fixture
def catalog(_default_catalog_rows, db):
    """The default catalog in the database, as the snapshot the renderer reads."""
    catalog_changed()


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    """Users are created with passwords; the production hasher's deliberate slowness buys nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def staff_client(staff_user) -> APIClient:
    client = APIClient()
    client.force_login(staff_user)
    return client


@pytest.fixture
def user_client(plain_user) -> APIClient:
    client = APIClient()
    client.force_login(plain_user)
    return client


@pytest.fixture
def bearer():
    """Makes a client that sends ``Authorization: Bearer <key>``."""
    return bearer_client


@pytest.fixture
def catalog_editor(django_user_model):
    """A user who is not staff but holds every add/change/delete permission of the catalog models."""
    user = django_user_model.objects.create_user(username="editor", password="pw-editor")
    grant(user, *(f"{a}_{m._meta.model_name}" for m in CATALOG_MODELS for a in ("add", "change", "delete")))
    return user


@pytest.fixture
def writer_client(catalog_editor) -> APIClient:
    """A token with catalog write rights whose user holds the catalog's model permissions (not staff)."""
    _token, raw_key = client_token_create(user=catalog_editor, name="ci-writer", can_write_catalog=True)
    return bearer_client(raw_key)


@pytest.fixture
def reader_client(staff_user) -> APIClient:
    """A read-only token (its user is staff: the token's flag still decides)."""
    _token, raw_key = client_token_create(user=staff_user, name="dashboard-reader")
    return bearer_client(raw_key)


@pytest.fixture
def outcomes():
    """This hour: 3 calls of send_email (1 error, interactive) by two clients, and a recovered episode."""
    now = timezone.now()
    for client, outcome in (("token:1", "ok"), ("token:1", "error"), ("token:2", "ok")):
        OutcomeRecord.objects.create(
            id=uuid.uuid4(),
            occurred_at=now,
            tool="send_email",
            client=client,
            outcome=outcome,
            code="MISSING_PARAMETER" if outcome == "error" else "",
            variant="friendly" if outcome == "error" else "",
            interactive=outcome == "error",
            latency_ms=12.0,
        )
    Episode.objects.create(
        tool="send_email",
        client="token:1",
        code="MISSING_PARAMETER",
        variant="friendly",
        started_at=now,
        last_at=now + timedelta(seconds=45),
        ended_at=now + timedelta(seconds=45),
        ending="recovered",
        retries=1,
        recovered_at_attempt=1,
        resolution_seconds=45.0,
    )
    rollups.recompute_bucket(now)
