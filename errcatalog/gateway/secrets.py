"""Header and environment values of upstreams: never stored in the clear, never shown back.

A stored value is either a reference to a variable of our own environment (``env:GITHUB_TOKEN``, read when the
upstream is connected, so a deployment keeps the secret where it keeps its others) or a value sealed with a key
derived from ``SECRET_KEY`` (``sealed:`` and a Fernet token: AES-128-CBC with an HMAC). Rotating ``SECRET_KEY``
makes sealed values unreadable; the upstream then reports which value to enter again, as for an unset variable.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

ENV_PREFIX = "env:"
SEALED_PREFIX = "sealed:"
_ENV_REFERENCE = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]{0,127})$")
# Values of a record are headers and environment variables: a few kilobytes at most.
MAX_VALUE_CHARS = 8192


class SecretUnavailable(Exception):
    """A stored value cannot be read in this process: its variable is unset, or it was sealed with another key."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def _fernet() -> Fernet:
    digest = hashlib.sha256(b"errcatalog-gateway-secrets:" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def stored_value(raw: str) -> str:
    """What to store for a value an operator entered: an ``env:`` reference as it is, anything else sealed."""
    if not isinstance(raw, str) or len(raw) > MAX_VALUE_CHARS or "\0" in raw:
        raise ValueError(f"a value must be text of at most {MAX_VALUE_CHARS} characters")
    if _ENV_REFERENCE.fullmatch(raw) or raw.startswith(SEALED_PREFIX):
        return raw
    return SEALED_PREFIX + _fernet().encrypt(raw.encode()).decode()


def is_secret_reference(stored: object) -> bool:
    """True for a value as it may be stored: an ``env:`` reference or a sealed value."""
    if not isinstance(stored, str):
        return False
    return bool(_ENV_REFERENCE.fullmatch(stored)) or (stored.startswith(SEALED_PREFIX) and len(stored) > 7)


def env_reference(stored: str) -> str | None:
    """The variable an ``env:`` reference names, else None."""
    match = _ENV_REFERENCE.fullmatch(stored)
    return match.group(1) if match else None


def resolve(name: str, stored: str) -> str:
    """The clear value of ``stored`` (the value of header or variable ``name``), for connecting an upstream."""
    variable = env_reference(stored)
    if variable is not None:
        value = os.environ.get(variable)
        if value is None:
            raise SecretUnavailable(name, f"the environment variable {variable} is not set")
        return value
    if stored.startswith(SEALED_PREFIX):
        try:
            return _fernet().decrypt(stored[len(SEALED_PREFIX) :].encode()).decode()
        except (InvalidToken, ValueError):
            raise SecretUnavailable(name, "sealed with another SECRET_KEY: enter the value again") from None
    raise SecretUnavailable(name, "not a stored value")


def describe(stored: str) -> str:
    """How admin shows a stored value: where it comes from and whether it is set, never the value."""
    variable = env_reference(stored)
    if variable is not None:
        state = "set" if variable in os.environ else "NOT SET in this process's environment"
        return f"from ${variable} ({state})"
    try:
        resolve("", stored)
    except SecretUnavailable:
        return "sealed, unreadable with this SECRET_KEY: enter it again"
    return "sealed (set)"
