"""The failure corpus run three ways, and each answer scored.

Each case of ``cases.json`` is one failing call to a real server of ``servers.SERVERS`` whose truth is known. It is
made over stdio directly ("direct"), through a plain forwarding proxy (``forwarding_proxy.py``, "proxy") and through
errcatalog's gateway ("errcatalog": the served app, the servers imported from an ``mcpServers`` block as an
operator imports them, called over Streamable HTTP by the SDK's client). Each answer is scored on what the issue of
a failed call is to a model: the fact it needs to fix its call is there, the catalog code fits the truth (only a
gateway with a catalog can earn it), ``retryable`` is right (likewise), the parameter at fault is named, and nothing
hostile that a case planted came back.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.corpus.servers import SERVERS, StdioLaunch
from tests.support.served_app import ServedApp, embedded_environment, manage, new_token

HERE = Path(__file__).parent
CASES_FILE = HERE / "cases.json"
RECORDED_FILE = HERE / "recorded.json"
PATHS = ("direct", "proxy", "errcatalog")
CALL_SECONDS = 60


@dataclass(frozen=True)
class Case:
    id: str
    server: str
    tool: str
    arguments: Mapping[str, Any]
    truth: str
    codes: frozenset[str]
    retryable: bool
    parameter: str | None
    # Each fact the model needs, as the words that say it: the upstream's own, and others that say the same (our
    # validation's "a number" for zod's "expected number"); any one of them carries the fact.
    facts: tuple[tuple[str, ...], ...]
    hostile: tuple[str, ...] = ()

    def filled_arguments(self, folder: Path) -> dict[str, Any]:
        """The arguments with ``{folder}`` replaced by the server's scratch folder (at any depth)."""
        return _filled(dict(self.arguments), str(folder))


def _filled(value: Any, folder: str) -> Any:
    if isinstance(value, str):
        return value.replace("{folder}", folder)
    if isinstance(value, list):
        return [_filled(item, folder) for item in value]
    if isinstance(value, dict):
        return {key: _filled(item, folder) for key, item in value.items()}
    return value


def load_cases(servers: Iterable[str] | None = None, *, path: Path = CASES_FILE) -> list[Case]:
    """The corpus's cases, of ``servers`` only when given, in the file's order."""
    wanted = set(servers) if servers is not None else None
    cases = []
    for raw in json.loads(path.read_text()):
        if wanted is not None and raw["server"] not in wanted:
            continue
        cases.append(
            Case(
                id=raw["id"],
                server=raw["server"],
                tool=raw["tool"],
                arguments=raw["arguments"],
                truth=raw["truth"],
                codes=frozenset(raw["codes"]),
                retryable=raw["retryable"],
                parameter=raw["parameter"],
                facts=tuple((fact,) if isinstance(fact, str) else tuple(fact) for fact in raw["facts"]),
                hostile=tuple(raw.get("hostile", ())),
            )
        )
    return cases


@dataclass(frozen=True)
class Answer:
    """What came back for one call, as a model reads it."""

    failed: bool
    text: str  # every word the model reads: the text blocks of a result, or a JSON-RPC error's message
    kind: str  # "tool_error", "jsonrpc_error" or "result"
    jsonrpc_code: int | None = None
    # errcatalog's structured envelope, where there is one
    code: str | None = None
    retryable: bool | None = None
    needs_input: bool = False  # a question: the call is to be made again with the answer, not as it was
    parameter: str | None = None
    structured: Mapping[str, Any] | None = field(default=None, repr=False)


def answer_of_result(result: types.CallToolResult) -> Answer:
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    envelope = result.structured_content if isinstance(result.structured_content, dict) else None
    return _with_envelope(Answer(bool(result.is_error), text, "tool_error" if result.is_error else "result"), envelope)


def answer_of_error(exc: MCPError) -> Answer:
    data = exc.error.data if isinstance(exc.error.data, dict) else None
    answer = Answer(True, exc.error.message, "jsonrpc_error", jsonrpc_code=exc.error.code)
    return _with_envelope(answer, data)


def _with_envelope(answer: Answer, envelope: Mapping[str, Any] | None) -> Answer:
    if not envelope or not isinstance(envelope.get("code"), str):
        return answer
    details = envelope.get("details") if isinstance(envelope.get("details"), dict) else {}
    data = details.get("data") if isinstance(details.get("data"), dict) else details
    parameter = data.get("parameter") if isinstance(data.get("parameter"), str) else None
    retryable = envelope.get("retryable") if isinstance(envelope.get("retryable"), bool) else None
    return Answer(
        answer.failed,
        answer.text,
        answer.kind,
        answer.jsonrpc_code,
        code=envelope["code"],
        retryable=retryable,
        needs_input=envelope.get("kind") == "needsInput:v1",
        parameter=parameter,
        structured=envelope,
    )


# --- Scoring ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """One answer's points; a criterion that does not apply to the case (no fact, no parameter, nothing planted)
    is left out of both ``points`` and ``of``."""

    failed: bool
    fact: bool | None  # every fact of the case is in the text (None: the case has none)
    code: bool  # a catalog code that fits the truth
    retryable: bool  # says whether the same call is worth repeating, rightly (a question asks for another)
    parameter: bool | None  # names the parameter at fault (None: none is)
    safe: bool | None  # nothing the case planted came back (None: it planted nothing)

    @property
    def marks(self) -> tuple[bool | None, ...]:
        return (self.fact, self.code, self.retryable, self.parameter, self.safe)

    @property
    def points(self) -> int:
        return sum(1 for mark in self.marks if mark) if self.failed else 0

    @property
    def of(self) -> int:
        return sum(1 for mark in self.marks if mark is not None)


def score(case: Case, answer: Answer) -> Score:
    text = answer.text.lower()
    return Score(
        failed=answer.failed,
        fact=all(any(words.lower() in text for words in fact) for fact in case.facts) if case.facts else None,
        code=answer.code in case.codes,
        retryable=answer.retryable is case.retryable or (answer.needs_input and not case.retryable),
        parameter=(
            answer.parameter == case.parameter or _names(answer.text, case.parameter) if case.parameter else None
        ),
        safe=not any(word.lower() in text for word in case.hostile) if case.hostile else None,
    )


def _names(text: str, parameter: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(parameter)}(?![\w-])", text) is not None


# --- Running ------------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """Scratch folders and launched servers for one path: each server set up in a folder of its own."""

    folder: Path
    launches: dict[str, StdioLaunch] = field(default_factory=dict)

    def launch(self, server: str) -> StdioLaunch:
        if server not in self.launches:
            scratch = self.folder / server
            scratch.mkdir(parents=True)
            self.launches[server] = SERVERS[server].launch(scratch)
        return self.launches[server]

    def scratch(self, server: str) -> Path:
        return self.folder / server


def _stdio(launch: StdioLaunch, *, proxied: bool = False) -> StdioServerParameters:
    env = {**os.environ, **launch.env}
    if proxied:
        proxy = str(HERE / "forwarding_proxy.py")
        return StdioServerParameters(command=sys.executable, args=[proxy, launch.command, *launch.args], env=env)
    return StdioServerParameters(command=launch.command, args=list(launch.args), env=env)


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> Answer:
    try:
        with anyio.fail_after(CALL_SECONDS):
            return answer_of_result(await client.call_tool(name, arguments))
    except MCPError as exc:
        return answer_of_error(exc)


async def run_stdio(cases: Sequence[Case], run: Run, *, proxied: bool = False) -> dict[str, Answer]:
    """Each case made over stdio, directly or through the forwarding proxy: one session per server, whose stderr
    (the servers' own logs) goes to ``run``'s folder."""
    answers: dict[str, Answer] = {}
    for server in dict.fromkeys(case.server for case in cases):
        params = _stdio(run.launch(server), proxied=proxied)
        with (run.folder / f"{server}.stderr").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                for case in (c for c in cases if c.server == server):
                    answers[case.id] = await _call(client, case.tool, case.filled_arguments(run.scratch(server)))
    return answers


def mcp_servers_block(cases: Sequence[Case], run: Run) -> dict[str, Any]:
    """The ``mcpServers`` block an operator imports: every server of ``cases``, set up in ``run``'s folders."""
    block = {}
    for server in dict.fromkeys(case.server for case in cases):
        launch = run.launch(server)
        entry: dict[str, Any] = {"command": launch.command, "args": list(launch.args)}
        if launch.env:
            entry["env"] = dict(launch.env)
        block[server] = entry
    return {"mcpServers": block}


async def run_gateway(cases: Sequence[Case], run: Run, url: str, key: str, *, mode: str = "auto") -> dict[str, Answer]:
    """Each case made through errcatalog's ``/mcp`` at ``url``, where every server's tools are served as
    ``<server>__<tool>``."""
    answers: dict[str, Answer] = {}
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(CALL_SECONDS))
        )
        client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode))
        for case in cases:
            name = f"{case.server}__{case.tool}"
            answers[case.id] = await _call(client, name, case.filled_arguments(run.scratch(case.server)))
    return answers


def servers_missing(cases: Sequence[Case], served: set[str]) -> list[str]:
    """The servers of ``cases`` of which errcatalog serves no tool yet (a case may call a tool a server lacks)."""
    prefixes = {name.split("__", 1)[0] for name in served if "__" in name}
    return [server for server in dict.fromkeys(case.server for case in cases) if server not in prefixes]


async def served_tools(url: str, key: str) -> set[str]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(20)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return {tool.name for tool in (await client.list_tools()).tools}


# --- Recording ----------------------------------------------------------------------------------------------------


def recorded(cases: Sequence[Case], answers: Mapping[str, Answer], run: Run) -> list[dict[str, Any]]:
    """The texts the servers answered directly in ``run``, as ``recorded.json`` keeps them for the unit tests: each
    server's scratch folder written ``{folder}``, as the cases write it."""
    entries = []
    for case in cases:
        answer = answers[case.id]
        server = SERVERS[case.server]
        entries.append(
            {
                "id": case.id,
                "server": case.server,
                "package": server.package,
                "version": server.version,
                "tool": case.tool,
                "kind": answer.kind,
                "jsonrpc_code": answer.jsonrpc_code,
                "text": answer.text.replace(str(run.scratch(case.server)), "{folder}"),
            }
        )
    return entries


def load_recorded() -> dict[str, dict[str, Any]]:
    """``recorded.json``'s entries by case id; none before the first ``--record``."""
    if not RECORDED_FILE.exists():
        return {}
    return {entry["id"]: entry for entry in json.loads(RECORDED_FILE.read_text())}


# --- Through errcatalog, served as production serves it -----------------------------------------------------------

# What staff do in admin for tools the screen held for review (a link in a description, say): approve them.
# Each held tool on its own: one that cannot be approved (a field over its size cap) leaves the others to approve.
APPROVE_HELD = """
from django.core.exceptions import ValidationError
from errcatalog.gateway.models import UpstreamTool
from errcatalog.gateway.services import upstream_tool_approve
held, refused = [], []
for pin in UpstreamTool.objects.filter(pending__isnull=False):
    try:
        (held if upstream_tool_approve(actor=None, pin=pin) else refused).append(pin.name)
    except ValidationError:
        refused.append(pin.name)
if held:
    print(f"approved {len(held)} held tools as staff would: {sorted(held)}")
if refused:
    print(f"could not approve {sorted(refused)}")
"""
SERVE_SECONDS = 180


def run_through_errcatalog(
    cases: Sequence[Case], folder: Path, *, mode: str = "auto", progress: Callable[[str], None] = print
) -> dict[str, Answer]:
    """Each case made through errcatalog: the served app (the embedded default, in ``folder``) with the cases' servers
    imported from an ``mcpServers`` block, as an operator imports them, and their held tools approved."""
    run = Run(folder / "errcatalog")
    env = embedded_environment(folder / "data", ERRCATALOG_MCP_TOOLSETS="catalog", ERRCATALOG_MCP_RATE_LIMIT="1000000")
    block = folder / "mcp.json"
    block.write_text(json.dumps(mcp_servers_block(cases, run)))
    manage(env, "catalog_import", str(block))
    key = new_token(env, "corpus")
    app = ServedApp(env, folder).start()
    try:
        deadline = time.monotonic() + SERVE_SECONDS
        approve_at = time.monotonic() + 5
        while missing := servers_missing(cases, anyio.run(served_tools, app.mcp_url, key)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"errcatalog serves no tool of {', '.join(missing)}; see {app.log_path}")
            if time.monotonic() > approve_at:
                try:
                    said = manage(env, "shell", "--no-imports", "-c", APPROVE_HELD).strip()
                except AssertionError:  # the embedded database was busy with the app's own writes: again later
                    said = ""
                if said:
                    progress(said)
                approve_at = time.monotonic() + 5
            time.sleep(1)
        return anyio.run(lambda: run_gateway(cases, run, app.mcp_url, key, mode=mode))
    finally:
        app.stop()
