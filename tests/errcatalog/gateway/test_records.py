"""Upstream records: secrets never stored in the clear, stdio only for superusers, mcpServers blocks imported."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from errcatalog.gateway.client_config import ClientConfigError, upstreams_from_client_config
from errcatalog.gateway.models import Upstream
from errcatalog.gateway.secrets import SecretUnavailable, describe, resolve, stored_value
from errcatalog.gateway.selectors import upstream_configs
from errcatalog.gateway.services import upstream_create, upstream_update, upstreams_import
from errcatalog.safety import redacted_for_people

pytestmark = pytest.mark.django_db

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


class Staff:
    is_superuser = False


class Superuser:
    is_superuser = True


def _http(**fields):
    return {"name": "remote", "prefix": "remote", "transport": "http", "url": "https://mcp.example.com/mcp", **fields}


def _stdio(**fields):
    return {"name": "git", "prefix": "git", "transport": "stdio", "command": "uvx", "args": ["mcp-server-git"]} | fields


def test_a_header_value_is_stored_sealed_and_read_back_only_when_connecting():
    upstream = upstream_create(actor=Staff(), **_http(headers={"Authorization": f"Bearer {TOKEN}"}))
    stored = Upstream.objects.get(pk=upstream.pk).headers["Authorization"]
    assert TOKEN not in stored and stored.startswith("sealed:")
    assert resolve("Authorization", stored) == f"Bearer {TOKEN}"
    assert describe(stored) == "sealed (set)"
    # Nor is it in the history.
    assert all(TOKEN not in str(row.headers) for row in upstream.history.all())


def test_an_env_reference_is_kept_as_it_is_and_read_from_the_environment(monkeypatch):
    upstream = upstream_create(actor=Staff(), **_http(headers={"Authorization": "env:REMOTE_TOKEN"}))
    stored = upstream.headers["Authorization"]
    assert stored == "env:REMOTE_TOKEN"
    assert "NOT SET" in describe(stored)
    with pytest.raises(SecretUnavailable, match="REMOTE_TOKEN is not set"):
        resolve("Authorization", stored)
    monkeypatch.setenv("REMOTE_TOKEN", "Bearer x")
    assert resolve("Authorization", stored) == "Bearer x"
    assert describe(stored) == "from $REMOTE_TOKEN (set)"


def test_a_value_sealed_with_another_secret_key_says_to_enter_it_again(settings):
    sealed = stored_value("Bearer x")
    settings.SECRET_KEY = "another key entirely, rotated"
    with pytest.raises(SecretUnavailable, match="enter the value again"):
        resolve("Authorization", sealed)


def test_only_a_superuser_may_add_or_change_a_stdio_upstream():
    with pytest.raises(PermissionDenied):
        upstream_create(actor=Staff(), **_stdio())
    upstream = upstream_create(actor=Superuser(), **_stdio())
    with pytest.raises(PermissionDenied):
        upstream_update(actor=Staff(), upstream=upstream, args=["mcp-server-git", "--repository", "/"])
    # Nor may an HTTP upstream be turned into one.
    remote = upstream_create(actor=Staff(), **_http())
    with pytest.raises(PermissionDenied):
        upstream_update(actor=Staff(), upstream=remote, transport="stdio", command="sh")
    # The command line (actor None) may.
    assert upstream_update(actor=None, upstream=upstream, enabled=False) == ["enabled"]


def test_the_setting_turns_stdio_upstreams_off(settings):
    upstream_create(actor=None, **_stdio())
    upstream_create(actor=None, **_http())
    settings.GATEWAY = {**settings.GATEWAY, "STDIO": False}
    assert [c.name for c in upstream_configs()] == ["remote"]
    with pytest.raises(ValidationError, match="turned off"):
        upstream_create(actor=Superuser(), **_stdio(name="other", prefix="other"))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"prefix": "a__b"}, "prefix"),
        ({"prefix": "has space"}, "prefix"),
        ({"name": "Upper"}, "name"),
        ({"url": ""}, "url"),
        ({"url": "ftp://x"}, "url"),
        ({"headers": {"Bad Header": "x"}}, "headers"),
        ({"headers": {"Mcp-Session-Id": "x"}}, "headers"),
        ({"tools": ["ok", ""]}, "tools"),
        ({"tools": ["a" * 200]}, "tools"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"max_concurrency": 0}, "max_concurrency"),
    ],
)
def test_bad_fields_are_refused_at_their_field(fields, field):
    with pytest.raises(ValidationError) as refused:
        upstream_create(actor=None, **_http(**fields))
    assert field in refused.value.message_dict
    assert not Upstream.objects.exists()


def test_an_mcpservers_block_becomes_upstreams_with_secrets_turned_into_references():
    block = {
        "mcpServers": {
            "GitHub Tools": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github"],
                "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN, "LOG_LEVEL": "debug", "HOME_DIR": "${env:HOME}"},
            },
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
        }
    }
    summary = upstreams_import(block, actor=None)
    assert summary.created == ["github-tools", "remote"]
    github = Upstream.objects.get(name="github-tools")
    assert github.prefix == "github_tools"
    assert github.env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "env:UPSTREAM_GITHUB_TOOLS_GITHUB_PERSONAL_ACCESS_TOKEN"
    assert github.env["HOME_DIR"] == "env:HOME"
    assert github.env["LOG_LEVEL"].startswith("sealed:")  # not a secret, but never stored in the clear either
    assert TOKEN not in str(Upstream.objects.values_list())
    assert Upstream.objects.get(name="remote").headers == {"Authorization": "env:UPSTREAM_REMOTE_AUTHORIZATION"}
    assert set(summary.variables) == {
        "UPSTREAM_GITHUB_TOOLS_GITHUB_PERSONAL_ACCESS_TOKEN",
        "UPSTREAM_REMOTE_AUTHORIZATION",
    }
    # Importing the same block again changes nothing (sealed values compared by what they hold).
    again = upstreams_import(block, actor=None)
    assert again.unchanged == ["github-tools", "remote"]
    assert github.history.count() == 1


@pytest.mark.parametrize(
    "block",
    [[], {}, {"mcpServers": {}}, {"mcpServers": {"x": "npx"}}, {"mcpServers": {"x": {"type": "sse", "url": "u"}}},
     {"mcpServers": {"x": {"command": 3}}}, {"mcpServers": {"x": {"url": "https://x", "headers": ["a"]}}}],
)  # fmt: skip
def test_a_block_that_is_not_mcpservers_is_refused_with_what_is_wrong(block):
    with pytest.raises(ClientConfigError):
        upstreams_from_client_config(block)


def test_upstream_text_for_people_is_cut_and_loses_credentials():
    text = (
        f"failed: Authorization: Bearer {TOKEN} password=hunter2 sk-live0123456789abcdef "
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop known-secret-value \x1b[31m" + "A" * 5000
    )
    shown = redacted_for_people(text, known=["known-secret-value"])
    for secret in (TOKEN, "hunter2", "sk-live0123456789abcdef", "eyJhbGciOiJIUzI1NiJ9", "known-secret-value", "\x1b"):
        assert secret not in shown
    assert shown.startswith("failed: Authorization: [REDACTED]")
    assert len(shown) <= 2000
