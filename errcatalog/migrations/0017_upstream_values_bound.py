"""Seal every stored upstream value again, bound to its upstream (name and URL, or command for stdio).

Values were sealed with one key for every upstream, so a sealed value copied from an export opened in any upstream.
Each now opens only for the upstream it belongs to (``errcatalog.gateway.secrets``). The key derivations are
copied here rather than imported, so that this migration keeps doing what it did if the module changes. A value
that does not open (sealed with another SECRET_KEY) is left as it is: it was already unreadable, and admin says to
enter it again. History rows are sealed again for the upstream as it was then, so a revert keeps its values.
Going back seals them again in the older form.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.db import migrations

_SEALED = "sealed:"
_BOUND = "sealed:v2:"


def _fernet(binding: str | None) -> Fernet:
    secret = settings.SECRET_KEY.encode()
    if binding is None:
        digest = hashlib.sha256(b"errcatalog-gateway-secrets:" + secret).digest()
    else:
        digest = hashlib.sha256(b"errcatalog-gateway-secrets:bound:" + secret + b"\0" + binding.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _binding(row) -> str:
    target = row.command if row.transport == "stdio" else row.url
    return f"{row.transport}\n{row.name}\n{target}"


def _bound(stored, binding: str):
    if not isinstance(stored, str) or not stored.startswith(_SEALED) or stored.startswith(_BOUND):
        return stored
    try:
        clear = _fernet(None).decrypt(stored[len(_SEALED) :].encode())
    except (InvalidToken, ValueError):
        return stored
    return _BOUND + _fernet(binding).encrypt(clear).decode()


def _unbound(stored, binding: str):
    if not isinstance(stored, str) or not stored.startswith(_BOUND):
        return stored
    try:
        clear = _fernet(binding).decrypt(stored[len(_BOUND) :].encode())
    except (InvalidToken, ValueError):
        return stored
    return _SEALED + _fernet(None).encrypt(clear).decode()


def _rewrite(apps, convert) -> None:
    for model_name in ("Upstream", "HistoricalUpstream"):
        model = apps.get_model("errcatalog", model_name)
        for row in model.objects.all().iterator():
            binding = _binding(row)
            headers = {k: convert(v, binding) for k, v in (row.headers or {}).items()}
            env = {k: convert(v, binding) for k, v in (row.env or {}).items()}
            if headers != row.headers or env != row.env:
                model.objects.filter(pk=row.pk).update(headers=headers, env=env)


def bind(apps, schema_editor) -> None:
    _rewrite(apps, _bound)


def unbind(apps, schema_editor) -> None:
    _rewrite(apps, _unbound)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0016_outcome_trace_id"),
    ]

    operations = [migrations.RunPython(bind, unbind)]
