"""The access domain's periodic task: expired OAuth tokens and codes are deleted (django-oauth-toolkit's own sweep)."""

from __future__ import annotations

from celery import shared_task
from oauth2_provider.models import clear_expired

from errcatalog.dependencies import DELIVERY


# Daily: an expired token is refused whether or not it is still stored, so the sweep only keeps the tables small;
# retries bridge a short database outage, and a run that still fails is the next day's to do.
@shared_task(
    name="errcatalog.clear_expired_oauth_tokens",
    **DELIVERY,
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def clear_expired_oauth_tokens() -> None:
    clear_expired()
