"""Reads of client tokens, shaped for the pages that show who called."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import ALLOCATION_OPT_IN_PERMISSION

# Outcome client keys: ``token:<id>`` for an MCP client (mcpserver.auth), ``reporter:<id>`` and
# ``reporter:<id>/<client>`` for a reporter through the outcomes API (errcatalog.outcomes.events.reporter_client),
# ``token:<id>/<client>`` for a reporter's client before reporters had their own prefix.
_TOKEN_CLIENT_KEY = re.compile(r"(?:token|reporter):(\d{1,18})(?:/(.+))?", re.DOTALL)


def client_display_names(keys: Iterable[str]) -> dict[str, str]:
    """A readable name for each outcome client key that names a token: the token's name, then the reporter's
    client after a slash ("quickstart", "ci-reporter / ide"); one query for all keys.

    Keys of deleted tokens and other keys are left out (shown as they are). When two tokens of the shown keys
    share a name, the token's id follows it ("agents #3") so that their rows stay apart.
    """
    parsed = {key: match.groups() for key in keys if (match := _TOKEN_CLIENT_KEY.fullmatch(key))}
    ids = {int(token_id) for token_id, _client in parsed.values()}
    tokens = dict(ClientToken.objects.filter(pk__in=ids).values_list("pk", "name"))
    shared = {name for name, count in Counter(tokens.values()).items() if count > 1}
    names = {}
    for key, (token_id, client) in parsed.items():
        name = tokens.get(int(token_id))
        if name is None:
            continue
        if name in shared:
            name = f"{name} #{token_id}"
        names[key] = f"{name} / {client}" if client else name
    return names


def allocation_reporter_ids() -> list[int]:
    """The live tokens whose reported outcomes staff opted in to adaptive allocation.

    A token never does more than its user: the opt-in holds only while the token's user is active and may change
    variants themselves (``ALLOCATION_OPT_IN_PERMISSION``), so a user who loses the permission takes it from their
    tokens at once. Read once per allocation run; few tokens report.
    """
    opted = ClientToken.objects.filter(
        can_report_outcomes=True, outcomes_count_for_allocation=True, revoked_at__isnull=True
    ).select_related("user")
    return [token.pk for token in opted if token.user.is_active and token.user.has_perm(ALLOCATION_OPT_IN_PERMISSION)]
