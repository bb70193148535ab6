"""The ``mcpServers`` block MCP clients use (Claude Desktop, Cursor; VS Code calls it ``servers``), as upstreams.

``upstreams_from_client_config`` turns each entry into the fields of one upstream. A value that looks like a
secret (a variable or header named like a token, key, password or credential, or an ``Authorization`` header)
is never kept: it becomes an ``env:`` reference to a variable named after the upstream and the key, and the
result says which variables to set. References the client's own syntax already makes (``${VAR}``,
``${env:VAR}``) become ``env:VAR``. Other values are sealed by the services like any value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from errcatalog.gateway.models import Transport
from errcatalog.input_limits import json_depth_exceeds, long_strings

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH|COOKIE|PAT$", re.IGNORECASE
)
_CLIENT_REFERENCE = re.compile(r"^\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}$")
_NOT_NAME = re.compile(r"[^a-z0-9_-]+")


class ClientConfigError(ValueError):
    """The block is not an ``mcpServers`` block; the message says what is wrong and where."""


def client_config_loads(text: str) -> Any:
    """The JSON of an ``mcpServers`` block, parsed; raise ``ClientConfigError`` for text that is not JSON, nests
    deeper than ``ERRCATALOG["IMPORT_MAX_DEPTH"]`` (measured before the decoder, which recurses once per level,
    sees it) or holds a string longer than ``ERRCATALOG["IMPORT_MAX_FIELD_CHARS"]``, naming the limit."""
    max_depth = settings.ERRCATALOG["IMPORT_MAX_DEPTH"]
    if json_depth_exceeds(text.encode("utf-8", "surrogatepass"), max_depth):
        raise ClientConfigError(
            f"Nested deeper than {max_depth} levels (ERRCATALOG_IMPORT_MAX_DEPTH); an mcpServers block nests 4."
        )
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ClientConfigError(f"Not JSON: {exc}") from None
    max_chars = settings.ERRCATALOG["IMPORT_MAX_FIELD_CHARS"]
    for found in long_strings(document, max_chars):
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in found.path).lstrip(".")
        what = "has a key of" if found.is_key else "is"
        raise ClientConfigError(
            f"{where or 'The block'} {what} {found.length:,} characters; the limit is {max_chars:,} "
            "(ERRCATALOG_IMPORT_MAX_FIELD_CHARS)."
        )
    return document


@dataclass
class ImportedUpstream:
    fields: dict[str, Any]
    # Variables of our environment the upstream now refers to, with what each held in the client's file.
    variables: dict[str, str] = field(default_factory=dict)


def _slug(key: str) -> str:
    slug = _NOT_NAME.sub("-", key.lower()).strip("-_")
    return slug[:32] or "upstream"


def _values(entry_name: str, kind: str, raw: Any, variables: dict[str, str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise ClientConfigError(f"mcpServers.{entry_name}.{kind}: give an object of text values.")
    values = {}
    for key, value in raw.items():
        reference = _CLIENT_REFERENCE.fullmatch(value)
        if reference:
            values[key] = f"env:{reference.group(1)}"
        elif _SECRET_NAME.search(key):
            variable = re.sub(r"[^A-Z0-9]+", "_", f"UPSTREAM_{entry_name}_{key}".upper()).strip("_")
            variables[variable] = f"{kind} {key}"
            values[key] = f"env:{variable}"
        else:
            values[key] = value
    return values


def upstreams_from_client_config(document: Any) -> list[ImportedUpstream]:
    """One upstream per entry of the document's ``mcpServers`` (or ``servers``) object."""
    servers = document.get("mcpServers", document.get("servers")) if isinstance(document, Mapping) else None
    if not isinstance(servers, Mapping) or not servers:
        raise ClientConfigError('Expected {"mcpServers": {"name": {...}, ...}} with at least one server.')
    imported = []
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            raise ClientConfigError(f"mcpServers.{name}: expected an object.")
        kind = entry.get("type") or ("stdio" if "command" in entry else "http")
        variables: dict[str, str] = {}
        slug = _slug(str(name))
        fields: dict[str, Any] = {"name": slug, "prefix": slug.replace("-", "_")}
        if kind == "stdio":
            args = entry.get("args", [])
            if not isinstance(entry.get("command"), str) or not isinstance(args, list):
                raise ClientConfigError(f"mcpServers.{name}: a stdio server needs command (text) and args (a list).")
            fields.update(
                transport=Transport.STDIO,
                command=entry["command"],
                args=[str(a) for a in args],
                cwd=str(entry.get("cwd") or ""),
                env=_values(slug, "env", entry.get("env"), variables),
            )
        elif kind in ("http", "streamable-http", "streamableHttp"):
            if not isinstance(entry.get("url"), str):
                raise ClientConfigError(f"mcpServers.{name}: an HTTP server needs its url.")
            fields.update(
                transport=Transport.HTTP,
                url=entry["url"],
                headers=_values(slug, "header", entry.get("headers"), variables),
            )
        else:
            raise ClientConfigError(
                f"mcpServers.{name}: transport {kind!s:.20} is not supported (use stdio or Streamable HTTP)."
            )
        imported.append(ImportedUpstream(fields, variables))
    return imported
