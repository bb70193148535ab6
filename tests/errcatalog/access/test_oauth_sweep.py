"""Expired OAuth tokens are deleted daily by Celery beat; live ones stay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from errcatalog.access.tasks import clear_expired_oauth_tokens

pytestmark = pytest.mark.django_db


def test_the_daily_sweep_deletes_expired_access_tokens_only(plain_user):
    application = Application.objects.create(
        name="Claude",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://claude.ai/api/mcp/auth_callback",
    )
    now = timezone.now()
    for token, expires in (("old", now - timedelta(days=1)), ("live", now + timedelta(hours=1))):
        AccessToken.objects.create(
            user=plain_user, application=application, token=token, scope="tools", expires=expires
        )

    clear_expired_oauth_tokens.apply()

    assert [token.expires > now for token in AccessToken.objects.all()] == [True]
    assert settings.CELERY_BEAT_SCHEDULE["clear-expired-oauth-tokens"]["task"] == clear_expired_oauth_tokens.name
