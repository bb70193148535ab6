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
from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

from errcatalog.access.models import ClientToken

KEY_PREFIX = "ec_"
# Long enough for "ec_" + token_urlsafe(32) (43 characters) with room for a future format; anything longer
# is not one of our keys and is refused without a database query.
_MAX_KEY_LENGTH = 128
# last_used_at is for people ("is this key still used?"), so minute precision is plenty and spares a write on
# every request.
LAST_USED_PRECISION = timedelta(minutes=1)


# Adaptive allocation rewrites variant weights, so counting a reporter's outcomes towards it is a right of those who
# may change weights themselves.
ALLOCATION_OPT_IN_PERMISSION = "errcatalog.change_templatevariant"
OTHER_USERS_MESSAGE = "Only superusers create or change tokens of other users; choose yourself as the user."
METRICS_NOT_HELD_MESSAGE = "Only staff users may give a token metrics read access."
ALLOCATION_NOT_HELD_MESSAGE = (
    "Counting a token's reported outcomes towards adaptive allocation needs the permission to change variants."
)


class TokenGrantRefused(Exception):
    """A person asked for a token beyond their own rights; the message says which rule, in our own words."""


def client_token_grant_denial(
    *, grantor, owner, can_read_metrics: bool = False, outcomes_count_for_allocation: bool = False
) -> str | None:
    """Why ``grantor`` may not hold a token of ``owner`` with these rights, or None when it may.

    A token acts as its owner, so a token of someone else is that person's identity: only superusers create or
    change tokens of other users, and nobody else gives a token more than they hold themselves. Metrics go to
    staff only (their tokens read metrics anyway); the allocation opt-in needs the permission to change variants.
    Catalog writes need no rule here: a token writes only as far as its owner's model permissions go, checked at
    every request (``errcatalog.web.api.permissions``), and reporting outcomes stays within the token's tool scope.
    A tool scope and a list of servers only ever narrow what a token may do (its owner may use every tool and
    server), so they need no rule either.
    """
    if grantor.is_superuser:
        return None
    if owner.pk != grantor.pk:
        return OTHER_USERS_MESSAGE
    if can_read_metrics and not grantor.is_staff:
        return METRICS_NOT_HELD_MESSAGE
    if outcomes_count_for_allocation and not grantor.has_perm(ALLOCATION_OPT_IN_PERMISSION):
        return ALLOCATION_NOT_HELD_MESSAGE
    return None


def key_hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


@transaction.atomic
def client_token_create(
    *,
    user,
    name: str,
    tool_scope: Iterable[str] = (),
    servers: Iterable[str] = (),
    can_call_tools: bool = True,
    can_write_catalog: bool = False,
    can_read_metrics: bool = False,
    can_read_catalog: bool = True,
    can_report_outcomes: bool = False,
    outcomes_count_for_allocation: bool = False,
    granted_by=None,
) -> tuple[ClientToken, str]:
    """Create a token for ``user`` and return it with its raw key, which is not stored and cannot be recovered.

    ``granted_by`` is the person asking (admin); the token must be within their rights
    (``client_token_grant_denial``), else ``TokenGrantRefused``. None is an operator at the server's shell
    (``manage.py``), who holds the database and the secret key anyway and is trusted like a superuser.
    """
    if granted_by is not None:
        denial = client_token_grant_denial(
            grantor=granted_by,
            owner=user,
            can_read_metrics=can_read_metrics,
            outcomes_count_for_allocation=outcomes_count_for_allocation,
        )
        if denial is not None:
            raise TokenGrantRefused(denial)
    raw_key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ClientToken.objects.create(
        user=user,
        name=name,
        key_prefix=raw_key[:8],
        key_hash=key_hash(raw_key),
        tool_scope=list(dict.fromkeys(tool_scope)),
        servers=list(dict.fromkeys(servers)),
        can_call_tools=can_call_tools,
        can_write_catalog=can_write_catalog,
        can_read_metrics=can_read_metrics,
        can_read_catalog=can_read_catalog,
        can_report_outcomes=can_report_outcomes,
        outcomes_count_for_allocation=outcomes_count_for_allocation,
    )
    return token, raw_key


def client_token_authenticate(raw_key: str) -> ClientToken | None:
    """The live static token for ``raw_key``, or None when the key is unknown, revoked or its user is inactive.

    The lookup is by hash, so the response time does not depend on how much of a key an attacker guessed;
    ``compare_digest`` keeps the final check constant-time as well.
    """
    if not raw_key.startswith(KEY_PREFIX) or len(raw_key) > _MAX_KEY_LENGTH:
        return None
    digest = key_hash(raw_key)
    token = ClientToken.objects.select_related("user").filter(key_hash=digest).first()
    if token is None or token.key_hash is None or not hmac.compare_digest(token.key_hash, digest):
        return None
    if token.revoked_at is not None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        token.last_used_at = now
        token.save(update_fields=["last_used_at"])
    return token


@transaction.atomic
def client_token_revoke(*, token: ClientToken) -> None:
    """Stop accepting the token's key from now on, or for an OAuth grant every access and refresh token its client
    holds as this user (deleted, so a refresh cannot bring it back). Revoking twice keeps the first revocation time.
    """
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    if token.application_id is not None:
        grant_tokens_delete(grant=token)


def grant_tokens_delete(*, grant: ClientToken) -> None:
    """Delete every access token, refresh token and code the OAuth grant's client holds as its user, so that none is
    accepted again and no refresh brings one back."""
    held = {"user_id": grant.user_id, "application_id": grant.application_id}
    get_refresh_token_model().objects.filter(**held).delete()
    get_access_token_model().objects.filter(**held).delete()
    get_grant_model().objects.filter(**held).delete()
