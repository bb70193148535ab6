"""Real, unmodified MCP servers run into failures whose truth is known, behind the served app, classified by the
default catalog's rules.

``mcp-server-time``, ``mcp-server-git`` and ``mcp-server-fetch`` from PyPI (each in a virtual environment of its
own) and ``@modelcontextprotocol/server-filesystem`` and ``server-everything`` from npm, over stdio, imported the way
an operator does (``manage.py catalog_import`` of an ``mcpServers`` block). Each failure gets a code that fits its
truth and none falls to the fallback; an input error names the parameter its text names; the upstream's own words,
which carry the fact the model needs, follow the catalog's answer as a screened, marked quote.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.config.served_app import ServedApp, embedded_environment, manage, new_token
from tests.errcatalog.outcomes.conftest import wait_until
from tests.mcpserver.gateway.test_published_upstreams import _call, _listed
from tests.mcpserver.gateway.upstreams import (
    everything_server,
    fetch_server,
    filesystem_server,
    git_server,
    time_server,
)

INPUT = {"VALIDATION_ERROR", "INVALID_PARAMETER"}


def _git(folder: Path, *args: str) -> None:
    subprocess.run(  # noqa: S603 (fixed git command)
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],  # noqa: S607
        cwd=folder, check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Iterator[tuple[ServedApp, str, Path]]:
    folder = tmp_path_factory.mktemp("real")
    repo = folder / "repo"
    repo.mkdir()
    _git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "--quiet", "-m", "one")
    (folder / "plain").mkdir()
    root = folder / "fsroot"
    root.mkdir()
    (root / "hello.txt").write_text("hello\n")
    env = embedded_environment(folder / "data", ERRCATALOG_MCP_TOOLSETS="catalog", ERRCATALOG_MCP_RATE_LIMIT="1000000")
    node, everything = everything_server()
    servers = {
        "mcpServers": {
            "time": {"command": time_server(), "args": ["--local-timezone", "Etc/UTC"]},
            "git": {"command": git_server(), "args": ["--repository", str(repo)]},
            "fetch": {"command": fetch_server(), "args": []},
            "files": {"command": filesystem_server()[0], "args": [filesystem_server()[1], str(root)]},
            "everything": {"command": node, "args": [everything, "stdio"]},
        }
    }
    servers_file = folder / "mcp.json"
    servers_file.write_text(json.dumps(servers))
    manage(env, "catalog_import", str(servers_file))
    key = new_token(env, "real")
    app = ServedApp(env, folder).start()
    wanted = {"time__convert_time", "git__git_show", "fetch__fetch", "files__read_text_file", "everything__get-sum"}
    wait_until(lambda: wanted <= _listed(app, key).keys(), seconds=120, what="the real servers' tools")
    yield app, key, folder
    app.stop()


# (tool as served, arguments ({folder} is the fixtures' folder), fitting codes, the parameter its text names or None,
# the words of the upstream's real text that carry its fact, which the model must read in the quote; None where our own
# validation answers before the upstream is called)
CASES = [
    ("time__get_current_time", {"timezone": "Mars/Olympus"}, {"INVALID_PARAMETER"}, "timezone",
     ["No time zone found with key Mars/Olympus"]),
    ("time__convert_time", {"source_timezone": "Etc/UTC", "time": "25:99", "target_timezone": "Asia/Tokyo"},
     {"INVALID_PARAMETER"}, "time", ["Expected HH:MM [24-hour format]"]),
    # The same text whichever of the two zones is unknown: no parameter is named (not "time", from "No time zone").
    ("time__convert_time", {"source_timezone": "Mars/Olympus", "time": "12:00", "target_timezone": "Etc/UTC"},
     {"VALIDATION_ERROR"}, None, ["Mars/Olympus"]),
    ("time__get_current_time", {"timezone": "Access denied - outside allowed directories"}, INPUT, "timezone",
     ["No time zone found with key Access denied"]),
    ("git__git_status", {"repo_path": "{folder}/plain"}, {"PERMISSION_DENIED"}, None,
     ["is outside the allowed repository"]),
    ("git__git_show", {"repo_path": "{folder}/repo", "revision": "deadbeef0123"}, {"NOT_FOUND"}, None,
     ["Ref 'deadbeef0123' did not resolve to an object"]),
    ("git__git_checkout", {"repo_path": "{folder}/repo", "branch_name": "no-such-branch"}, {"NOT_FOUND"}, None,
     ["Ref 'no-such-branch' did not resolve"]),
    ("git__git_show", {"repo_path": "{folder}/repo", "revision": "connection refused"}, {"NOT_FOUND"}, None,
     ["Ref 'connection refused' did not resolve"]),
    ("fetch__fetch", {"url": "http://no-such-host.invalid/"}, {"NETWORK_ERROR"}, None,
     ["no-such-host.invalid", "due to a connection issue"]),
    ("fetch__fetch", {"url": "http://127.0.0.1:1/"}, {"PERMISSION_DENIED"}, None,
     ["which is not a public address", "--allow-private-ips"]),
    ("fetch__fetch", {"url": "not a url"}, INPUT, "url", ["Input should be a valid URL, relative URL without a base"]),
    ("files__read_text_file", {"path": "/etc/passwd"}, {"PERMISSION_DENIED"}, None,
     ["Access denied - path outside allowed directories: /etc/passwd"]),
    ("files__list_directory", {"path": "/etc"}, {"PERMISSION_DENIED"}, None, ["Access denied", "/etc"]),
    ("files__read_text_file", {"path": "{folder}/fsroot/missing.txt"}, {"NOT_FOUND"}, None,
     ["ENOENT: no such file or directory"]),
    ("files__list_directory", {"path": "{folder}/fsroot/hello.txt"}, {"VALIDATION_ERROR"}, None,
     ["ENOTDIR: not a directory"]),
    ("everything__get-sum", {"a": "one", "b": 2}, INPUT, "a", None),
]  # fmt: skip


def _filled(arguments: dict, folder: Path) -> dict:
    return {k: v.replace("{folder}", str(folder)) if isinstance(v, str) else v for k, v in arguments.items()}


def _named(structured: dict) -> str | None:
    details = structured.get("details", {})
    data = details.get("data", details) if isinstance(details, dict) else {}
    return data.get("parameter") if isinstance(data, dict) else None


@pytest.mark.parametrize(("tool", "arguments", "codes", "parameter", "quoted"), CASES, ids=[c[0] for c in CASES])
def test_a_real_servers_failure_gets_a_fitting_code_and_its_own_words_quoted(real, tool, arguments, codes, parameter,
                                                                             quoted):  # fmt: skip
    app, key, folder = real
    result = _call(app, key, tool, _filled(arguments, folder))
    assert result.is_error
    structured = result.structured_content
    assert structured["code"] in codes, structured
    assert structured["code"] not in {"UPSTREAM_TOOL_FAILED", "EXECUTION_FAILURE", "UNKNOWN_ERROR"}
    text = result.content[0].text
    catalog_text = text.split("\n\nThe ", 1)[0]
    if parameter is None:
        assert _named(structured) is None and "`" not in catalog_text, structured
    else:
        wire = result.model_dump_json()
        assert _named(structured) == parameter or f"`{parameter}`" in wire or f" {parameter} " in wire, structured
    assert ": ." not in text  # no placeholder left without its value
    detail = structured.get("details", {}).get("upstream_detail")
    if quoted is None:  # answered by our own validation: the upstream was never called
        assert detail is None and "server said" not in text
        return
    # The upstream's fact reaches the model: after the catalog's whole text, on one marked line, and in the envelope.
    server = tool.split("__", 1)[0]
    assert detail["upstream"] == server and text.endswith(f'\n\nThe {server} server said: "{detail["text"]}"')
    for words in quoted:
        assert words in detail["text"], f"{words!r} of {tool}'s own text did not reach the model: {detail['text']!r}"
    assert len(detail["text"]) <= 300 and "\n" not in detail["text"]
