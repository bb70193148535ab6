"""Client tokens: bearer keys for the REST API and the MCP endpoint.

A key is shown once, when it is created; the database keeps its SHA-256 hash and its first characters (so
people can tell keys apart in lists). Keys carry 256 bits of randomness, so a plain unsalted hash is enough:
there is nothing to brute-force, and the hash can be looked up through a unique index.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from errcatalog.access.models import ClientToken

KEY_PREFIX = "ec_"
# Long enough for "ec_" + token_urlsafe(32) (43 characters) with room for a future format; anything longer
# is not one of our keys and is refused without a database query.
_MAX_KEY_LENGTH = 128
# last_used_at is for people ("is this key still used?"), so minute precision is plenty and spares a write on
# every request.
LAST_USED_PRECISION = timedelta(minutes=1)


def key_hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


@transaction.atomic
def client_token_create(
    *,
    user,
    name: str,
    tool_scope: Iterable[str] = (),
    can_write_catalog: bool = False,
    can_read_metrics: bool = False,
    can_read_catalog: bool = True,
) -> tuple[ClientToken, str]:
    """Create a token for ``user`` and return it with its raw key, which is not stored and cannot be recovered."""
    raw_key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ClientToken.objects.create(
        user=user,
        name=name,
        key_prefix=raw_key[:8],
        key_hash=key_hash(raw_key),
        tool_scope=list(dict.fromkeys(tool_scope)),
        can_write_catalog=can_write_catalog,
        can_read_metrics=can_read_metrics,
        can_read_catalog=can_read_catalog,
    )
    return token, raw_key


def client_token_authenticate(raw_key: str) -> ClientToken | None:
    """The live token for ``raw_key``, or None when the key is unknown, revoked or its user is inactive.

    The lookup is by hash, so the response time does not depend on how much of a key an attacker guessed;
    ``compare_digest`` keeps the final check constant-time as well.
    """
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) > _MAX_KEY_LENGTH:
        return None
    digest = key_hash(raw_key)
    token = ClientToken.objects.select_related("user").filter(key_hash=digest).first()
    if token is None or not hmac.compare_digest(token.key_hash, digest):
        return None
    if token.revoked_at is not None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        token.last_used_at = now
        token.save(update_fields=["last_used_at"])
    return token


def client_token_revoke(*, token: ClientToken) -> None:
    """Stop accepting the token's key from now on. Revoking twice keeps the first revocation time."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
