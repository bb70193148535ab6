"""Strict readers for settings that come from the environment.

Each helper refuses values it does not understand instead of guessing, so a typo in a deployment fails at
start-up with the variable's name rather than running with a surprising default.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "on"}
_FALSE = {"0", "false", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"Set the {name} environment variable.")
        return default
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/true/on or 0/false/off, not {raw!r}.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {raw!r}.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_MODULE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def env_modules(name: str) -> list[str]:
    """Dotted module paths from ``name``, comma-separated (``myapp,billing.apps.BillingConfig``); anything else (a
    file path, a space inside a name) is refused with the variable's name rather than failing as an import later."""
    modules = env_list(name, [])
    for module in modules:
        if not _MODULE_PATH.fullmatch(module):
            raise ImproperlyConfigured(f"{name} takes dotted module paths like myapp or billing.apps, not {module!r}.")
    return modules


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}.")
    return value


# Django's own rule for a key it calls weak (security.W009), plus the keys this project has shipped as examples.
_SECRET_KEY_MIN_LENGTH = 50
_SECRET_KEY_MIN_UNIQUE_CHARACTERS = 5
_KNOWN_INSECURE_KEYS = frozenset({"insecure-embedded-development-key", "collectstatic-only", "change-me", "changeme"})


def env_secret_key(name: str, *, debug: bool, development_key: str) -> str:
    """The secret key from ``name``; refused outside debug when empty, known or weak.

    Debug runs get ``development_key`` when nothing is set, so the embedded setup needs nothing. Anywhere else a
    guessable key would let anyone forge sessions, password-reset links and sealed MCP request states, so the
    process refuses to start instead of running with one.
    """
    raw = os.environ.get(name)
    if debug:
        return raw or development_key
    if not raw:
        raise ImproperlyConfigured(f"Set the {name} environment variable.")
    if (
        raw in _KNOWN_INSECURE_KEYS
        or raw.startswith("django-insecure")
        or len(raw) < _SECRET_KEY_MIN_LENGTH
        or len(set(raw)) < _SECRET_KEY_MIN_UNIQUE_CHARACTERS
    ):
        raise ImproperlyConfigured(
            f"{name} is too weak for production: use at least {_SECRET_KEY_MIN_LENGTH} random characters, e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'."
        )
    return raw


def env_host_names(name: str, default: list[str], *, debug: bool) -> list[str]:
    """Host names for Django's ALLOWED_HOSTS: whole names (``.example.com`` for its subdomains), no ports.

    A port, scheme or path in the list never matches what Django compares (the host without its port), so it is
    a mistake that would lock out the real host; ``*`` accepts any Host header, which production refuses.
    """
    hosts = env_list(name, default)
    for host in hosts:
        if host == "*":
            if not debug:
                raise ImproperlyConfigured(f"{name} must name the hosts this service answers to, not '*'.")
            continue
        bare = host[1:] if host.startswith(".") else host
        if bare.startswith("[") and bare.endswith("]"):
            continue  # an IPv6 address
        if not bare or any(c in bare for c in ":/@*?# "):
            raise ImproperlyConfigured(f"{name} takes whole host names without port or scheme, not {host!r}.")
    return hosts


def env_origins(name: str, default: list[str]) -> list[str]:
    """Origins for Django's CSRF_TRUSTED_ORIGINS: ``scheme://host[:port]``, ``*.`` only as a whole first label.

    Django compares them with a request's Origin header; a path, a missing scheme or a bare ``*`` never matches
    what was meant (or, for ``*``, matches far more), so each is refused with the variable's name.
    """
    origins = env_list(name, default)
    for origin in origins:
        scheme, separator, rest = origin.partition("://")
        host = rest[2:] if rest.startswith("*.") else rest
        host = host.rsplit(":", 1)[0] if ":" in host and not host.endswith("]") else host
        port = rest.rsplit(":", 1)[1] if ":" in rest and not rest.endswith("]") else ""
        if (
            not separator
            or scheme not in ("http", "https")
            or not host
            or any(c in host for c in "/@*?# ")
            or (port and not port.isdigit())
        ):
            raise ImproperlyConfigured(f"{name} takes origins like https://errors.example.com[:port], not {origin!r}.")
    return origins


@dataclass(frozen=True)
class PublicUrl:
    """Where clients reach this service, read from one setting, and what follows from it: the host Django compares
    (``host``: no port, an IPv6 address in brackets), the Host header forms /mcp's DNS-rebinding check accepts
    (``mcp_hosts``) and the origin browsers send from it (``origin``)."""

    url: str
    host: str
    mcp_hosts: tuple[str, ...]
    origin: str


def env_public_url(name: str) -> PublicUrl | None:
    """The service's public URL from ``name`` (``https://errors.example.com``, maybe with a path it is served
    under), or None when unset or blank. A URL without a scheme and host, with credentials, a query or a fragment is
    refused: every resource URL and the OAuth issuer are built on it, so a wrong one would fail only when a hosted
    client tries to sign in."""
    raw = os.environ.get(name, "").strip().rstrip("/")
    if not raw:
        return None
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or "@" in parts.netloc
        or parts.query
        or parts.fragment
        or raw.endswith(("?", "#"))
    ):
        raise ImproperlyConfigured(
            f"{name} must be the URL clients reach this service at, like https://errors.example.com, not {raw!r}."
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    at = f"{host}:{port}" if port is not None else host
    return PublicUrl(
        url=f"{parts.scheme}://{at}{parts.path}",
        host=host,
        mcp_hosts=(at,) if port is not None else (host, f"{host}:*"),
        origin=f"{parts.scheme}://{at}",
    )
