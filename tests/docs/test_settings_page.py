"""docs/reference/settings.md documents every environment variable the settings read, with its default and lowest
value as the code has them, and nothing the code does not read."""

from __future__ import annotations

import ast
import re

from tests.docs.reference_pages import REFERENCE_DIR, REPO_ROOT

PAGE = REFERENCE_DIR / "settings.md"
SETTINGS = REPO_ROOT / "config" / "settings.py"
# Read outside config/settings.py (tracing, Prometheus, commands, tests, compose, haproxy) or by libraries.
READ_ELSEWHERE = {
    "PROMETHEUS_MULTIPROC_DIR": REPO_ROOT / "errcatalog" / "outcomes" / "prometheus.py",
    "OTEL_EXPORTER_OTLP_ENDPOINT": REPO_ROOT / "config" / "tracing.py",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": REPO_ROOT / "config" / "tracing.py",
    "OTEL_TRACES_EXPORTER": REPO_ROOT / "config" / "tracing.py",
    "OTEL_SDK_DISABLED": REPO_ROOT / "config" / "tracing.py",
    "OTEL_SERVICE_NAME": REPO_ROOT / "config" / "tracing.py",
    "ERRCATALOG_ADMIN_PASSWORD": REPO_ROOT / "errcatalog" / "management" / "commands" / "bootstrap_admin.py",
    "HOST": REPO_ROOT / "dev",
    "PORT": REPO_ROOT / "dev",
    "ERRCATALOG_TEST_REDIS_URL": REPO_ROOT / "tests" / "conftest.py",
    "ERRCATALOG_CHROMIUM": REPO_ROOT / "dev",
    "POSTGRES_PASSWORD": REPO_ROOT / "docker-compose.yml",
    "WORKER_CONCURRENCY": REPO_ROOT / "docker-compose.yml",
    "WEB_TIMEOUT_KEEP_ALIVE": REPO_ROOT / "docker-compose.yml",
    "WEB_MAX_REQUEST_HEAD_BYTES": REPO_ROOT / "docker-compose.yml",
    "WEB_LIMIT_CONCURRENCY": REPO_ROOT / "docker-compose.yml",
    "WEB_GRACEFUL_SHUTDOWN_SECONDS": REPO_ROOT / "docker-compose.yml",
    "TLS_PORT": REPO_ROOT / "docker-compose.yml",
    "HAPROXY_TLS_CERT": REPO_ROOT / "docker-compose.yml",
    "HAPROXY_CERTS_DIR": REPO_ROOT / "docker-compose.yml",
    "HAPROXY_UPSTREAM_TLS": REPO_ROOT / "docker-compose.yml",
    "HAPROXY_WEB_SLOTS": REPO_ROOT / "docker-compose.yml",
    "HAPROXY_SESSION_EXPIRE": REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg",
    "HAPROXY_MAXCONN": REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg",
    "HAPROXY_STATS_SOCKET": REPO_ROOT / "deploy" / "haproxy" / "haproxy.cfg",
}


def documented_rows() -> dict[str, list[str]]:
    """Each table row of the page by the variable in its first cell: the row's cells."""
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("| `") else []
        if cells:
            name = re.fullmatch(r"`([A-Z][A-Z0-9_]*)`", cells[0])
            assert name, f"one variable per row: {cells[0]}"
            assert name[1] not in rows, f"{name[1]} is documented twice"
            rows[name[1]] = cells
    return rows


def _constant(node: ast.expr) -> object:
    """The value of a default made of constants (``16 * 1024``), else ``None``: a default computed at start."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List) and all(isinstance(item, ast.Constant) for item in node.elts):
        return [item.value for item in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _constant(node.left), _constant(node.right)
        if isinstance(left, int) and isinstance(right, int):
            return left * right
    return None


def settings_reads() -> dict[str, tuple[object, int | None]]:
    """Every variable config/settings.py reads through its ``env_*`` helpers: (its default, its minimum)."""
    reads: dict[str, tuple[object, int | None]] = {}
    for node in ast.walk(ast.parse(SETTINGS.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith("env_"):
            name = node.args[0]
            assert isinstance(name, ast.Constant), ast.unparse(node)
            default = _constant(node.args[1]) if len(node.args) > 1 else None
            minimum = next((_constant(k.value) for k in node.keywords if k.arg == "minimum"), None)
            reads[name.value] = (default, minimum if isinstance(minimum, int) else None)
    return reads


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    if isinstance(value, list):
        return "`" + ",".join(value) + "`"
    return f"`{value}`"


def test_every_variable_the_settings_read_is_documented():
    missing = sorted(set(settings_reads()) - set(documented_rows()))
    assert not missing, f"document these in docs/reference/settings.md: {missing}"


def test_the_page_documents_no_variable_nothing_reads():
    reads = settings_reads()
    for name in documented_rows():
        if name in reads:
            continue
        assert name in READ_ELSEWHERE, f"{name} is documented, but config/settings.py does not read it"
        source = READ_ELSEWHERE[name]
        assert name in source.read_text(encoding="utf-8"), f"{source} no longer reads {name}"


def test_each_documented_default_and_minimum_is_the_codes():
    rows = documented_rows()
    for name, (default, minimum) in settings_reads().items():
        cell = rows[name][1]
        if default not in (None, "", []):
            assert _shown(default) in cell, f"{name}: the code's default is {_shown(default)}, the page says {cell}"
        elif default in ("", []):
            assert cell.startswith(("empty", "unset")), f"{name}: the code's default is empty, the page says {cell}"
        if minimum is not None:
            assert f"(≥ {minimum})" in cell, f"{name}: the code refuses values below {minimum}, the page says {cell}"
        else:
            assert "≥" not in cell, f"{name}: the code has no minimum, the page says {cell}"
