"""``bootstrap_mcp_token``: one quickstart token for the admin, its key printed once, with client configs."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_authenticate

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command("bootstrap_mcp_token", *args, stdout=out)
    return out.getvalue()


def test_creates_the_quickstart_token_once_and_prints_configs(django_user_model):
    django_user_model.objects.create_superuser(username="admin", password="pw")
    first = run("--url", "http://127.0.0.1:9000/mcp")
    key = re.search(r"\(shown once\): (ec_\S+)", first).group(1)
    assert client_token_authenticate(key).name == "quickstart"
    assert f'"Authorization": "Bearer {key}"' in first  # VS Code mcp.json
    vscode = json.loads(first.split("VS Code (.vscode/mcp.json):\n", 1)[1].split("\n\n", 1)[0])
    assert vscode["servers"]["errcatalog"] == {
        "type": "http",
        "url": "http://127.0.0.1:9000/mcp",
        "headers": {"Authorization": f"Bearer {key}"},
    }
    assert f'npx -y mcp-remote http://127.0.0.1:9000/mcp --header "Authorization: Bearer {key}"' in first
    # Claude Desktop's entry: the key in mcp-remote's environment, not in its arguments (tests/mcpserver/
    # test_client_configs.py runs every printed config against ./dev up).
    claude = json.loads(first.split("through mcp-remote):\n", 1)[1].split("\n  or on the command line", 1)[0])
    entry = claude["mcpServers"]["errcatalog"]
    assert entry["args"] == [
        "-y",
        "mcp-remote",
        "http://127.0.0.1:9000/mcp",
        "--header",
        "Authorization:${ERRCATALOG_AUTH}",
    ]
    assert entry["env"] == {"ERRCATALOG_AUTH": f"Bearer {key}"}
    assert "npx @modelcontextprotocol/inspector --transport http --server-url http://127.0.0.1:9000/mcp" in first
    assert "Node 22.19 or later" in first
    assert f"HEADERS = {{'Authorization': 'Bearer {key}'}}" in first  # the Python SDK script
    assert f'Authorization: "Bearer {key}"' in first  # the TypeScript SDK module

    second = run()
    assert key not in second
    assert "exists" in second and "token_create --user admin" in second
    assert ClientToken.objects.filter(name="quickstart").count() == 1


def test_needs_an_admin():
    with pytest.raises(CommandError, match="bootstrap_admin"):
        run()


def _node_on_path(monkeypatch, tmp_path, version: str | None) -> None:
    """Only a ``node`` that prints ``version`` on the PATH (none at all when None)."""
    if version is not None:
        node = tmp_path / "node"
        node.write_text(f"#!/bin/sh\necho {version}\n")
        node.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ("v20.20.2", "This machine's Node is 20.20.2, older than 22.19: npx would run an old Inspector"),
        ("v22.18.0", "This machine's Node is 22.18.0, older than 22.19"),
        (None, "No Node on this machine's PATH"),
    ],
)
def test_the_inspectors_config_says_when_this_machines_node_is_too_old(
    django_user_model, monkeypatch, tmp_path, version, says
):
    django_user_model.objects.create_superuser(username="admin", password="pw")
    _node_on_path(monkeypatch, tmp_path, version)
    inspector = run().split("MCP Inspector (", 1)[1].split("\n\n", 1)[0]
    assert says in inspector
    assert "Install Node 22.19 or later" in inspector or "install Node 22.19 or later" in inspector


@pytest.mark.parametrize("version", ["v22.19.0", "v24.1.0"])
def test_the_inspectors_config_has_no_warning_on_a_recent_enough_node(
    django_user_model, monkeypatch, tmp_path, version
):
    django_user_model.objects.create_superuser(username="admin", password="pw")
    _node_on_path(monkeypatch, tmp_path, version)
    assert "  ! " not in run()


def test_with_a_public_url_hosted_clients_are_given_it_and_local_ones_the_local_url(django_user_model, settings):
    django_user_model.objects.create_superuser(username="admin", password="pw")
    settings.OAUTH = {**settings.OAUTH, "MODE": "builtin", "PUBLIC_URL": "https://errors.example.com"}
    printed = run("--url", "http://127.0.0.1:9000/mcp")
    hosted = printed.split("Clients that sign in with OAuth", 1)[1].split("\n\n", 1)[0]
    assert "Connector URL: https://errors.example.com/mcp" in hosted
    assert "public_url_check" in hosted
    assert "127.0.0.1" not in hosted.split("Claude Code:", 1)[0]  # the hosted clients' lines name the public URL only
    assert "claude mcp add --transport http errcatalog http://127.0.0.1:9000/mcp" in hosted  # Claude Code runs here


def test_without_a_public_url_the_connector_url_is_the_local_one_and_says_what_to_set(django_user_model, settings):
    django_user_model.objects.create_superuser(username="admin", password="pw")
    settings.OAUTH = {**settings.OAUTH, "MODE": "builtin", "PUBLIC_URL": ""}
    printed = run("--url", "http://127.0.0.1:9000/mcp")
    assert "Connector URL: http://127.0.0.1:9000/mcp" in printed
    assert "set ERRCATALOG_PUBLIC_URL" in printed
