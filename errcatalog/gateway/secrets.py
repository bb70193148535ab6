"""Header and environment values of upstreams: never stored in the clear, never shown back, never sent elsewhere.

A stored value is either a reference to a variable of our own environment (``env:GITHUB_TOKEN``, read when the
upstream is connected, so a deployment keeps the secret where it keeps its others) or a value sealed for one
upstream (``sealed:v2:`` and a Fernet token: AES-128-CBC with an HMAC). The key of a sealed value is derived from
``SECRET_KEY`` and the upstream's binding (its transport, name and URL, or command for stdio), so a sealed value
copied into another upstream, or kept by the same upstream after its URL changed, does not open: a secret goes
only where it was entered for. Rotating ``SECRET_KEY`` makes sealed values unreadable; the upstream then reports
which value to enter again, as for an unset variable.

Which variables an ``env:`` reference may name is a rule of its own (``env_reference_allowed``): any, for a
superuser or the command line; for other staff only those the deployment lists in
``GATEWAY["ENV_ALLOWLIST"]``, and never the variables that hold errcatalog's own secrets.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

ENV_PREFIX = "env:"
SEALED_PREFIX = "sealed:"
# A value sealed for one upstream. ``sealed:`` and a bare Fernet token is the older form, sealed with one key for
# every upstream: it is read only to seal it again for its upstream (migration 0017, ``opened_unbound``).
BOUND_PREFIX = "sealed:v2:"
_ENV_REFERENCE = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]{0,127})$")
# Values of a record are headers and environment variables: a few kilobytes at most.
MAX_VALUE_CHARS = 8192
# Variables that hold errcatalog's own secrets and settings: no allow-list opens them to staff.
_OWN_VARIABLES = re.compile(
    r"^(?:SECRET_KEY|DATABASE_URL|REDIS_URL|CELERY_BROKER_URL|SENTRY_DSN|EMAIL_HOST_PASSWORD|EMAIL_HOST_USER"
    r"|DEMO_SEARCH_API_KEY|ERRCATALOG_\w*|DJANGO_\w*)$",
    re.IGNORECASE,
)


# Which values sent to an upstream its texts must never show again (``values_to_redact``): every value of a header or
# variable whose name says it holds a secret, and any other value long enough to be a key or a password. A short value
# of another (``LOG_LEVEL=error``, ``MCP_MODE=stdio``, ``DEBUG=true``) is configuration, and the same word in the
# upstream's text ("This error often occurs", "expects true or false") is the fact a model or a person needs.
_SECRET_NAME = re.compile(
    r"key|token|secret|pass|pwd|auth|cred|cookie|session|sign|private|pin|otp|cert|dsn|bearer", re.IGNORECASE
)
REDACTED_VALUE_MIN_CHARS = 4
UNNAMED_SECRET_MIN_CHARS = 12


def values_to_redact(values: Mapping[str, str]) -> tuple[str, ...]:
    """The clear values of an upstream's headers or variables (by name) to redact wherever its texts hold them."""
    return tuple(
        value
        for name, value in values.items()
        if len(value) >= (REDACTED_VALUE_MIN_CHARS if _SECRET_NAME.search(name) else UNNAMED_SECRET_MIN_CHARS)
    )


class SecretUnavailable(Exception):
    """A stored value cannot be read in this process: its variable is unset, or it was sealed with another key
    or for another upstream."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def upstream_binding(*, transport: str, name: str, url: str, command: str) -> str:
    """What a sealed value of an upstream is bound to: where its values are sent (the URL, or the command run)."""
    target = command if transport == "stdio" else url
    return f"{transport}\n{name}\n{target}"


def _fernet(binding: str | None) -> Fernet:
    if binding is None:  # the older, unbound form
        digest = hashlib.sha256(b"errcatalog-gateway-secrets:" + settings.SECRET_KEY.encode()).digest()
    else:
        material = b"errcatalog-gateway-secrets:bound:" + settings.SECRET_KEY.encode() + b"\0" + binding.encode()
        digest = hashlib.sha256(material).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def check_value(raw: object) -> str:
    """``raw`` if it is a value a record may hold (text of at most ``MAX_VALUE_CHARS``), else ``ValueError``."""
    if not isinstance(raw, str) or len(raw) > MAX_VALUE_CHARS or "\0" in raw:
        raise ValueError(f"a value must be text of at most {MAX_VALUE_CHARS} characters")
    return raw


def seal(clear: str, *, binding: str) -> str:
    """``clear`` sealed for the upstream ``binding`` names."""
    return BOUND_PREFIX + _fernet(binding).encrypt(check_value(clear).encode()).decode()


def opened(stored: str, *, binding: str) -> str | None:
    """The clear value of a value sealed for ``binding``; None for anything else (another upstream, another
    ``SECRET_KEY``, the older unbound form, not a sealed value)."""
    if not stored.startswith(BOUND_PREFIX):
        return None
    try:
        return _fernet(binding).decrypt(stored[len(BOUND_PREFIX) :].encode()).decode()
    except (InvalidToken, ValueError):
        return None


def opened_unbound(stored: str) -> str | None:
    """The clear value of a value in the older form, sealed for no upstream in particular; else None."""
    if not stored.startswith(SEALED_PREFIX) or stored.startswith(BOUND_PREFIX):
        return None
    try:
        return _fernet(None).decrypt(stored[len(SEALED_PREFIX) :].encode()).decode()
    except (InvalidToken, ValueError):
        return None


def is_secret_reference(stored: object) -> bool:
    """True for a value as it may be stored: an ``env:`` reference or a sealed value."""
    if not isinstance(stored, str):
        return False
    return bool(_ENV_REFERENCE.fullmatch(stored)) or (stored.startswith(SEALED_PREFIX) and len(stored) > 7)


def env_reference(stored: str) -> str | None:
    """The variable an ``env:`` reference names, else None."""
    match = _ENV_REFERENCE.fullmatch(stored)
    return match.group(1) if match else None


def env_reference_allowed(variable: str) -> bool:
    """Whether staff who are not superusers may refer to ``variable``: the deployment lists it (by name, or by a
    prefix ending in ``*``) in ``GATEWAY["ENV_ALLOWLIST"]``, and it is none of errcatalog's own variables.

    An ``env:`` reference hands the variable's value to whatever the upstream's URL names, so it is a way to read
    the web process's environment; only a superuser may name any variable.
    """
    if _OWN_VARIABLES.fullmatch(variable):
        return False
    for allowed in settings.GATEWAY["ENV_ALLOWLIST"]:
        if variable == allowed or (allowed.endswith("*") and variable.startswith(allowed[:-1])):
            return True
    return False


def resolve(name: str, stored: str, *, binding: str) -> str:
    """The clear value of ``stored`` (the value of header or variable ``name`` of the upstream ``binding`` names),
    for connecting that upstream."""
    variable = env_reference(stored)
    if variable is not None:
        value = os.environ.get(variable)
        if value is None:
            raise SecretUnavailable(name, f"the environment variable {variable} is not set")
        return value
    if stored.startswith(SEALED_PREFIX):
        clear = opened(stored, binding=binding)
        if clear is None:
            raise SecretUnavailable(
                name, "sealed for another upstream or address, or with another SECRET_KEY: enter the value again"
            )
        return clear
    raise SecretUnavailable(name, "not a stored value")


def describe(stored: str, *, binding: str) -> str:
    """How admin shows a stored value: where it comes from and whether it is set, never the value."""
    variable = env_reference(stored)
    if variable is not None:
        state = "set" if variable in os.environ else "NOT SET in this process's environment"
        return f"from ${variable} ({state})"
    if opened(stored, binding=binding) is None:
        return "sealed, unreadable for this upstream here: enter it again"
    return "sealed (set)"
