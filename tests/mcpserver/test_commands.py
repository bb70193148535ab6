"""``bootstrap_mcp_token``: one quickstart token for the admin, its key printed once, with client configs."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from errcatalog.models import ClientToken
from errcatalog.tokens import client_token_authenticate

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
    assert f'npx mcp-remote http://127.0.0.1:9000/mcp --header "Authorization: Bearer {key}"' in first
    assert "npx @modelcontextprotocol/inspector" in first

    second = run()
    assert key not in second
    assert "exists" in second and "token_create --user admin" in second
    assert ClientToken.objects.filter(name="quickstart").count() == 1


def test_needs_an_admin():
    with pytest.raises(CommandError, match="bootstrap_admin"):
        run()
