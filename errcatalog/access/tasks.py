"""The access domain's periodic task: expired OAuth tokens and codes are deleted (django-oauth-toolkit's own sweep)."""

from __future__ import annotations

from celery import shared_task
from oauth2_provider.models import clear_expired


# Daily: an expired token is refused whether or not it is still stored, so the sweep only keeps the tables small.
@shared_task(name="errcatalog.clear_expired_oauth_tokens", ignore_result=True)
def clear_expired_oauth_tokens() -> None:
    clear_expired()
