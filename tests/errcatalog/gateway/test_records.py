"""Upstream records: secrets never stored in the clear, stdio only for superusers, mcpServers blocks imported."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from errcatalog.gateway.client_config import ClientConfigError, upstreams_from_client_config
from errcatalog.gateway.models import Upstream
from errcatalog.gateway.secrets import SecretUnavailable, _fernet, describe, resolve, seal, values_to_redact
from errcatalog.gateway.selectors import upstream_configs
from errcatalog.gateway.services import upstream_create, upstream_update, upstreams_import, upstreams_sync
from errcatalog.safety import redacted_for_people

pytestmark = pytest.mark.django_db

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


class Staff:
    """Staff who hold the upstream model permissions (add, change, delete), not a superuser."""

    is_superuser = False

    def has_perm(self, permission: str) -> bool:
        return permission.endswith("_upstream")


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
    assert resolve("Authorization", stored, binding=upstream.binding) == f"Bearer {TOKEN}"
    assert describe(stored, binding=upstream.binding) == "sealed (set)"
    # Nor is it in the history.
    assert all(TOKEN not in str(row.headers) for row in upstream.history.all())


def test_an_env_reference_is_kept_as_it_is_and_read_from_the_environment(monkeypatch):
    upstream = upstream_create(actor=Superuser(), **_http(headers={"Authorization": "env:REMOTE_TOKEN"}))
    stored, binding = upstream.headers["Authorization"], upstream.binding
    assert stored == "env:REMOTE_TOKEN"
    assert "NOT SET" in describe(stored, binding=binding)
    with pytest.raises(SecretUnavailable, match="REMOTE_TOKEN is not set"):
        resolve("Authorization", stored, binding=binding)
    monkeypatch.setenv("REMOTE_TOKEN", "Bearer x")
    assert resolve("Authorization", stored, binding=binding) == "Bearer x"
    assert describe(stored, binding=binding) == "from $REMOTE_TOKEN (set)"


def test_a_value_sealed_with_another_secret_key_says_to_enter_it_again(settings):
    sealed = seal("Bearer x", binding="http\nremote\nhttps://mcp.example.com/mcp")
    settings.SECRET_KEY = "another key entirely, rotated"
    with pytest.raises(SecretUnavailable, match="enter the value again"):
        resolve("Authorization", sealed, binding="http\nremote\nhttps://mcp.example.com/mcp")


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


# --- Every write path keeps a secret where it was entered for -----------------------------------------------------


def test_an_import_by_staff_refuses_env_references_the_deployment_did_not_allow(settings):
    block = {"mcpServers": {"x": {"type": "http", "url": "https://8.8.8.8/mcp", "headers": {"X-Key": "${SECRET_KEY}"}}}}
    with pytest.raises(ValidationError, match="SECRET_KEY"):
        upstreams_import(block, actor=Staff())
    settings.GATEWAY = {**settings.GATEWAY, "ENV_ALLOWLIST": ("SECRET_KEY",)}  # never, even when listed
    with pytest.raises(ValidationError, match="SECRET_KEY"):
        upstreams_import(block, actor=Staff())
    assert not Upstream.objects.exists()
    assert upstreams_import(block, actor=Superuser()).created == ["x"]


def test_a_catalog_document_moving_an_upstream_drops_its_values_unless_given_again():
    upstream_create(actor=None, **_http(headers={"Authorization": f"Bearer {TOKEN}"}))
    exported = Upstream.objects.get().headers
    # The exported (sealed) values with a new URL: sealed for the old address, they would not open there.
    upstreams_sync([_http(url="https://other.example.com/mcp", headers=exported)], actor=None)
    moved = Upstream.objects.get()
    with pytest.raises(SecretUnavailable):
        resolve("Authorization", moved.headers["Authorization"], binding=moved.binding)
    # Given again in the clear with the new URL, they are sealed for it.
    upstreams_sync([_http(url="https://third.example.com/mcp", headers={"Authorization": "Bearer new"})], actor=None)
    again = Upstream.objects.get()
    assert resolve("Authorization", again.headers["Authorization"], binding=again.binding) == "Bearer new"
    # The same document again changes nothing.
    entry = _http(url="https://third.example.com/mcp", headers={"Authorization": "Bearer new"})
    assert upstreams_sync([entry], actor=None).unchanged == ["remote"]


def test_changing_the_url_through_the_services_drops_values_not_given_again():
    upstream = upstream_create(actor=Superuser(), **_http(headers={"Authorization": "env:REMOTE_TOKEN"}))
    assert set(upstream_update(actor=Staff(), upstream=upstream, url="https://8.8.4.4/mcp")) == {"url", "headers"}
    assert Upstream.objects.get().headers == {}


def test_a_stdio_command_changed_drops_its_variables():
    upstream = upstream_create(actor=None, **_stdio(env={"TOKEN": "clear"}))
    upstream_update(actor=Superuser(), upstream=upstream, command="npx")
    assert Upstream.objects.get().env == {}


def test_an_older_unbound_sealed_value_opens_only_when_the_migration_or_a_superuser_seals_it_again():
    legacy = "sealed:" + _fernet(None).encrypt(b"Bearer old").decode()
    with pytest.raises(ValidationError, match="belongs to another upstream"):
        upstream_create(actor=Staff(), **_http(headers={"Authorization": legacy}))
    upstream = upstream_create(actor=Superuser(), **_http(headers={"Authorization": legacy}))
    assert resolve("Authorization", upstream.headers["Authorization"], binding=upstream.binding) == "Bearer old"
    # Stored unbound (as before migration 0017), it no longer opens at all.
    Upstream.objects.update(headers={"Authorization": legacy})
    with pytest.raises(SecretUnavailable):
        resolve("Authorization", legacy, binding=upstream.binding)


@pytest.mark.parametrize(
    ("name", "value", "redacted"),
    [
        ("Authorization", "Bearer abc", True), ("X-Api-Key", "k123", True), ("GITHUB_TOKEN", "ghp_x", True),
        ("DB_PASSWORD", "hunter", True), ("ACCESS_PIN", "4821", True), ("Cookie", "sid=1", True),
        ("LOG_LEVEL", "error", False), ("DEBUG", "true", False), ("MCP_MODE", "stdio", False),
        ("BASE_URL", "https://api.example.com", True), ("TENANT", "acme-corporation", True),
        ("API_KEY", "abc", False),  # too short to be told apart from the words of any text
    ],
)  # fmt: skip
def test_a_value_sent_is_redacted_from_an_upstreams_texts_when_it_may_be_a_secret(name, value, redacted):
    assert (value in values_to_redact({name: value})) is redacted
