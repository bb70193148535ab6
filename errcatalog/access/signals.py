"""Every save or delete of a client token, and every deleted OAuth access token (revoked, refreshed away or its grant
revoked), clears this process's caches of accepted tokens at once; a live OAuth grant deleted takes its client's
tokens with it.

Immediately, not after commit: a revocation must never wait, and a cache cleared once too often only costs one
database read per key. Except the save that only notes when a token was last used (``client_token_authenticate``,
during a check of a key): it changes nothing a check decides, and clearing then would throw away every key's
entry, and the check's own answer, whenever a token is first used in a while.
"""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from oauth2_provider.models import get_access_token_model

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import grant_tokens_delete
from errcatalog.caching import caches_invalidate

_LAST_USED_ONLY = frozenset({"last_used_at"})


@receiver([post_save, post_delete], sender=ClientToken, dispatch_uid="errcatalog.access.tokens_changed")
def _tokens_changed(*, update_fields: frozenset[str] | None = None, **kwargs) -> None:
    if update_fields == _LAST_USED_ONLY:
        return
    caches_invalidate(scope="tokens")


@receiver(post_delete, sender=get_access_token_model(), dispatch_uid="errcatalog.access.access_token_deleted")
def _access_token_deleted(**kwargs) -> None:
    caches_invalidate(scope="tokens")


@receiver(post_delete, sender=ClientToken, dispatch_uid="errcatalog.access.grant_deleted")
def _grant_deleted(*, instance: ClientToken, **kwargs) -> None:
    # A live grant deleted (in admin) takes its client's tokens with it, as revoking it does: kept, they would be
    # accepted again once its user consents to that client anew. A revoked grant's went when it was revoked; the
    # tokens its client holds now are a later grant's.
    if instance.is_grant and instance.revoked_at is None:
        grant_tokens_delete(grant=instance)
