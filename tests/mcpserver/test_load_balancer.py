"""Several web processes behind the repository's HAProxy configuration (deploy/haproxy/haproxy.cfg).

The deployment as docker-compose runs it, without Docker: Debian's ``haproxy`` with the repository's own file, in
front of two uvicorn processes of ``config.asgi:application`` (compose's ``web`` command line: one process each)
that share the test database and a Redis database. The processes are found the way compose's are, through DNS:
a small resolver here announces both addresses under one name, as Docker's does for ``--scale web=2``.

A 2025-11-25 session lives in the process that created it; without the stick table the second request of a
session would already land on the other process ("Session not found").
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.config.compose import service_command
from tests.mcpserver.gateway.upstreams import ASKING_SERVER, UpstreamProcess
from tests.support.processes import WorkerDatabase
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CFG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
WEB_SERVICE = "web.errcatalog.test"
BACKEND_ADDRESSES = ("127.0.0.1", "127.0.0.2")
LEGACY = "2025-11-25"


# --- A resolver that announces the web processes, as Docker's embedded DNS does -------------------------------


class ServiceDns:
    """UDP DNS on 127.0.0.1: A records of ``name`` are ``addresses``; any other name does not exist."""

    def __init__(self, name: str, addresses: tuple[str, ...]) -> None:
        self.name = name
        self.addresses = addresses
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="service-dns", daemon=True)

    def __enter__(self) -> ServiceDns:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, peer = self.sock.recvfrom(4096)
            except TimeoutError:
                continue
            with contextlib.suppress(Exception):  # a malformed query gets no answer, as from a real resolver
                self.sock.sendto(self._answer(query), peer)

    def _answer(self, query: bytes) -> bytes:
        ident, flags = struct.unpack("!HH", query[:4])
        position, labels = 12, []
        while query[position]:
            length = query[position]
            labels.append(query[position + 1 : position + 1 + length].decode().lower())
            position += 1 + length
        qtype = struct.unpack("!H", query[position + 1 : position + 3])[0]
        question = query[12 : position + 5]
        records: list[bytes] = []
        rcode = 0
        if ".".join(labels) != self.name:
            rcode = 3  # NXDOMAIN
        elif qtype == 1:  # A; other types of a known name: no records
            for address in self.addresses:
                records.append(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 1, 4) + socket.inet_aton(address))
        reply_flags = 0x8000 | 0x0400 | (flags & 0x0100) | 0x0080 | rcode  # response, authoritative, RD, RA
        return struct.pack("!HHHHHH", ident, reply_flags, 1, len(records), 0, 0) + question + b"".join(records)


# --- The processes ------------------------------------------------------------------------------------------


def _port_free_on_all(addresses: tuple[str, ...]) -> int:
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind((addresses[0], 0))
            port = sock.getsockname()[1]
        try:
            for address in addresses[1:]:
                with socket.socket() as sock:
                    sock.bind((address, port))
        except OSError:
            continue
        return port
    raise AssertionError("no port free on every backend address")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class WebProcess:
    """One uvicorn process of the app, started as compose's ``web`` service starts it (one process, no workers)."""

    def __init__(self, address: str, port: int, environment: dict[str, str], log: Path) -> None:
        self.address = address
        self.port = port
        self.log = log
        # docker-compose.yml's own web command, on this machine's address and port.
        command = service_command("web")
        assert command[:2] == ["uvicorn", "config.asgi:application"]
        arguments = [arg for arg in command[2:] if not arg.startswith(("--host=", "--port="))]
        self.process = subprocess.Popen(  # noqa: S603 (our own interpreter and compose's command line)
            [sys.executable, "-m", *command[:2], f"--host={address}", f"--port={port}", *arguments],
            cwd=ROOT,
            env=environment,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}"

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"web process {self.address} exited:\n{self.log.read_text()[-3000:]}")
        try:
            return httpx2.get(f"{self.url}/healthz", headers={"Host": "127.0.0.1"}, timeout=2).status_code == 200
        except httpx2.HTTPError:
            return False

    def mcp_requests(self) -> int:
        """POST /mcp requests this process answered, from its access log."""
        return self.log.read_text().count('"POST /mcp HTTP/1.1"')

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


class HAProxy:
    def __init__(self, environment: dict[str, str], log: Path, stats_socket: Path) -> None:
        self.log = log
        self.stats_socket = stats_socket
        self.process = subprocess.Popen(  # noqa: S603 (the system's haproxy and the repository's file)
            [shutil.which("haproxy") or "haproxy", "-db", "-f", str(HAPROXY_CFG)],
            env=environment,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"haproxy exited:\n{self.log.read_text()[-3000:]}")
        return self.stats_socket.exists()

    def command(self, line: str) -> str:
        if self.process.poll() is not None:
            raise AssertionError(f"haproxy exited:\n{self.log.read_text()[-3000:]}")
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.stats_socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def servers(self) -> dict[str, str]:
        """The web backend's servers that DNS gave an address: {"127.0.0.1:port": "UP" | "DOWN" | ...}."""
        rows = csv.DictReader(io.StringIO(self.command("show stat").lstrip("# ")))
        return {row["addr"]: row["status"] for row in rows if row["pxname"] == "web" and row["addr"]}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=10)


class Deployment:
    def __init__(self, url: str, haproxy: HAProxy, web: list[WebProcess], key: str) -> None:
        self.url = url
        self.haproxy = haproxy
        self.web = web
        self.key = key
        self.statuses: list[tuple[str, int, str | None]] = []  # (method, status, session id sent)
        self.issued: list[str] = []  # session ids the app issued, in order

    @contextlib.asynccontextmanager
    async def client(self, *, mode: str, **options):
        async def record(response: httpx2.Response) -> None:
            self.statuses.append(
                (response.request.method, response.status_code, response.request.headers.get("mcp-session-id"))
            )
            if (issued := response.headers.get("mcp-session-id")) and issued not in self.issued:
                self.issued.append(issued)

        async with (
            httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {self.key}"},
                timeout=httpx2.Timeout(20),
                event_hooks={"response": [record]},
            ) as http,
            Client(streamable_http_client(self.url, http_client=http), mode=mode, **options) as client,
        ):
            yield client

    def session_owners(self, session_id: str) -> list[WebProcess]:
        """The live processes that know ``session_id``, asked directly, around the load balancer."""
        owners = []
        for web in self.web:
            if web.process.poll() is not None:
                continue
            response = httpx2.post(
                f"{web.url}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={
                    "Host": f"127.0.0.1:{web.port}",
                    "Authorization": f"Bearer {self.key}",
                    "Mcp-Session-Id": session_id,
                    "MCP-Protocol-Version": LEGACY,
                    "Accept": "application/json, text/event-stream",
                },
                timeout=10,
            )
            assert response.status_code in (200, 404), response.text
            if response.status_code == 200:
                owners.append(web)
        return owners


@pytest.fixture
def deployment(api_key, redis_url, tmp_path) -> Iterator[Deployment]:
    if shutil.which("haproxy") is None:
        pytest.fail("Debian's haproxy package is required (./dev test installs it): apt-get install haproxy")
    database = WorkerDatabase(tmp_path)
    database.push()
    port = _port_free_on_all(BACKEND_ADDRESSES)
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ERRCATALOG_", "DJANGO_"))},
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "ERRCATALOG_DEBUG": "0",
        # One key for every process: 2026-07-28 requestState sealed by one process is opened by another.
        "SECRET_KEY": "load-balancer-test-" + os.urandom(24).hex(),
        "ERRCATALOG_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": database.url,
        "DATABASE_CONN_MAX_AGE": "0",
        "REDIS_URL": redis_url,
        "ALLOWED_HOSTS": "127.0.0.1",
        "ERRCATALOG_MCP_ALLOWED_HOSTS": "127.0.0.1:*",
        "ERRCATALOG_MCP_TOOLSETS": "catalog,demo",
        "ERRCATALOG_OUTCOMES": "0",
        "BEHIND_TLS_PROXY": "1",
        "LOG_LEVEL": "WARNING",
    }
    web = [WebProcess(address, port, environment, tmp_path / f"web-{address}.log") for address in BACKEND_ADDRESSES]
    haproxy = None
    try:
        for process in web:
            wait_until(process.healthy, seconds=60, what=f"web process {process.address}")
        with ServiceDns(WEB_SERVICE, BACKEND_ADDRESSES) as dns:
            front = _free_port()
            haproxy = HAProxy(
                {
                    "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                    "HAPROXY_BIND": f"127.0.0.1:{front}",
                    "HAPROXY_WEB_SERVICE": WEB_SERVICE,
                    "HAPROXY_WEB_PORT": str(port),
                    "HAPROXY_WEB_SLOTS": "4",
                    "HAPROXY_DNS": dns.address,
                    "HAPROXY_STATS_SOCKET": str(tmp_path / "haproxy.sock"),
                },
                tmp_path / "haproxy.log",
                tmp_path / "haproxy.sock",
            )
            wait_until(haproxy.ready, seconds=10, what="haproxy's runtime API")
            expected = {f"{address}:{port}": "UP" for address in BACKEND_ADDRESSES}
            wait_until(lambda: haproxy.servers() == expected, seconds=30, what="both web processes UP in haproxy")
            yield Deployment(f"http://127.0.0.1:{front}/mcp", haproxy, web, api_key)
    finally:
        if haproxy is not None:
            haproxy.stop()
        for process in web:
            process.stop()


class Answers:
    def __init__(self, content: dict) -> None:
        self.content = content
        self.asked = 0

    async def __call__(self, context, params) -> types.ElicitResult:
        self.asked += 1
        return types.ElicitResult(action="accept", content=self.content)


def _text(result) -> str:
    return result.content[0].text


def test_a_2025_session_stays_on_its_process_and_fails_over_to_a_new_session(deployment):
    answers = Answers({"content": "Minutes of the meeting."})

    async def scenario() -> None:
        async with deployment.client(mode="legacy", elicitation_callback=answers) as client:
            assert client.protocol_version == LEGACY
            [session_id] = deployment.issued
            # Many requests of one session: round-robin alone would send every other one elsewhere.
            for _ in range(3):
                tools = await client.list_tools()
                assert {"explain_error", "create_document"} <= {tool.name for tool in tools.tools}
                codes = await client.call_tool("list_error_codes", {})
                assert not codes.is_error, _text(codes)
            # An elicitation round trip: the server's request and the client's answer travel on the session.
            created = await client.call_tool("create_document", {"title": "Minutes"})
            assert answers.asked == 1
            assert not created.is_error, _text(created)
            assert created.structured_content["status"] == "created"

            owners = deployment.session_owners(session_id)
            assert len(owners) == 1, "a session lives in exactly one process"
            [owner] = owners
            survivor = next(web for web in deployment.web if web is not owner)
            assert all(status < 400 for _, status, sent in deployment.statuses if sent == session_id)

            owner.process.send_signal(signal.SIGKILL)
            owner.process.wait(timeout=10)
            with pytest.raises(MCPError):
                await client.call_tool("list_error_codes", {})
            # The spec's answer to an unknown session, from the survivor (not a proxy error for a dead process).
            assert ("POST", 404, session_id) in deployment.statuses

        async with deployment.client(mode="legacy") as client:
            assert client.protocol_version == LEGACY
            assert deployment.issued[0] == session_id
            new_session = deployment.issued[-1]
            assert new_session != session_id
            codes = await client.call_tool("list_error_codes", {})
            assert not codes.is_error, _text(codes)
            assert deployment.session_owners(new_session) == [survivor]

    asyncio.run(scenario())


def test_2026_requests_are_balanced_over_every_process(deployment):
    answers = Answers({"content": "Written on the other process, maybe."})

    async def scenario() -> None:
        async with deployment.client(mode="auto", elicitation_callback=answers) as client:
            assert client.protocol_version == "2026-07-28"
            for _ in range(6):
                result = await client.call_tool("list_error_codes", {})
                assert not result.is_error, _text(result)
            # An input-required round trip: the second request may land on the other process, which opens the
            # requestState the first one sealed (one key everywhere).
            for _ in range(2):
                created = await client.call_tool("create_document", {"title": "Notes"})
                assert not created.is_error, _text(created)
                assert created.structured_content["status"] == "created"
            assert answers.asked == 2

    asyncio.run(scenario())
    assert all(status < 400 for _, status, _ in deployment.statuses)
    assert all(web.mcp_requests() >= 3 for web in deployment.web), [web.mcp_requests() for web in deployment.web]


def test_the_load_balancer_is_the_edge_for_forwarded_headers_and_slow_clients(deployment):
    # A client cannot claim HTTPS (or another address) through forged forwarded headers: haproxy sets them, so
    # over plain HTTP the production app still redirects to HTTPS.
    front = deployment.url.removesuffix("/mcp")
    response = httpx2.get(
        f"{front}/admin/login/",
        headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"},
        follow_redirects=False,
        timeout=10,
    )
    assert response.status_code == 301
    assert response.headers["location"].startswith("https://127.0.0.1:")
    # The health check stays reachable over HTTP (load balancers and Docker call it without TLS).
    assert httpx2.get(f"{front}/healthz", follow_redirects=False, timeout=10).status_code == 200

    # uvicorn itself waits for a request head forever (slowloris); haproxy's "timeout http-request" ends it.
    host, port = front.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        sock.settimeout(60)  # a bound on the wait, not a timing check: the configured limit is 10 s
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


@pytest.fixture
def asking_upstream(tmp_path) -> Iterator[str]:
    """``asking_server.py`` (a 2025-11-25 upstream that asks in mid-call) over Streamable HTTP, imported into the test
    database before ``deployment`` starts the web processes on it."""
    from errcatalog.gateway.services import upstreams_import

    upstream = UpstreamProcess(ASKING_SERVER, "http", log=tmp_path / "asking.log").start()
    upstreams_import({"mcpServers": {"asking": {"type": "http", "url": upstream.url}}}, actor=None)
    yield upstream.url
    upstream.kill()


@pytest.mark.parametrize("progress", [False, True])
def test_a_2026_call_parked_on_a_2025_upstream_gets_its_answers_on_the_process_that_holds_it(
    asking_upstream, deployment, progress
):
    # Four questions, four answers: without the stick rule, round-robin sends each answer to the process that does
    # not hold the call, which starts it afresh and asks the first question again (never ending in four rounds).
    # With progress asked for, each response streams (SSE) and may begin before the upstream asks: named ahead.
    def one_name_per_question(params) -> dict:
        return {"name": "Ana"} if "name" in params.requested_schema["properties"] else {"colour": "teal"}

    async def elicitation(context, params) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=one_name_per_question(params))

    async def sampling(context, params) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="hi"), model="m")

    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/work")])

    heard: list[str | None] = []

    async def noted(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)  # asking for progress makes each response a stream

    async def listed() -> set[str]:
        async with deployment.client(mode="auto") as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    wait_until(lambda: "asking__interview" in asyncio.run(listed()), seconds=60, what="the upstream's tools")

    async def scenario() -> types.CallToolResult:
        async with deployment.client(
            mode="auto", elicitation_callback=elicitation, sampling_callback=sampling, list_roots_callback=roots
        ) as client:
            assert client.protocol_version == "2026-07-28"
            return await client.call_tool("asking__interview", {}, progress_callback=noted if progress else None)

    result = asyncio.run(scenario())
    assert not result.is_error, _text(result)
    assert _text(result) == "accept:Ana accept:teal model:hi roots:file:///srv/work run:1"
    assert heard == (["about to ask"] * 2 if progress else [])
    assert all(status < 400 for _, status, _ in deployment.statuses)
