"""Hostile import files (catalog documents and mcpServers blocks): too deep, anchors and aliases, too large, a field
too long. Each is refused at once with a message naming the limit; none crashes the process or ends in a traceback.

The nesting cases run the management commands as real processes: 50,000 levels of YAML used to overflow libyaml's C
stack (a segfault no test in the same process could survive), thousands a ``RecursionError``.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from errcatalog.catalog import models
from errcatalog.catalog.document import dump_catalog, parse_catalog_text, read_catalog_file
from errcatalog.gateway.models import Upstream
from tests.support.processes import REPO_ROOT, process_environment

pytestmark = pytest.mark.django_db

DEEP_YAML_FLOW = "format: errcatalog/v1\ncodes: " + "[" * 50_000 + "]" * 50_000 + "\n"
DEEP_YAML_MAPPINGS = "format: errcatalog/v1\ncodes: " + "{a: " * 20_000 + "}" * 20_000 + "\n"
DEEP_YAML_BLOCK = "format: errcatalog/v1\ncodes:\n" + "".join("  " * i + "-\n" for i in range(1, 1_500))
DEEP_JSON = '{"format": "errcatalog/v1", "codes": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
DEEP_SERVERS = '{"mcpServers": {"x": {"args": ' + "[" * 100_000 + "]" * 100_000 + "}}}"
TOO_DEEP = "nested deeper than 64 levels (ERRCATALOG_IMPORT_MAX_DEPTH)"


def billion_laughs() -> str:
    """Nine lines whose aliases stand for 10⁹ strings."""
    lines = ["format: errcatalog/v1", "lol0: &lol0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join([*lines, "codes: *lol9", ""])


def manage(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``manage.py ARGS`` as an operator runs it, in a process of its own."""
    env = process_environment(database_url="", redis_url="", data_dir=tmp_path)
    del env["DATABASE_URL"]  # the embedded default; the file is refused before the database is used
    return subprocess.run(  # noqa: S603 (fixed command line)
        [sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.parametrize(
    ("command", "name", "text", "expected"),
    [
        pytest.param("catalog_import", "deep.yaml", DEEP_YAML_FLOW, f"line 2, column 71: {TOO_DEEP}", id="yaml-flow"),
        pytest.param("catalog_lint", "deep.yaml", DEEP_YAML_MAPPINGS, TOO_DEEP, id="lint-yaml-mappings"),
        pytest.param("catalog_import", "deep.yml", DEEP_YAML_BLOCK, TOO_DEEP, id="yaml-block"),
        pytest.param("catalog_import", "deep.json", DEEP_JSON, TOO_DEEP, id="json"),
        pytest.param(
            "upstream_import", "servers.json", DEEP_SERVERS, "Nested deeper than 64 levels", id="mcpservers-json"
        ),
    ],
)
def test_a_deeply_nested_file_is_refused_by_the_command_with_a_message_not_a_crash(
    tmp_path, command, name, text, expected
):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")

    done = manage(tmp_path, command, str(path))

    assert done.returncode == (2 if command == "catalog_lint" else 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"{path}: " in done.stderr and expected in done.stderr
    assert len(done.stderr) < 1000


def test_a_billion_laughs_file_is_refused_for_its_anchors(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")

    with pytest.raises(CommandError) as caught:
        run("catalog_import", str(path))

    assert str(caught.value) == (
        f"{path}: line 2, column 7: uses YAML anchors/aliases, which catalog files do not allow; write each value out "
        "in full."
    )
    assert not models.ErrorCode.objects.exists()


def test_an_alias_alone_is_refused_too():
    with pytest.raises(Exception, match="anchors/aliases"):
        parse_catalog_text("format: errcatalog/v1\ncodes: []\nhints: *nothing\n", "yaml")


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path):
    # 50 MB in one field: the file is over the 16 MiB limit, and is read no further than that.
    path = tmp_path / "catalog.yaml"
    with path.open("w", encoding="utf-8") as file:
        file.write("format: errcatalog/v1\ncodes:\n- code: NETWORK_ERROR\n  explanation: ")
        file.write("x" * (50 * 1024 * 1024))

    with pytest.raises(CommandError) as caught:
        run("catalog_import", str(path))

    assert str(caught.value) == (
        f"{path}: the file is larger than 16,777,216 bytes, the limit for an import file (ERRCATALOG_IMPORT_MAX_BYTES)."
    )


def test_the_file_size_limit_is_a_setting_and_binds_mcpservers_files_too(tmp_path, settings):
    settings.ERRCATALOG = {**settings.ERRCATALOG, "IMPORT_MAX_BYTES": 65_536}
    path = tmp_path / "servers.json"
    path.write_text('{"mcpServers": {"x": {"url": "https://mcp.example.com/mcp"}}, "pad": "' + "x" * 70_000 + '"}')

    with pytest.raises(CommandError, match=r"the file is larger than 65,536 bytes"):
        run("upstream_import", str(path))
    assert not Upstream.objects.exists()


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_field_longer_than_the_limit_is_refused_naming_its_place(tmp_path, default_document, suffix):
    doc = copy.deepcopy(default_document)
    doc["codes"][3]["variants"][0]["message"] = "x" * 100_000
    path = tmp_path / f"catalog{suffix}"
    path.write_text(dump_catalog(doc, suffix[1:]), encoding="utf-8")

    with pytest.raises(CommandError) as caught:
        run("catalog_import", str(path))

    assert str(caught.value) == (
        f"{path}: codes[3] → variants[0].message: is 100,000 characters; the limit is 65,536 "
        "(ERRCATALOG_IMPORT_MAX_FIELD_CHARS)."
    )
    assert not models.ErrorCode.objects.exists()


def test_a_key_longer_than_the_limit_is_refused_without_repeating_it(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text("format: errcatalog/v1\ncodes: []\nhints:\n- ? " + "k" * 70_000 + "\n  : 1\n", encoding="utf-8")

    with pytest.raises(CommandError) as caught:
        run("catalog_lint", str(path))

    assert str(caught.value) == (
        f"{path}: hints[0]: has a key of 70,000 characters; the limit is 65,536 (ERRCATALOG_IMPORT_MAX_FIELD_CHARS)."
    )


def test_a_long_string_in_an_mcpservers_file_is_refused_naming_its_place(tmp_path):
    path = tmp_path / "servers.json"
    path.write_text('{"mcpServers": {"git": {"command": "uvx", "args": ["' + "a" * 70_000 + '"]}}}')

    with pytest.raises(CommandError) as caught:
        run("upstream_import", str(path))

    assert str(caught.value) == (
        f"{path}: mcpServers.git.args[0] is 70,000 characters; the limit is 65,536 (ERRCATALOG_IMPORT_MAX_FIELD_CHARS)."
    )


def test_the_shipped_catalog_and_a_nesting_at_the_limit_are_accepted(default_document):
    assert read_catalog_file(REPO_ROOT / "errcatalog/catalog/data/default_catalog.yaml") == default_document
    at_limit = "format: errcatalog/v1\nextra: " + "[" * 63 + "]" * 63 + "\n"
    assert parse_catalog_text(at_limit, "yaml")["format"] == "errcatalog/v1"


def test_an_export_writes_a_value_used_twice_in_full_so_that_it_imports(default_document):
    doc = copy.deepcopy(default_document)
    doc["codes"][1]["http_statuses"] = doc["codes"][0]["http_statuses"] = [502, 503]  # one list, twice

    text = dump_catalog(doc, "yaml")

    assert "&id" not in text and "*id" not in text
    assert yaml.safe_load(text) == doc
    assert parse_catalog_text(text, "yaml") == doc
