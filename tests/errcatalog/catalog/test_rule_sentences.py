"""A classification rule's sentence (``says``) through every writer: the model's ``full_clean()``, the REST API, a
catalog file and the admin refuse a bad one at its field with a clear message and keep a good one; it survives an
export and an import, the API shows it, a change to it alone raises the catalog revision, and migration 0031 keeps
the revision triggers of the tables SQLite rebuilds for it.
"""

from __future__ import annotations

import contextlib
import copy
import sqlite3

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.document import CatalogFileError, validate_catalog_document
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.models import ClassificationRule, ErrorCode, rule_sentence_problems
from errcatalog.catalog.revision import catalog_revision
from errcatalog.catalog.services import catalog_import, classification_rule_update
from errcatalog.catalog.snapshot import catalog_changed, catalog_snapshot
from tests.errcatalog.catalog.admin_pages import admin_url, form_data
from tests.errcatalog.web.api.error_shape import assert_api_error

POSITION = 99_999
COLUMN_PATTERN = '^column "(?P<name>[^"]+)" does not exist'
COLUMN_SENTENCE = "There is no column named {name}."
MINIMAL = {
    "format": "errcatalog/v1",
    "codes": [{"code": "X_ERROR", "category": "unknown", "variants": [{"message": "m.", "instruction": "i."}]}],
}

# (pattern, says, the field at fault, words its message has), as each writer must refuse them.
BAD = {
    "a fact the pattern does not capture": (
        '^column "[^"]+" does not exist',
        COLUMN_SENTENCE,
        "says",
        "(?P<name>…)",
    ),
    "an unknown placeholder": (COLUMN_PATTERN, "There is no column named {nope}.", "says", "{nope}"),
    "a group that names no fact": ('^column "(?P<table>[^"]+)" does not exist', "There is no such column.", "pattern",
                                   "table"),
    "another alternative's fact": ("^a (?P<path_1>\\w+)", "{path} must be of type {expected}.", "says",
                                   "(?P<expected>…)"),
    "a sentence too long": (COLUMN_PATTERN, "There is no column named {name}. " + "x" * 270, "says", "300"),
}  # fmt: skip
GOOD = {
    "a name": (COLUMN_PATTERN, COLUMN_SENTENCE),
    "a path and a type in other alternatives": (
        "^a (?P<path>\\w+) as (?P<expected>\\w+)|^b (?P<path_1>[\\w.]+): expected (?P<expected_2>\\w+)",
        "{path} must be of type {expected}.",
    ),
    "no fact": ("^syntax error at end of input", "The query ends too soon: {tool_name} needs a whole statement."),
}


def _messages(error: ValidationError, field: str) -> list[str]:
    return error.message_dict.get(field, [])


def _rule(**fields) -> ClassificationRule:
    return ClassificationRule(position=POSITION, error_code=ErrorCode.objects.get(code="NOT_FOUND"), **fields)


@pytest.fixture
def catalog(db) -> None:
    call_command("catalog_load_defaults", verbosity=0)
    catalog_changed()


# --- The model ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "says", "field", "words"), BAD.values(), ids=BAD.keys())
def test_the_model_refuses_a_bad_sentence_at_its_field(catalog, pattern, says, field, words):
    with pytest.raises(ValidationError) as refused:
        _rule(pattern=pattern, says=says).full_clean()
    assert any(words in message for message in _messages(refused.value, field)), refused.value.message_dict


@pytest.mark.parametrize(("pattern", "says"), GOOD.values(), ids=GOOD.keys())
def test_the_model_accepts_a_good_sentence(catalog, pattern, says):
    _rule(pattern=pattern, says=says).full_clean()


def test_a_sentence_that_places_no_fact_needs_no_pattern():
    assert rule_sentence_problems("Check the query's syntax.", "") == []
    assert rule_sentence_problems("Check {tool_name}'s query.", None) == []
    assert rule_sentence_problems(COLUMN_SENTENCE, None) != []


def test_each_problem_is_said_once(catalog):
    with pytest.raises(ValidationError) as refused:
        _rule(pattern=COLUMN_PATTERN, says="There is no column named {nope}.").full_clean()
    assert len(_messages(refused.value, "says")) == 1, refused.value.message_dict


def test_the_pattern_cannot_drop_the_fact_its_sentence_places(catalog):
    rule = _rule(pattern=COLUMN_PATTERN, says=COLUMN_SENTENCE)
    rule.save()
    with pytest.raises(ValidationError) as refused:
        classification_rule_update(rule=rule, pattern='^column "[^"]+" does not exist')
    assert any("(?P<name>…)" in message for message in _messages(refused.value, "says"))


# --- The REST API ---------------------------------------------------------------------------------------------


@pytest.fixture(params=["staff", "token"])
def editor(request, catalog, staff_user, django_user_model) -> APIClient:
    """A staff session and a token with catalog write rights, both writers of the API."""
    client = APIClient()
    if request.param == "staff":
        client.force_login(staff_user)
    else:
        _token, raw_key = client_token_create(user=staff_user, name="ci-writer", can_write_catalog=True)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


@pytest.mark.parametrize(("pattern", "says", "field", "words"), BAD.values(), ids=BAD.keys())
def test_the_api_refuses_a_bad_sentence_at_its_field(editor, pattern, says, field, words):
    rule = {"position": POSITION, "code": "NOT_FOUND", "pattern": pattern, "says": says}
    response = editor.post("/api/v1/rules/", rule, format="json")

    messages = assert_api_error(response, 400, "invalid")["fields"][field]
    assert any(words in message for message in messages), messages
    assert not ClassificationRule.objects.filter(position=POSITION).exists()


@pytest.mark.parametrize(("pattern", "says"), GOOD.values(), ids=GOOD.keys())
def test_the_api_writes_a_good_sentence_and_reads_it_back(editor, pattern, says):
    rule = {"position": POSITION, "code": "NOT_FOUND", "pattern": pattern, "says": says}
    created = editor.post("/api/v1/rules/", rule, format="json")

    assert created.status_code == 201, created.content
    assert created.json()["says"] == says
    assert ClassificationRule.objects.get(position=POSITION).says == says
    assert editor.get(f"/api/v1/rules/{created.json()['id']}/").json()["says"] == says


def test_the_api_lists_the_shipped_sentences(editor):
    listed = {r["position"]: r for r in editor.get("/api/v1/rules/", {"page_size": 1000}).json()["results"]}
    shipped = ClassificationRule.objects.get(position=285)
    assert shipped.says.startswith("There is no column named {name}")
    assert listed[285]["says"] == shipped.says


def test_the_api_refuses_a_patch_whose_pattern_drops_the_fact_the_sentence_places(editor):
    rule = {"position": POSITION, "code": "NOT_FOUND", "pattern": COLUMN_PATTERN, "says": COLUMN_SENTENCE}
    url = f"/api/v1/rules/{editor.post('/api/v1/rules/', rule, format='json').json()['id']}/"

    response = editor.patch(url, {"pattern": '^column "[^"]+" does not exist'}, format="json")

    assert any("(?P<name>…)" in m for m in assert_api_error(response, 400, "invalid")["fields"]["says"])
    assert ClassificationRule.objects.get(position=POSITION).pattern == COLUMN_PATTERN
    assert editor.patch(url, {"says": "Column {name} is missing."}, format="json").status_code == 200


# --- A catalog file -------------------------------------------------------------------------------------------


def _document(pattern: str, says: str) -> dict:
    doc = copy.deepcopy(MINIMAL)
    doc["rules"] = [{"position": 7, "code": "X_ERROR", "pattern": pattern, "says": says}]
    return doc


@pytest.mark.parametrize(("pattern", "says", "field", "words"), BAD.values(), ids=BAD.keys())
def test_a_catalog_file_with_a_bad_sentence_is_refused_at_its_place(pattern, says, field, words):
    with pytest.raises(CatalogFileError) as refused:
        validate_catalog_document(_document(pattern, says), source="catalog.yaml")
    lines = str(refused.value).splitlines()
    assert any(f"rules[0] (position 7) → {field}: " in line and words in line for line in lines), lines


@pytest.mark.parametrize(("pattern", "says"), GOOD.values(), ids=GOOD.keys())
def test_a_catalog_file_with_a_good_sentence_is_valid(pattern, says):
    validate_catalog_document(_document(pattern, says), source="catalog.yaml")


@pytest.mark.django_db
@pytest.mark.parametrize(("pattern", "says", "field", "words"), BAD.values(), ids=BAD.keys())
def test_importing_a_file_with_a_bad_sentence_writes_nothing(tmp_path, pattern, says, field, words):
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(_document(pattern, says)))

    with pytest.raises(CommandError, match=r"rules\[0\] \(position 7\) → " + field) as refused:
        call_command("catalog_import", str(path))
    assert words in str(refused.value)
    assert not ErrorCode.objects.exists() and not ClassificationRule.objects.exists()


@pytest.mark.django_db
def test_a_sentence_survives_export_and_import(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(_document(COLUMN_PATTERN, COLUMN_SENTENCE)))
    call_command("catalog_import", str(path))
    assert ClassificationRule.objects.get(position=7).says == COLUMN_SENTENCE

    exported = tmp_path / "exported.yaml"
    call_command("catalog_export", "-o", str(exported))
    (rule,) = yaml.safe_load(exported.read_text())["rules"]
    assert (rule["pattern"], rule["says"]) == (COLUMN_PATTERN, COLUMN_SENTENCE)

    ClassificationRule.objects.all().delete()
    call_command("catalog_import", str(exported))
    assert ClassificationRule.objects.get(position=7).says == COLUMN_SENTENCE
    assert catalog_document_from_db()["rules"][0]["says"] == COLUMN_SENTENCE


@pytest.mark.django_db
def test_an_import_that_changes_only_the_sentence_updates_it(default_document):
    catalog_import(default_document)
    doc = copy.deepcopy(default_document)
    rule = next(r for r in doc["rules"] if r["position"] == 285)
    rule["says"] = "No column {name} in that table."

    summary = catalog_import(doc)

    assert summary.changes == ["update rule #285 → NOT_FOUND: says"]
    assert ClassificationRule.objects.get(position=285).says == "No column {name} in that table."


@pytest.mark.django_db
def test_the_served_snapshot_carries_the_sentence(default_document):
    catalog_import(default_document)
    catalog_changed()
    rules = {rule.position: rule for rule in catalog_snapshot().rules}
    assert rules[285].says == ClassificationRule.objects.get(position=285).says != ""


# --- The admin ------------------------------------------------------------------------------------------------


@pytest.fixture
def writer(client, staff_user, catalog):
    client.force_login(staff_user)
    return client


def _rule_form(writer, **fields) -> dict[str, str]:
    data = form_data(writer.get(admin_url(ClassificationRule, "add")))
    data.update(position=str(POSITION), error_code=str(ErrorCode.objects.get(code="NOT_FOUND").pk), **fields)
    return data


@pytest.mark.parametrize(("pattern", "says", "field", "words"), BAD.values(), ids=BAD.keys())
def test_the_admin_refuses_a_bad_sentence_at_its_field(writer, pattern, says, field, words):
    response = writer.post(admin_url(ClassificationRule, "add"), _rule_form(writer, pattern=pattern, says=says))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors.get(field, [])
    assert any(words in error for error in errors), response.context["adminform"].form.errors
    assert not ClassificationRule.objects.filter(position=POSITION).exists()


@pytest.mark.parametrize(("pattern", "says"), GOOD.values(), ids=GOOD.keys())
def test_the_admin_saves_a_good_sentence_and_finds_it(writer, pattern, says):
    response = writer.post(admin_url(ClassificationRule, "add"), _rule_form(writer, pattern=pattern, says=says))

    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    rule = ClassificationRule.objects.get(position=POSITION)
    assert rule.says == says
    page = writer.get(admin_url(ClassificationRule, "change", rule.pk)).content.decode()
    assert 'name="says"' in page
    found = writer.get(admin_url(ClassificationRule, "changelist"), {"q": says}).context["cl"]
    assert rule in found.result_list


# --- The catalog revision -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_changing_only_the_sentence_raises_the_revision():
    call_command("catalog_load_defaults", verbosity=0)
    rule = ClassificationRule.objects.get(position=285)
    before = catalog_revision()

    classification_rule_update(rule=rule, says="No column {name} in that table.")

    assert catalog_revision() != before
    before = catalog_revision()
    ClassificationRule.objects.filter(position=284).update(says="")
    assert catalog_revision() != before


# --- Migration 0031 on SQLite ---------------------------------------------------------------------------------


def _triggers(database) -> dict[str, set[str]]:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        rows = connection.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    found: dict[str, set[str]] = {}
    for table, name in rows:
        found.setdefault(table, set()).add(name)
    return found


def _revision_number(database) -> int:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        row = connection.execute("SELECT number FROM errcatalog_catalogrevision WHERE id = 1").fetchone()
    return row[0] if row else 0


def _touch(database, table: str) -> None:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        connection.execute(f"UPDATE {table} SET id = id WHERE id = (SELECT MIN(id) FROM {table})")  # noqa: S608
        connection.commit()


MIGRATED_TABLES = ("errcatalog_classificationrule", "errcatalog_upstream")


def test_migration_0031_keeps_the_revision_triggers_of_the_tables_it_rebuilds(tmp_path):
    from tests.support.processes import process_environment
    from tests.support.served_app import EMBEDDED_DATABASE, manage

    env = process_environment(database_url="", redis_url="", data_dir=tmp_path, LOG_LEVEL="INFO")
    del env["DATABASE_URL"]  # the embedded default: a SQLite file in the data folder
    database = tmp_path / EMBEDDED_DATABASE
    manage(env, "migrate", "--no-input", "--verbosity", "0")
    manage(
        env, "shell", "--no-imports", "-c",
        "from django.core.management import call_command; from errcatalog.gateway.models import Upstream; "
        "call_command('catalog_load_defaults', verbosity=0); "
        "Upstream.objects.create(name='web', prefix='web', transport='http', url='https://mcp.example.com/mcp')",
    )  # fmt: skip

    for target in ("0030", "0031"):
        manage(env, "migrate", "errcatalog", target, "--no-input", "--verbosity", "0")
        triggers = _triggers(database)
        for table in MIGRATED_TABLES:
            assert triggers.get(table, set()) >= {f"{table}_revision_{op}" for op in ("insert", "update", "delete")}, (
                f"{table} at {target}"
            )
            before = _revision_number(database)
            _touch(database, table)
            assert _revision_number(database) == before + 1, f"{table} at {target}"
