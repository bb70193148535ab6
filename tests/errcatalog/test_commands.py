"""Management commands: catalog_load_defaults, catalog_export, catalog_import, bootstrap_admin."""

from __future__ import annotations

import copy
import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from errcatalog.catalog import models
from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
from errcatalog.catalog.document import dump_catalog, read_catalog_file
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.snapshot import catalog_snapshot
from errcatalog.gateway.models import NamedServer, Upstream
from errcatalog.gateway.named_servers import named_server_create, named_server_upstreams
from errcatalog.gateway.secrets import resolve
from errcatalog.gateway.services import upstream_create, upstream_tools_record
from errcatalog.render.entries import CatalogSnapshot

pytestmark = pytest.mark.django_db


def run(*args, **options) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO(), **options)
    return out.getvalue()


def history_count() -> int:
    return sum(
        m.history.count()
        for m in (models.ErrorCode, models.TemplateVariant, models.ParameterHint, models.ClassificationRule)
    )


def write(path: Path, doc: dict) -> Path:
    path.write_text(dump_catalog(doc, "json" if path.suffix == ".json" else "yaml"), encoding="utf-8")
    return path


def network_index(doc: dict) -> int:
    return next(i for i, c in enumerate(doc["codes"]) if c["code"] == "NETWORK_ERROR")


# --- catalog_load_defaults --------------------------------------------------------------------------------


def test_load_defaults_twice_changes_nothing_the_second_time_and_keeps_a_writers_edit(default_document):
    first = run("catalog_load_defaults")
    assert first.startswith("Default catalog loaded missing rows from default_catalog.yaml: ")
    assert catalog_document_from_db() == default_document

    variant = models.TemplateVariant.objects.get(error_code__code="NETWORK_ERROR", name="default")
    variant.instruction = "Retry once; then tell the user."
    variant.save(update_fields=["instruction", "updated_at"])
    code = models.ErrorCode.objects.get(code="RATE_LIMIT")
    code.retry_after_seconds = 60
    code.save(update_fields=["retry_after_seconds", "updated_at"])
    before = history_count()

    second = run("catalog_load_defaults")
    assert "0 created, 0 updated, 0 deleted" in second
    assert history_count() == before
    variant.refresh_from_db()
    assert variant.instruction == "Retry once; then tell the user."
    assert models.ErrorCode.objects.get(code="RATE_LIMIT").retry_after_seconds == 60


def test_load_defaults_creates_what_is_missing(default_document):
    run("catalog_load_defaults")
    models.ParameterHint.objects.filter(tool="web_search").update(tool="web_search_v2")  # bypasses history
    output = run("catalog_load_defaults")
    assert "1 created, 0 updated" in output
    assert models.ParameterHint.objects.filter(tool="web_search", parameter="query").exists()


def test_load_defaults_does_not_bring_back_what_an_editor_deleted_but_reset_does(default_document):
    run("catalog_load_defaults")
    models.ClassificationRule.objects.get(position=10).delete()
    models.ErrorCode.objects.get(code="UNSUPPORTED_PROTOCOL_VERSION").delete()  # a code no rule names
    models.ParameterHint.objects.get(tool="web_search", parameter="query").delete()
    timeout = models.ErrorCode.objects.get(code="TIMEOUT")
    models.TemplateVariant.objects.create(error_code=timeout, name="short", message="Too slow.", instruction="Retry.")
    models.TemplateVariant.objects.get(error_code=timeout, name="default").delete()

    output = run("catalog_load_defaults")
    assert "0 created" in output and "5 skipped (deleted by an editor)" in output
    assert list(timeout.variants.values_list("name", flat=True)) == ["short"]
    assert not models.ClassificationRule.objects.filter(position=10).exists()
    assert not models.ErrorCode.objects.filter(code="UNSUPPORTED_PROTOCOL_VERSION").exists()
    assert not models.ParameterHint.objects.filter(tool="web_search").exists()

    output = run("catalog_load_defaults", "--reset")
    assert output.startswith("Default catalog reset to default_catalog.yaml: 5 created, 0 updated")
    models.TemplateVariant.objects.filter(name="short").delete()
    assert catalog_document_from_db() == default_document


def test_load_defaults_reset_restores_the_shipped_wording_and_keeps_other_rows(default_document):
    run("catalog_load_defaults")
    variant = models.TemplateVariant.objects.get(error_code__code="TIMEOUT")
    variant.message = "Too slow."
    variant.save(update_fields=["message", "updated_at"])
    extra = models.ErrorCode.objects.create(code="TEAM_ERROR", category="unknown")

    output = run("catalog_load_defaults", "--reset", verbosity=2)
    assert "  update variant TIMEOUT/default: message" in output
    assert "0 created, 1 updated, 0 deleted" in output
    variant.refresh_from_db()
    assert (
        variant.message
        == next(c for c in default_document["codes"] if c["code"] == "TIMEOUT")["variants"][0]["message"]
    )
    assert models.ErrorCode.objects.filter(pk=extra.pk).exists()


def test_snapshot_from_the_database_after_loading_defaults_equals_the_snapshot_from_the_file(
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        run("catalog_load_defaults")
    from_file = CatalogSnapshot.from_document(read_catalog_file(DEFAULT_CATALOG_PATH))
    from_db = catalog_snapshot()
    assert dict(from_db.codes) == dict(from_file.codes)
    assert dict(from_db.hints) == dict(from_file.hints)
    assert from_db.rules == from_file.rules
    # The same document, too (the snapshot from the database is named by its revision, the file's by a digest).
    assert catalog_document_from_db() == read_catalog_file(DEFAULT_CATALOG_PATH)


# --- catalog_export and catalog_import --------------------------------------------------------------------


def test_export_writes_yaml_to_stdout_by_default(default_document):
    run("catalog_load_defaults")
    text = run("catalog_export")
    # An export lists the upstreams and named servers too (none here); the shipped catalog has none and leaves them
    # alone.
    assert text == dump_catalog({**default_document, "upstreams": [], "named_servers": []}, "yaml")
    assert yaml.safe_load(text)["format"] == "errcatalog/v1"


def test_export_takes_the_format_from_the_file_suffix(tmp_path, default_document):
    run("catalog_load_defaults")
    run("catalog_export", "-o", str(tmp_path / "catalog.json"))
    assert json.loads((tmp_path / "catalog.json").read_text()) == {
        **default_document,
        "upstreams": [],
        "named_servers": [],
    }
    with pytest.raises(CommandError, match="does not match the file suffix"):
        run("catalog_export", "-o", str(tmp_path / "catalog.json"), "--format", "yaml")
    with pytest.raises(CommandError, match="cannot tell the format"):
        run("catalog_export", "-o", str(tmp_path / "catalog.txt"))
    run("catalog_export", "-o", str(tmp_path / "catalog.txt"), "--format", "json")
    assert (tmp_path / "catalog.txt").read_text() == (tmp_path / "catalog.json").read_text()


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_export_import_export_is_byte_identical(tmp_path, suffix):
    run("catalog_load_defaults")
    # Text that YAML and JSON writers like to mangle: several lines, quotes, unicode, YAML keywords.
    code = models.ErrorCode.objects.create(
        code="TEAM_ERROR",
        category="tool",
        http_statuses=[418],
        explanation="Line one.\nLine two: 'quoted' \"double\" — «unicode» …\n\n  indented\n",
    )
    models.TemplateVariant.objects.create(
        error_code=code, name="b-test", locale="de", weight=0, message="yes", instruction="null", cause="{{braces}}"
    )
    models.ParameterHint.objects.create(tool="t", parameter="p", example="1.0", description="# not a comment")
    # Upstreams travel with the catalog, their values as stored: an env: reference, a sealed value.
    upstream_create(
        actor=None,
        name="git",
        prefix="git",
        transport="stdio",
        command="uvx",
        args=["mcp-server-git", "--repository", "/srv/repo"],
        env={"GIT_TOKEN": "env:UPSTREAM_GIT_TOKEN", "LANG": "C.UTF-8"},
        tools=["git_status"],
    )
    upstream_create(actor=None, name="web", prefix="web", transport="http", url="https://mcp.example.com/mcp")
    # Named servers travel with them, by the upstreams' names.
    named_server_create(
        actor=None,
        name="support",
        description="For the support agent: «explains» codes.\nSecond line.",
        tools=["explain_error"],
        upstreams={"web": ["echo", "add"], "git": []},
    )
    named_server_create(actor=None, name="paused", enabled=False, upstreams={"web": []})
    first = tmp_path / f"first{suffix}"
    second = tmp_path / f"second{suffix}"
    run("catalog_export", "-o", str(first))

    models.ErrorCode.objects.filter(code="TEAM_ERROR").delete()
    models.TemplateVariant.objects.filter(error_code__code="TIMEOUT").update(message="changed")
    Upstream.objects.filter(name="web").delete()  # out of both named servers with it
    Upstream.objects.filter(name="git").update(timeout_seconds=5)
    NamedServer.objects.filter(name="paused").delete()
    NamedServer.objects.filter(name="support").update(tools=[], description="")
    run("catalog_import", str(first))
    run("catalog_export", "-o", str(second))

    assert second.read_bytes() == first.read_bytes()
    assert "C.UTF-8" not in first.read_text()  # sealed, never exported in the clear
    assert " upstream " not in run("catalog_import", str(first), verbosity=2)  # a sealed value re-read: unchanged
    assert named_server_upstreams(NamedServer.objects.get(name="support")) == {"git": [], "web": ["echo", "add"]}


def _upstream_document(default_document: dict, *upstreams: dict) -> dict:
    return {**copy.deepcopy(default_document), "upstreams": list(upstreams)}


def test_import_writes_the_upstreams_of_a_document_and_seals_a_clear_value(tmp_path, default_document):
    run("catalog_load_defaults")
    entry = {"name": "web", "prefix": "web", "transport": "http", "url": "https://mcp.example.com/mcp"}
    path = write(tmp_path / "c.yaml", _upstream_document(default_document, {**entry, "headers": {"X-Team": "blue"}}))

    out = run("catalog_import", str(path), verbosity=2)

    assert "create upstream web" in out
    web = Upstream.objects.get(name="web")
    stored = web.headers["X-Team"]
    assert stored.startswith("sealed:") and resolve("X-Team", stored, binding=web.binding) == "blue"
    assert "create upstream" not in run("catalog_import", str(path), verbosity=2)  # the same value: unchanged


def test_a_documents_upstream_may_switch_off_its_relays_and_the_export_keeps_them(tmp_path, default_document):
    run("catalog_load_defaults")
    entry = {"name": "web", "prefix": "web", "transport": "http", "url": "https://mcp.example.com/mcp"}
    quiet = {"name": "quiet", "prefix": "quiet", "transport": "http", "url": "https://q.example.com/mcp",
             "relay_sampling": False, "relay_roots": False}  # fmt: skip
    run("catalog_import", str(write(tmp_path / "c.yaml", _upstream_document(default_document, entry, quiet))))

    web, off = Upstream.objects.get(name="web"), Upstream.objects.get(name="quiet")
    assert (web.relay_sampling, web.relay_roots) == (True, True)
    assert (off.relay_sampling, off.relay_roots) == (False, False)
    run("catalog_export", "-o", str(tmp_path / "out.json"))
    exported = {u["name"]: u for u in json.loads((tmp_path / "out.json").read_text())["upstreams"]}
    assert exported["quiet"]["relay_roots"] is False and exported["web"]["relay_roots"] is True  # on by default


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_a_relay_switch_that_is_not_a_boolean_is_refused(tmp_path, default_document, value):
    run("catalog_load_defaults")
    entry = {"name": "web", "prefix": "web", "transport": "http", "url": "https://x.example/mcp", "relay_roots": value}
    with pytest.raises(CommandError, match="relay_roots"):
        run("catalog_import", str(write(tmp_path / "c.json", _upstream_document(default_document, entry))))
    assert not Upstream.objects.exists()


def test_a_documents_stdio_upstream_keeps_its_session_mode_through_import_and_export(tmp_path, default_document):
    run("catalog_load_defaults")
    own = {"name": "own", "prefix": "own", "transport": "stdio", "command": "uvx", "args": ["mcp-server-time"],
           "session_mode": "per_client"}  # fmt: skip
    shared = {"name": "shared", "prefix": "shared", "transport": "stdio", "command": "uvx", "args": ["x"]}
    run("catalog_import", str(write(tmp_path / "c.yaml", _upstream_document(default_document, own, shared))))

    assert Upstream.objects.get(name="own").session_mode == "per_client"
    assert Upstream.objects.get(name="shared").session_mode == "shared"  # the default
    run("catalog_export", "-o", str(tmp_path / "out.json"))
    exported = {u["name"]: u for u in json.loads((tmp_path / "out.json").read_text())["upstreams"]}
    assert (exported["own"]["session_mode"], exported["shared"]["session_mode"]) == ("per_client", "shared")


def test_an_unknown_session_mode_is_refused_naming_the_key(tmp_path, default_document):
    run("catalog_load_defaults")
    entry = {"name": "x", "prefix": "x", "transport": "stdio", "command": "uvx", "session_mode": "per_call"}
    with pytest.raises(CommandError, match="session_mode"):
        run("catalog_import", str(write(tmp_path / "c.json", _upstream_document(default_document, entry))))
    assert not Upstream.objects.exists()


def test_import_replace_deletes_upstreams_only_when_the_document_lists_upstreams(tmp_path, default_document):
    run("catalog_load_defaults")
    upstream_create(actor=None, name="old", prefix="old", transport="http", url="https://old.example.com/mcp")

    run("catalog_import", str(write(tmp_path / "without.yaml", default_document)), "--replace")
    assert Upstream.objects.filter(name="old").exists()  # no upstreams key: upstreams are left alone

    new = {"name": "new", "prefix": "new", "transport": "http", "url": "https://new.example.com/mcp"}
    path = write(tmp_path / "with.yaml", _upstream_document(default_document, new))
    out = run("catalog_import", str(path), "--replace", verbosity=2)

    assert sorted(Upstream.objects.values_list("name", flat=True)) == ["new"]
    assert "delete upstream old" in out and "create upstream new" in out


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(
            {"name": "Web!", "prefix": "web", "transport": "http", "url": "https://x.example/mcp"},
            "upstreams[0] (Web!) → name: Use 1-64 lower-case letters",
            id="bad name",
        ),
        pytest.param(
            {"name": "web", "prefix": "w__b", "transport": "http", "url": "https://x.example/mcp"},
            "upstreams[0] (web) → prefix: Use 1-32 letters",
            id="separator in the prefix",
        ),
        pytest.param(
            {"name": "web", "prefix": "web", "transport": "http", "headers": {"Host": "env:X"}, "url": "ftp://x"},
            "upstreams[0] (web) → url: Use an http:// or https:// URL.",
            id="not an HTTP URL",
        ),
        pytest.param(
            {"name": "web", "prefix": "web", "transport": "carrier-pigeon"},
            "upstreams[0] (web) → transport: 'carrier-pigeon' is not one of: 'http', 'stdio'.",
            id="unknown transport",
        ),
    ],
)
def test_import_names_a_bad_upstream_entry_and_changes_nothing(tmp_path, default_document, entry, expected):
    run("catalog_load_defaults")
    path = write(tmp_path / "c.yaml", _upstream_document(default_document, entry))

    with pytest.raises(CommandError) as raised:
        run("catalog_import", str(path))

    assert expected in str(raised.value)
    assert not Upstream.objects.exists()


def test_import_of_a_stdio_upstream_where_stdio_is_off_is_refused_at_its_entry(tmp_path, default_document, settings):
    settings.GATEWAY = {**settings.GATEWAY, "STDIO": False}
    run("catalog_load_defaults")
    entry = {"name": "git", "prefix": "git", "transport": "stdio", "command": "uvx", "args": ["mcp-server-git"]}
    code = {**copy.deepcopy(default_document["codes"][0]), "code": "TEAM_ERROR"}
    doc = _upstream_document(default_document, entry)
    doc["codes"].append(code)

    with pytest.raises(CommandError) as raised:
        run("catalog_import", str(write(tmp_path / "c.yaml", doc)))

    assert "upstreams[0] (git) → transport: stdio upstreams are turned off here" in str(raised.value)
    assert not Upstream.objects.exists()
    assert not models.ErrorCode.objects.filter(code="TEAM_ERROR").exists()  # the whole import rolled back


# --- Named servers in the document ------------------------------------------------------------------------------

WEB = {"name": "web", "prefix": "web", "transport": "http", "url": "https://mcp.example.com/mcp"}


def _named_document(default_document: dict, *servers: dict, upstreams: tuple[dict, ...] = (WEB,)) -> dict:
    return {**_upstream_document(default_document, *upstreams), "named_servers": list(servers)}


def test_import_replace_deletes_named_servers_only_when_the_document_lists_them(tmp_path, default_document):
    run("catalog_load_defaults")
    support = {"name": "support", "tools": ["explain_error"], "upstreams": [{"name": "web", "tools": ["echo"]}]}
    run("catalog_import", str(write(tmp_path / "first.yaml", _named_document(default_document, support))))
    assert named_server_upstreams(NamedServer.objects.get(name="support")) == {"web": ["echo"]}

    run("catalog_import", str(write(tmp_path / "without.yaml", _upstream_document(default_document, WEB))), "--replace")
    assert NamedServer.objects.filter(name="support").exists()  # no named_servers key: they are left alone

    # A document may drop a named server and give its name to an upstream in one import.
    renamed = {**WEB, "name": "support", "prefix": "sup"}
    team = {"name": "team", "upstreams": [{"name": "support"}]}
    doc = _named_document(default_document, team, upstreams=(WEB, renamed))
    out = run("catalog_import", str(write(tmp_path / "with.yaml", doc)), "--replace", verbosity=2)
    assert "delete named server support" in out and "create named server team" in out
    assert list(NamedServer.objects.values_list("name", flat=True)) == ["team"]
    assert named_server_upstreams(NamedServer.objects.get()) == {"support": []}
    # The history says who wrote it: the import, as the command line (no user).
    record = NamedServer.history.filter(name="team").get()
    assert (record.history_change_reason, record.history_user) == ("catalog import", None)


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        pytest.param({"name": "support", "upstreams": [{"name": "nowhere"}]},
                     "named_servers[0] (support) → upstreams: No upstream named nowhere.", id="unknown upstream"),
        pytest.param({"name": "support", "tools": ["explain_error", "no_such_tool"]},
                     "named_servers[0] (support) → tools: Not a tool this deployment serves: no_such_tool.",
                     id="unknown own tool"),
        pytest.param({"name": "web"}, "named_servers[0] (web) → name: web is an upstream's name in this document",
                     id="an upstream's name in the document"),
        pytest.param({"name": "old"}, "named_servers[0] (old) → name: An upstream has this name",
                     id="an upstream's name in the database"),
        pytest.param({"name": "Support!"}, "named_servers[0] (Support!) → name: Use 1-64 lower-case letters",
                     id="bad name"),
        pytest.param({"name": "mcp"}, "named_servers[0] (mcp) → name: mcp is reserved", id="reserved name"),
        pytest.param({"name": "support", "tools": ["<script>"]}, "named_servers[0] (support) → tools: Give our own",
                     id="bad own tool name"),
        pytest.param({"name": "support", "upstreams": [{"name": "web", "tools": ["a b"]}]},
                     "named_servers[0] (support) → upstreams[0].tools: Give its tools served as a list of tool names",
                     id="bad upstream tool name"),
        pytest.param({"name": "support", "upstreams": [{"name": "web"}, {"name": "web", "tools": ["echo"]}]},
                     "named_servers[0] (support) → upstreams[1].name: duplicate upstream", id="an upstream twice"),
        pytest.param({"name": "support", "owner": "me"}, "named_servers[0] (support) → owner: unknown key",
                     id="unknown key"),
    ],
)  # fmt: skip
def test_import_names_a_bad_named_server_entry_and_changes_nothing(tmp_path, default_document, server, expected):
    run("catalog_load_defaults")
    upstream_create(actor=None, name="old", prefix="old", transport="http", url="https://old.example.com/mcp")
    path = write(tmp_path / "c.yaml", _named_document(default_document, server))

    with pytest.raises(CommandError) as raised:
        run("catalog_import", str(path))

    assert expected in str(raised.value)
    assert not NamedServer.objects.exists()
    assert list(Upstream.objects.values_list("name", flat=True)) == ["old"]  # the whole import rolled back


def test_import_warns_about_a_named_servers_upstream_tool_the_upstream_does_not_list(tmp_path, default_document):
    run("catalog_load_defaults")
    upstream_create(**{**WEB, "actor": None})
    upstream_tools_record(upstream="web", listing=[{"name": "echo", "inputSchema": {"type": "object"}}])
    server = {"name": "support", "upstreams": [{"name": "web", "tools": ["echo", "ecko"]}]}
    out = run("catalog_import", str(write(tmp_path / "c.yaml", _named_document(default_document, server))))
    assert "Named servers' upstream tools not served as written: 1" in out
    assert "named_servers[0] (support) → upstreams: web does not list ecko" in out
    assert named_server_upstreams(NamedServer.objects.get()) == {"web": ["echo", "ecko"]}  # imported all the same


def test_a_named_servers_tool_no_longer_served_here_is_kept_on_import(tmp_path, default_document):
    run("catalog_load_defaults")
    upstream_create(**{**WEB, "actor": None})
    server = named_server_create(actor=None, name="support", tools=["retired_tool"])
    run("catalog_export", "-o", str(tmp_path / "out.yaml"))
    NamedServer.objects.filter(pk=server.pk).update(description="changed")
    run("catalog_import", str(tmp_path / "out.yaml"))
    assert NamedServer.objects.get().tools == ["retired_tool"]
    # A new server may not choose it.
    doc = _named_document(default_document, {"name": "other", "tools": ["retired_tool"]})
    with pytest.raises(CommandError, match="Not a tool this deployment serves: retired_tool"):
        run("catalog_import", str(write(tmp_path / "c.yaml", doc)))


@pytest.mark.parametrize(
    ("break_it", "expected"),
    [
        pytest.param(None, ["line 4, column 4: invalid YAML"], id="bad YAML syntax"),
        pytest.param(
            lambda d, i: d["codes"][i].update(colour="red"),
            ["codes[{i}] (NETWORK_ERROR) → colour: unknown key"],
            id="unknown key",
        ),
        pytest.param(
            lambda d, i: d["codes"][i]["variants"][0].pop("instruction"),
            ["codes[{i}] (NETWORK_ERROR) → variants[0] (default).instruction: missing (required)."],
            id="missing field",
        ),
        pytest.param(
            lambda d, i: d["codes"][i]["variants"][0].update(message="Network error: {x.__class__}"),
            ["codes[{i}] (NETWORK_ERROR) → variants[0] (default).message: {x.__class__}: attribute access"],
            id="attribute access",
        ),
        pytest.param(
            lambda d, i: d["codes"][i]["variants"][0].update(cause="{0[1]}"),
            ["codes[{i}] (NETWORK_ERROR) → variants[0] (default).cause: {0[1]}: attribute access and indexing"],
            id="indexing",
        ),
        pytest.param(
            lambda d, i: d["codes"][i]["variants"][0].update(instruction="Tell {user_name}."),
            ["codes[{i}] (NETWORK_ERROR) → variants[0] (default).instruction: {user_name} is not a known placeholder."],
            id="unknown placeholder",
        ),
        pytest.param(
            lambda d, i: d["codes"].append(copy.deepcopy(d["codes"][i])),
            ["(NETWORK_ERROR) → code: duplicate code; codes[{i}] already defines NETWORK_ERROR."],
            id="duplicate code",
        ),
        pytest.param(
            lambda d, i: d["rules"][0].update(code="NO_SUCH_CODE"),
            ["rules[0] (position 10) → code: NO_SUCH_CODE is not a code of this document."],
            id="rule to a missing code",
        ),
        pytest.param(
            lambda d, i: d["codes"][i].update(jsonrpc_code=-32050),
            ["codes[{i}] (NETWORK_ERROR) → jsonrpc_code: -32050 is in the range JSON-RPC reserves"],
            id="reserved JSON-RPC code",
        ),
    ],
)
def test_import_of_a_malformed_file_names_file_entry_and_field_and_changes_nothing(
    tmp_path, default_document, break_it, expected
):
    run("catalog_load_defaults")
    before, history_before = catalog_document_from_db(), history_count()
    path = tmp_path / "catalog.yaml"
    index = network_index(default_document)
    if break_it is None:
        path.write_text("format: errcatalog/v1\ncodes:\n  - code: X\n   category: [\n")
    else:
        doc = copy.deepcopy(default_document)
        # A file with a wanted change too, so "nothing changed" means the whole file was refused.
        doc["codes"][0]["variants"][0]["message"] = "A change that must not be saved."
        break_it(doc, index)
        write(path, doc)

    with pytest.raises(CommandError) as caught:
        run("catalog_import", str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    for fragment in expected:
        assert fragment.replace("{i}", str(index)) in message
    assert catalog_document_from_db() == before
    assert history_count() == history_before


def test_import_lists_every_problem_of_a_file(tmp_path, default_document):
    doc = copy.deepcopy(default_document)
    index = network_index(doc)
    doc["codes"][index]["variants"][0]["message"] = "{x.__class__}"
    doc["codes"][index]["jsonrpc_code"] = -32050
    doc["rules"][0]["code"] = "NO_SUCH_CODE"
    with pytest.raises(CommandError) as caught:
        run("catalog_import", str(write(tmp_path / "catalog.json", doc)))
    lines = str(caught.value).splitlines()
    assert len(lines) == 3
    assert all(line.startswith(f"{tmp_path / 'catalog.json'}: ") for line in lines)


def test_import_replace_deletes_what_the_file_does_not_have(tmp_path, default_document):
    run("catalog_load_defaults")
    extra = models.ErrorCode.objects.create(code="TEAM_ERROR", category="unknown")
    models.TemplateVariant.objects.create(error_code=extra, message="m", instruction="i")
    models.ClassificationRule.objects.create(position=5, error_code=extra, exception="TeamError")
    models.TemplateVariant.objects.create(
        error_code=models.ErrorCode.objects.get(code="TIMEOUT"), name="short", message="m", instruction="i"
    )
    models.ParameterHint.objects.create(tool="t", parameter="p")
    path = write(tmp_path / "catalog.yaml", default_document)

    output = run("catalog_import", str(path))
    assert "0 created, 0 updated, 0 deleted" in output
    assert models.ErrorCode.objects.filter(code="TEAM_ERROR").exists()

    output = run("catalog_import", str(path), "--replace")
    assert "0 created, 0 updated, 5 deleted" in output
    assert catalog_document_from_db() == default_document


def test_import_dry_run_reports_what_would_change_and_changes_nothing(tmp_path, default_document):
    run("catalog_load_defaults")
    models.ErrorCode.objects.create(code="TEAM_ERROR", category="unknown")
    doc = copy.deepcopy(default_document)
    doc["codes"][network_index(doc)]["variants"][0]["cause"] = "The network failed."
    doc["hints"].append({"tool": "t", "parameter": "p"})
    before, history_before = catalog_document_from_db(), history_count()

    output = run("catalog_import", str(write(tmp_path / "catalog.yaml", doc)), "--replace", "--dry-run")
    assert "  update variant NETWORK_ERROR/default: cause" in output
    assert "  create hint t.p" in output
    assert "  delete error code TEAM_ERROR" in output
    assert "Dry run, nothing saved." in output and "1 created, 1 updated, 1 deleted" in output
    assert catalog_document_from_db() == before
    assert history_count() == history_before


def test_import_of_a_missing_file_fails_cleanly(tmp_path):
    with pytest.raises(CommandError, match=r"nope\.yaml: no such file\."):
        run("catalog_import", str(tmp_path / "nope.yaml"))


# --- bootstrap_admin --------------------------------------------------------------------------------------


def test_bootstrap_admin_creates_an_admin_once_and_prints_its_password(monkeypatch):
    monkeypatch.delenv("ERRCATALOG_ADMIN_PASSWORD", raising=False)
    output = run("bootstrap_admin")
    assert output.startswith("Admin user: admin / ") and output.rstrip().endswith("(shown once; change it in admin)")
    password = output.split(" / ", 1)[1].split(" ", 1)[0]
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password(password)
    assert len(password) >= 16

    again = run("bootstrap_admin")
    assert again.startswith("An admin user exists (admin); nothing changed.")
    assert get_user_model().objects.count() == 1


def test_bootstrap_admin_takes_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("ERRCATALOG_ADMIN_PASSWORD", "scripted-secret-123")
    output = run("bootstrap_admin")
    assert "scripted-secret-123" not in output
    assert output.startswith("Admin user: admin (password from ERRCATALOG_ADMIN_PASSWORD)")
    assert get_user_model().objects.get(username="admin").check_password("scripted-secret-123")


def test_bootstrap_admin_does_nothing_when_a_superuser_exists(staff_user):
    assert run("bootstrap_admin").startswith("An admin user exists (writer)")
    assert not get_user_model().objects.filter(username="admin").exists()


def test_bootstrap_admin_reset_password_gives_the_admin_a_new_password_printed_once(monkeypatch):
    monkeypatch.delenv("ERRCATALOG_ADMIN_PASSWORD", raising=False)
    run("bootstrap_admin")
    output = run("bootstrap_admin", "--reset-password")
    assert output.startswith("New password for admin user admin: ")
    assert output.rstrip().endswith("(shown once; change it in admin)")
    password = output.split(": ", 1)[1].split(" ", 1)[0]
    assert get_user_model().objects.get(username="admin").check_password(password)
    assert get_user_model().objects.count() == 1


def test_bootstrap_admin_reset_password_takes_the_password_from_the_environment(monkeypatch, staff_user):
    monkeypatch.setenv("ERRCATALOG_ADMIN_PASSWORD", "scripted-reset-456")
    output = run("bootstrap_admin", "--reset-password", "--username", staff_user.username)
    assert "scripted-reset-456" not in output
    assert output.startswith(f"New password for admin user {staff_user.username} (password from ")
    staff_user.refresh_from_db()
    assert staff_user.check_password("scripted-reset-456")


def test_bootstrap_admin_reset_password_needs_an_admin(monkeypatch):
    with pytest.raises(CommandError, match="no superuser yet"):
        run("bootstrap_admin", "--reset-password")
    get_user_model().objects.create_user(username="plain", password="x")
    with pytest.raises(CommandError, match="no superuser 'plain'"):
        run("bootstrap_admin", "--reset-password", "--username", "plain")
    assert get_user_model().objects.get(username="plain").check_password("x")
