"""The gateway tests' upstream servers, each in a process of its own on 127.0.0.1 or over stdio.

Ours (an SDK server with hostile failing tools, a garbage server) run from this folder. The real, unmodified
published servers are installed as their users install them, pinned, into ``var/upstreams/`` once and reused
after: ``@modelcontextprotocol/server-everything`` and ``server-filesystem`` from npm (run by the machine's Node),
and ``mcp-server-time``, ``mcp-server-git`` and ``mcp-server-fetch`` from PyPI, each in a virtual environment of
its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx2

from tests.support.processes import REPO_ROOT
from tests.support.recorder import free_port
from tests.support.served_app import embedded_environment
from tests.support.waiting import wait_until

HERE = Path(__file__).parent


def gateway_environment(data_dir: Path, **extra: str) -> dict[str, str]:
    """A served gateway's environment (``embedded_environment``): the catalog's tools only, no rate limit to meet,
    a lost upstream reconnected within a second; ``extra`` on top."""
    return embedded_environment(
        data_dir,
        ERRCATALOG_MCP_TOOLSETS="catalog",
        ERRCATALOG_MCP_RATE_LIMIT="1000000",
        ERRCATALOG_GATEWAY_RECONNECT_MAX_SECONDS="1",
        **extra,
    )


# An SDK MCPServer with working and hostile failing tools (``upstream_server.py stdio`` runs it over stdio).
UPSTREAM_SERVER = str(HERE / "upstream_server.py")
# An SDK low-level server whose resource subscriptions can be watched (``watched_server.py``).
WATCHED_SERVER = str(HERE / "watched_server.py")
# An SDK low-level server that asks for a sign-in at a URL and says when it completed (``sign_in_server.py``).
SIGN_IN_SERVER = str(HERE / "sign_in_server.py")
# An SDK low-level server that asks its client in mid-call and counts what it ran (``asking_server.py``).
ASKING_SERVER = str(HERE / "asking_server.py")
# A raw server that answers the handshake well and its tool calls with HTTP errors and garbage.
GARBAGE_SERVER = str(HERE / "garbage_server.py")


UPSTREAMS_DIR = REPO_ROOT / "var" / "upstreams"
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
TIME_PACKAGE = "mcp-server-time"
TIME_VERSION = "2026.10.19"


GIT_PACKAGE = "mcp-server-git"
GIT_VERSION = "2026.10.19"
FETCH_PACKAGE = "mcp-server-fetch"
FETCH_VERSION = "2026.10.24"
FILESYSTEM_PACKAGE = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_VERSION = "2026.8.31"


def npm_package(package_name: str, version: str) -> Path:
    """The folder of an npm package installed (pinned) into the shared ``node_modules``; installed once."""
    package = UPSTREAMS_DIR / "node_modules" / package_name
    manifest = package / "package.json"
    if not manifest.exists() or json.loads(manifest.read_text())["version"] != version:
        UPSTREAMS_DIR.mkdir(parents=True, exist_ok=True)
        if not (UPSTREAMS_DIR / "package.json").exists():
            (UPSTREAMS_DIR / "package.json").write_text('{"private": true}\n')
        subprocess.run(  # noqa: S603 (npm with a pinned package)
            [shutil.which("npm") or "npm", "install", "--prefix", str(UPSTREAMS_DIR), "--no-audit", "--no-fund",
             "--loglevel=error", f"{package_name}@{version}"],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    return package


def everything_server() -> list[str]:
    """The command that runs npm's ``server-everything`` (add ``stdio`` or ``streamableHttp``); installed once."""
    package = npm_package(EVERYTHING_PACKAGE, EVERYTHING_VERSION)
    return [shutil.which("node") or "node", str(package / "dist" / "index.js")]


def filesystem_server() -> list[str]:
    """The command that runs npm's ``server-filesystem`` (add the allowed folders); installed once."""
    package = npm_package(FILESYSTEM_PACKAGE, FILESYSTEM_VERSION)
    return [shutil.which("node") or "node", str(package / "dist" / "index.js")]


def pypi_program(folder: str, package: str, version: str, script: str | None = None, *pins: str) -> str:
    """The console script ``script`` (by default the one named as ``package``) of ``package==version``, from a virtual
    environment of its own in ``var/upstreams/<folder>`` (as ``uvx`` gives it); installed once, again when the pinned
    version changes. ``pins`` are requirements installed with it where the package's own bounds let in a release that
    breaks it (``mcp<2``)."""
    venv = UPSTREAMS_DIR / folder
    program = venv / "bin" / (script or package)
    stamp = venv / "installed-version"
    wanted = f"{package}=={version}"
    stamped = " ".join((wanted, *pins)) if pins else version
    if not program.exists() or not stamp.exists() or stamp.read_text() != stamped:
        shutil.rmtree(venv, ignore_errors=True)
        uv = shutil.which("uv")  # as ``uvx <package>`` installs it; ``./dev`` puts uv on the machine
        if uv and subprocess.run([uv, "--version"], capture_output=True, check=False).returncode == 0:  # noqa: S603
            commands = [
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), wanted, *pins],
            ]
        else:
            commands = [
                [sys.executable, "-m", "venv", str(venv)],
                [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 wanted, *pins],
            ]  # fmt: skip
        for command in commands:
            subprocess.run(command, check=True, capture_output=True, timeout=900)  # noqa: S603 (pinned package)
        stamp.write_text(stamped)
    return str(program)


def time_server() -> str:
    """The ``mcp-server-time`` program of a virtual environment of its own; installed once."""
    return pypi_program("time", TIME_PACKAGE, TIME_VERSION)


def git_server() -> str:
    """The ``mcp-server-git`` program of a virtual environment of its own; installed once."""
    return pypi_program("git", GIT_PACKAGE, GIT_VERSION)


def fetch_server() -> str:
    """The ``mcp-server-fetch`` program of a virtual environment of its own; installed once."""
    return pypi_program("fetch", FETCH_PACKAGE, FETCH_VERSION)


class UpstreamProcess:
    """``python SCRIPT [ARGS] PORT`` serving Streamable HTTP at ``url``; ``start`` waits until it answers, ``kill``
    takes it away at once, and ``start`` again brings it back on the same port. ``UpstreamProcess.command_line``
    runs another program, given the port in its environment (``PORT``) instead."""

    def __init__(self, script: str, *args: str, log: Path | None = None) -> None:
        port = free_port()
        self.command = [sys.executable, script, *args, str(port)]
        self.env: dict[str, str] | None = None
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log = log
        self.process: subprocess.Popen | None = None

    @classmethod
    def command_line(cls, command: list[str], *, log: Path | None = None) -> UpstreamProcess:
        upstream = cls("", log=log)
        port = upstream.command[-1]
        upstream.command = command
        upstream.env = {**os.environ, "PORT": port}
        return upstream

    def start(self) -> UpstreamProcess:
        out = self.log.open("ab") if self.log else None
        try:
            self.process = subprocess.Popen(  # noqa: S603 (fixed command line)
                self.command, env=self.env, stdout=out, stderr=subprocess.STDOUT if out else None
            )
        finally:
            if out is not None:
                out.close()  # the child has its own copy
        wait_until(self._answers, seconds=30, what="the upstream to answer")
        return self

    def _answers(self) -> bool:
        try:
            httpx2.get(self.url, timeout=1)
        except httpx2.TransportError:
            return False
        return True

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
