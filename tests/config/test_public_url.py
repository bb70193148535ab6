"""A hosted client through a public URL, with only ``ERRCATALOG_PUBLIC_URL`` set.

A hosted client (Claude, ChatGPT) reaches the server through a tunnel or reverse proxy that forwards requests with
the public host in their Host header. Here a second loopback address stands for the public host: a plain TCP relay on
127.0.0.2 forwards to the app on 127.0.0.1, as a tunnel would, so every request the app sees names a host it was not
told about except through the public URL. The SDK's own OAuth client signs in and calls through it, and
``public_url_check`` says what it sees, against the app with and without the setting.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from config.env import env_public_url
from tests.support.oauth_flow import Person, oauth_provider
from tests.support.served_app import REPO_ROOT, ServedApp, embedded_environment, manage, new_token

PUBLIC_ADDRESS = "127.0.0.2"
ADMIN, PASSWORD = "admin", "public-url-admin"


class Relay:
    """A TCP relay from ``PUBLIC_ADDRESS`` to a port on 127.0.0.1: bytes only, as a tunnel carries them."""

    def __init__(self, port: int, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server((PUBLIC_ADDRESS, port))
        self.url = f"http://{PUBLIC_ADDRESS}:{port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _address = self.listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
                for source, sink in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


@contextlib.contextmanager
def _served(tmp_path, *, public: bool) -> Iterator[tuple[Relay, dict[str, str]]]:
    """The embedded app behind a relay on the public address; ``public``: with ERRCATALOG_PUBLIC_URL naming it."""
    with socket.create_server((PUBLIC_ADDRESS, 0)) as free:  # the relay's port, named before the app starts
        port = free.getsockname()[1]
    extra = {"ERRCATALOG_PUBLIC_URL": f"http://{PUBLIC_ADDRESS}:{port}"} if public else {}
    env = embedded_environment(tmp_path / "data", ERRCATALOG_ADMIN_PASSWORD=PASSWORD, **extra)
    manage(env, "bootstrap_admin")
    app = ServedApp(env, tmp_path).start()
    relay = Relay(port, app.port)
    try:
        yield relay, env
    finally:
        relay.close()
        app.stop()


def _check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, "manage.py", "public_url_check", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_hosted_client_signs_in_and_calls_through_the_public_url_with_only_that_setting(tmp_path):
    with _served(tmp_path, public=True) as (relay, env):
        public_mcp = f"{relay.url}/mcp"
        # The pages a hosted client reads before it signs in, through the public host.
        challenge = httpx2.get(public_mcp, timeout=10)
        assert challenge.status_code == 401
        assert f"{relay.url}/.well-known/oauth-protected-resource/mcp" in challenge.headers["www-authenticate"]
        metadata = httpx2.get(f"{relay.url}/.well-known/oauth-protected-resource/mcp", timeout=10).json()
        assert metadata["resource"] == public_mcp
        assert metadata["authorization_servers"] == [relay.url]

        # The SDK's own OAuth client: discovery, registration, sign-in and consent, then a tool list, all through
        # the public host.
        person = Person(ADMIN, PASSWORD)

        async def signed_in_tools() -> list[str]:
            async with (
                httpx2.AsyncClient(auth=oauth_provider(public_mcp, person), timeout=30) as http,
                Client(streamable_http_client(public_mcp, http_client=http)) as client,
            ):
                return [tool.name for tool in (await client.list_tools()).tools]

        tools = anyio.run(signed_in_tools)
        assert "explain_error" in tools
        assert person.authorization_url.startswith(f"{relay.url}/")

        # What the check says: every step passes, a session with a key included.
        key = new_token(env, "public-check")
        checked = _check(env, "--allow-http", "--allow-private", "--token", key)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "[FAILED]" not in checked.stdout
        assert checked.stdout.count("[ok]") == 5
        assert f"A hosted client can connect: add {public_mcp}" in checked.stdout
        # Without the stand-in's allowances, it says why a hosted client could not reach this one.
        strict = _check(env)
        assert strict.returncode != 0
        assert "Claude and ChatGPT connect to https URLs only" in strict.stdout


def test_the_check_says_what_to_do_when_the_server_runs_without_the_public_url(tmp_path):
    with _served(tmp_path, public=False) as (relay, env):
        # The way a new user met it: the host is refused before anything else.
        assert httpx2.get(f"{relay.url}/mcp", timeout=10).status_code == 421
        checked = _check(env, "--url", relay.url, "--allow-http", "--allow-private")
        assert checked.returncode != 0
        assert "[FAILED] The server refused the host name (421)" in checked.stdout
        assert f"ERRCATALOG_PUBLIC_URL={relay.url}" in checked.stdout
        assert "could not connect yet" in checked.stderr


def test_the_check_without_a_public_url_says_what_to_set():
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"}
    checked = _check(env)
    assert checked.returncode != 0
    assert "ERRCATALOG_PUBLIC_URL is not set" in checked.stderr


@pytest.mark.parametrize(
    ("raw", "url", "host", "mcp_hosts", "origin"),
    [
        ("https://Errors.Example.com/", "https://errors.example.com", "errors.example.com",
         ("errors.example.com", "errors.example.com:*"), "https://errors.example.com"),
        ("https://errors.example.com:8443/tools", "https://errors.example.com:8443/tools", "errors.example.com",
         ("errors.example.com:8443",), "https://errors.example.com:8443"),
        ("http://[::1]:9000", "http://[::1]:9000", "[::1]", ("[::1]:9000",), "http://[::1]:9000"),
    ],
)  # fmt: skip
def test_what_follows_from_the_public_url(monkeypatch, raw, url, host, mcp_hosts, origin):
    monkeypatch.setenv("ERRCATALOG_PUBLIC_URL", raw)
    public = env_public_url("ERRCATALOG_PUBLIC_URL")
    assert (public.url, public.host, public.mcp_hosts, public.origin) == (url, host, mcp_hosts, origin)


@pytest.mark.parametrize(
    "raw",
    ["errors.example.com", "ftp://errors.example.com", "https://user:pw@errors.example.com", "https://x.example/?a=1",
     "https://x.example/#top", "https://", "https://x.example:99999"],
)  # fmt: skip
def test_a_public_url_that_is_not_one_is_refused_with_the_variables_name(monkeypatch, raw):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("ERRCATALOG_PUBLIC_URL", raw)
    with pytest.raises(ImproperlyConfigured, match="ERRCATALOG_PUBLIC_URL must be the URL clients reach"):
        env_public_url("ERRCATALOG_PUBLIC_URL")


def test_the_settings_answer_to_the_public_host_and_trust_its_origin():
    script = (
        "import json, config.settings as s; print(json.dumps([s.ALLOWED_HOSTS, s.CSRF_TRUSTED_ORIGINS, "
        "s.MCP['ALLOWED_HOSTS'], s.MCP['ALLOWED_ORIGINS'], s.OAUTH['PUBLIC_URL']]))"
    )
    env = {"PATH": "/usr/bin:/bin", "ERRCATALOG_PUBLIC_URL": "https://errors.example.com"}
    done = subprocess.run(  # noqa: S603 (our own interpreter and a fixed script)
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    )
    hosts, origins, mcp_hosts, mcp_origins, public = json.loads(done.stdout)
    assert "errors.example.com" in hosts
    assert origins == ["https://errors.example.com"]
    assert {"errors.example.com", "errors.example.com:*"} <= set(mcp_hosts)
    assert "https://errors.example.com" in mcp_origins
    assert public == "https://errors.example.com"
