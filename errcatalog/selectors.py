"""Reads of catalog rows, shaped for listing and editing (rendering reads the snapshot instead)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from django.db.models import QuerySet

from errcatalog.models import ClassificationRule, ClientToken, ErrorCode, ParameterHint

# Outcome client keys: ``token:<id>`` for an MCP client (mcpserver.auth), ``token:<id>/<client>`` for a client
# named by a reporter through the outcomes API (errcatalog.api.views).
_TOKEN_CLIENT_KEY = re.compile(r"token:(\d{1,18})(?:/(.+))?", re.DOTALL)


def error_code_list(*, category: str = "", kind: str = "", active: bool | None = None) -> QuerySet[ErrorCode]:
    """Codes with their variants, by code; the filters apply when given."""
    codes = ErrorCode.objects.prefetch_related("variants")
    if category:
        codes = codes.filter(category=category)
    if kind:
        codes = codes.filter(kind=kind)
    if active is not None:
        codes = codes.filter(active=active)
    return codes.order_by("code")


def parameter_hint_list(*, tool: str = "") -> QuerySet[ParameterHint]:
    hints = ParameterHint.objects.all()
    if tool:
        hints = hints.filter(tool=tool)
    return hints.order_by("tool", "parameter")


def classification_rule_list() -> QuerySet[ClassificationRule]:
    """Rules in the order classification tries them."""
    return ClassificationRule.objects.select_related("error_code").order_by("position")


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
