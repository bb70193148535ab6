"""``GET /``: the home page, for anyone who opens the server's address (no login).

It says what runs here (the release, the database's kind, whether Redis and the Celery broker are configured,
never an address, a name or a credential), where the MCP endpoint is and how each client connects to it (the
configurations ``bootstrap_mcp_token`` prints, with a placeholder for the token's key), and links to admin, the
dashboard, the API and its docs, the health check and the documentation.
"""

from __future__ import annotations

import tomllib
from functools import cache
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import admin
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from mcpserver.client_configs import KEY_PLACEHOLDER, client_configs

# The path config.asgi routes to the MCP endpoint (outside Django's URLs, so it has no name to reverse).
MCP_PATH = "/mcp"
DATABASE_KINDS = {"sqlite": "SQLite (embedded)", "postgresql": "PostgreSQL"}
BROKER_KINDS = {"filesystem": "Celery's filesystem broker (embedded)", "redis": "Redis", "rediss": "Redis (TLS)"}
# The repository's documentation sources, for an installation without a published docs site.
DOCS_FOLDER = "docs/"


@cache
def release() -> str:
    """The version in pyproject.toml (the project is not installed as a package, so it has no metadata)."""
    try:
        with (settings.BASE_DIR / "pyproject.toml").open("rb") as project:
            return str(tomllib.load(project)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def what_runs() -> list[tuple[str, str]]:
    """The facts the home page shows: kinds and yes/no only, nothing that names a host or holds a secret."""
    broker = urlsplit(settings.CELERY_BROKER_URL).scheme
    return [
        ("Release", f"errcatalog {release()}"),
        ("Database", DATABASE_KINDS.get(connection.vendor, connection.vendor)),
        ("Redis", "configured (cache, rate limits, outcome stream)" if settings.REDIS_URL else "not configured"),
        ("Celery broker", BROKER_KINDS.get(broker, broker or "not configured")),
        ("Outcome recording", "on" if settings.OUTCOMES["ENABLED"] else "off"),
    ]


def client_blocks(mcp_url: str) -> list[tuple[str, str]]:
    """Each client's configuration as (heading, text), from the blocks ``client_configs`` prints."""
    public = settings.OAUTH["PUBLIC_URL"]
    oauth = settings.OAUTH["MODE"] != "off"
    blocks = []
    for block in client_configs(
        mcp_url, KEY_PLACEHOLDER, oauth=oauth, public_url=f"{public}{MCP_PATH}" if public else ""
    ).split("\n\n"):
        heading, _newline, text = block.partition("\n")
        blocks.append((heading.rstrip(":"), text))
    return blocks


@require_safe
def landing(request: HttpRequest) -> HttpResponse:
    mcp_url = request.build_absolute_uri(MCP_PATH)
    links = [
        ("Admin", reverse("admin:index"), "Edit the catalog: codes, variants, hints, rules; tokens and upstreams."),
        ("Dashboard", reverse("errcatalog-dashboard"), "Outcomes of tool calls: error rates, retries, variants."),
        ("REST API", reverse("api-root"), "The catalog and metrics over HTTP (browsable)."),
        ("API docs", reverse("api-docs"), "Every operation, from the OpenAPI schema."),
        ("OpenAPI schema", reverse("api-schema"), "The schema itself, for client generators."),
        ("Health", reverse("health"), "The load balancer's check: database, Redis, catalog."),
    ]
    context = {
        **admin.site.each_context(request),
        "title": "errcatalog",
        "facts": what_runs(),
        "mcp_url": mcp_url,
        "clients": client_blocks(mcp_url),
        "links": links,
        "docs_url": settings.ERRCATALOG["DOCS_URL"],
        "docs_folder": DOCS_FOLDER,
    }
    return render(request, "errcatalog/landing.html", context)
