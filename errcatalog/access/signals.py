"""Every save or delete of a client token clears this process's caches of accepted tokens at once.

Immediately, not after commit: a revocation must never wait, and a cache cleared once too often only costs one
database read per key.
"""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from errcatalog.access.models import ClientToken
from errcatalog.caching import caches_invalidate


@receiver([post_save, post_delete], sender=ClientToken, dispatch_uid="errcatalog.access.tokens_changed")
def _tokens_changed(**kwargs) -> None:
    caches_invalidate(scope="tokens")
