"""The template lint (the rules for writing error text and questions): each rule on a variant that breaks it and
on one that does not, the shipped catalog clean, and the rule every writer enforces (no question for a secret)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
from errcatalog.catalog.document import dump_catalog, read_catalog_file
from errcatalog.catalog.lint import LONGEST_VALUES, hint_findings, lint_catalog, variant_findings
from errcatalog.catalog.models import ErrorCode, ParameterHint, TemplateVariant
from errcatalog.render import ParameterFault
from errcatalog.safety import PLACEHOLDERS
from errcatalog.vocabulary import is_secret_name
from mcpserver.elicitation import requested_schema
from mcpserver.registry import ToolSpec
from tests.errcatalog.catalog.admin_pages import admin_url, form_data

CAP = 500
# Short as written, over the cap once three 128-character tool names fill {alternatives}.
ALTERNATIVES_INSTRUCTION = "Use one of these instead: {alternatives}. " + "Check the name first. " * 6
# A system code's failures carry no service and no retry-after: these sentences would never be shown.
UNPROVIDED_INSTRUCTION = "Set up {service} and retry in {retry_after} seconds."
TOOL_CODE = {"code": "EXECUTION_FAILURE", "category": "tool", "kind": "error", "system": True, "retryable": False}
QUESTION_CODE = {"code": "MISSING_PARAMETER", "category": "user_input", "kind": "needs_input"}
GOOD = {
    "message": "The tool {tool_name} failed while running.",
    "cause": "Something inside the tool broke; the details were logged.",
    "instruction": "Tell the user this operation failed and try another approach if there is one.",
    "question": "",
}
GOOD_QUESTION = {**GOOD, "question": "Question: Who should I send this email to? Please provide the address."}


def _rules(findings) -> set[tuple[str, str]]:
    return {(field, rule) for field, rule, _text in findings}


def test_the_shipped_catalog_has_no_warnings():
    assert lint_catalog(read_catalog_file(DEFAULT_CATALOG_PATH), max_chars=CAP) == []


def test_every_placeholder_has_a_longest_value():
    assert LONGEST_VALUES.keys() == PLACEHOLDERS.keys()


def test_a_well_written_variant_has_no_warnings():
    assert variant_findings(TOOL_CODE, GOOD, max_chars=CAP) == []
    assert variant_findings(QUESTION_CODE, GOOD_QUESTION, max_chars=CAP) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"instruction": ""}, ("instruction", "no-instruction")),
        ({"message": "The weather API returned HTTP 503."}, ("message", "raw-status")),
        ({"message": "503 Service Unavailable from the weather API."}, ("message", "raw-status")),
        ({"cause": "The service answered with status {status_code}."}, ("cause", "raw-status")),
        ({"cause": "requests.exceptions.ConnectionError was raised."}, ("cause", "exception-name")),
        ({"cause": "A ValueError inside the tool."}, ("cause", "exception-name")),
        ({"message": "An error occurred."}, ("message", "generic")),
        ({"message": "Invalid parameter."}, ("message", "generic")),
        ({"instruction": "Not found."}, ("instruction", "generic")),
        ({"instruction": "Try again. " + "Really, try again. " * 30}, ("instruction", "over-cap")),
        # Short as written, over the cap once three 128-character tool names fill {alternatives}.
        (
            {"instruction": "Use one of these instead: {alternatives}. " + "Check the name first. " * 6},
            ("instruction", "over-cap"),
        ),
        # A system code's failures carry no service and no retry-after: those sentences would never be shown.
        (
            {"instruction": "Set up {service} and retry in {retry_after} seconds."},
            ("instruction", "unprovided-placeholder"),
        ),
    ],
)
def test_each_rule_finds_what_it_is_about(changes, expected):
    findings = variant_findings(TOOL_CODE, {**GOOD, **changes}, max_chars=CAP)
    assert expected in _rules(findings), findings
    assert all(text for _field, _rule, text in findings)


def test_a_placeholder_is_provided_by_the_codes_own_properties_and_rules():
    network = {"code": "NETWORK_ERROR", "category": "network", "kind": "error", "retryable": True}
    variant = {**GOOD, "message": "Network error: {network_failure}.", "instruction": "Retry in {retry_after} s."}
    assert variant_findings(network, variant, max_chars=CAP) == []
    # A status reaches a code through its HTTP statuses or a rule with a status condition.
    status_variant = {**GOOD, "cause": "The service said {status_text}."}
    assert ("cause", "unprovided-placeholder") in _rules(variant_findings(TOOL_CODE, status_variant, max_chars=CAP))
    rule = {"code": "EXECUTION_FAILURE", "status_min": 500, "status_max": 599}
    assert variant_findings(TOOL_CODE, status_variant, [rule], max_chars=CAP) == []
    # A network failure reaches it through a rule on an upstream's timeout or connection kind.
    network_variant = {**GOOD, "cause": "The call failed: {network_failure}."}
    assert ("cause", "unprovided-placeholder") in _rules(variant_findings(TOOL_CODE, network_variant, max_chars=CAP))
    kind_rule = {"code": "EXECUTION_FAILURE", "kind": "timeout"}
    assert variant_findings(TOOL_CODE, network_variant, [kind_rule], max_chars=CAP) == []


@pytest.mark.parametrize(
    ("question", "locale", "problem"),
    [
        ("", "", "write one"),
        ("Who should I send this email to? Please provide the address.", "", "Start with 'Question:'"),
        ("Question: Your gmail service needs to be set up. Please configure it.", "", "End the first sentence"),
        ("Question: There seems to be an issue with to.", "", "End the first sentence"),
        ("Wem soll ich die E-Mail schicken?", "de", "its language's label"),
        ("Frage: Der Dienst muss eingerichtet werden.", "de", "End the first sentence"),
    ],
)
def test_an_interactive_codes_question_asks_a_question(question, locale, problem):
    findings = variant_findings(QUESTION_CODE, {**GOOD, "question": question, "locale": locale}, max_chars=CAP)
    assert any(rule == "question" and problem in text for _field, rule, text in findings), findings


def test_a_question_in_another_locale_starts_with_its_own_label():
    variant = {**GOOD, "locale": "de", "question": "Frage: Wem soll ich die E-Mail schicken? Bitte die Adresse."}
    assert variant_findings(QUESTION_CODE, variant, max_chars=CAP) == []


def test_a_hints_question_follows_the_same_rules():
    assert hint_findings({"question": "Question: What should the subject line be?"}, max_chars=CAP) == []
    assert hint_findings({"question": ""}, max_chars=CAP) == []
    assert ("question", "question") in _rules(hint_findings({"question": "Subject line, please."}, max_chars=CAP))


def test_the_catalog_lint_names_where_each_warning_is():
    document = read_catalog_file(DEFAULT_CATALOG_PATH)
    code = next(c for c in document["codes"] if c["code"] == "RATE_LIMIT")
    code["variants"][0]["instruction"] = ""
    document["hints"][0]["question"] = "Question: Content, please."
    findings = lint_catalog(document, max_chars=CAP)
    index = document["codes"].index(code)
    assert [(f.path, f.rule) for f in findings] == [
        (("codes", index, "variants", 0, "instruction"), "no-instruction"),
        (("hints", 0, "question"), "question"),
    ]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True), ("api_key", True), ("apiKey", True), ("clientSecret", True), ("GITHUB_TOKEN", True),
        ("accessKeyId", True), ("user_pin", True), ("to", False), ("subject", False), ("max_tokens", False),
        ("spin", False), ("key", False), ("query", False),
    ],
)  # fmt: skip
def test_a_secret_is_known_by_the_words_of_its_name(name, secret):
    assert is_secret_name(name) is secret


@pytest.mark.django_db
def test_no_writer_may_save_a_question_for_a_secret_parameter():
    hint = ParameterHint(tool="login", parameter="api_key", question="Question: What is your API key?")
    with pytest.raises(ValidationError) as refused:
        hint.full_clean()
    assert "holds a secret" in str(refused.value.message_dict["question"])
    ParameterHint(tool="login", parameter="api_key", description="the service's API key").full_clean()


def test_a_parameter_named_as_a_secret_is_never_asked_for_in_a_form():
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}, "city": {"type": "string"}}}
    spec = ToolSpec(name="t", description="d", input_schema=schema, function=lambda **kw: None, elicit=True)
    assert requested_schema(spec, (ParameterFault("city"),)) is not None
    assert requested_schema(spec, (ParameterFault("api_key"),)) is None


# --- Where people meet it: the command, the import, admin ----------------------------------------------------


def test_the_command_passes_the_shipped_catalog_under_strict(capsys):
    call_command("catalog_lint", str(DEFAULT_CATALOG_PATH), "--strict")
    assert "31 codes, 35 variants and 18 hints, no warnings." in capsys.readouterr().out


@pytest.mark.django_db
def test_the_command_lists_the_databases_warnings_and_fails_under_strict(capsys):
    call_command("catalog_load_defaults", verbosity=0)
    TemplateVariant.objects.filter(error_code__code="RATE_LIMIT", locale="").update(instruction="")
    call_command("catalog_lint")  # warnings alone do not fail without --strict
    with pytest.raises(SystemExit) as failed:
        call_command("catalog_lint", "--strict")
    assert failed.value.code == 1
    out = capsys.readouterr().out
    assert "(RATE_LIMIT) → variants[0] (default).instruction: Say what to do next" in out
    assert "[no-instruction]" in out and "warnings: 1." in out


def test_the_command_refuses_a_file_that_is_not_a_catalog(tmp_path):
    broken = tmp_path / "catalog.yaml"
    broken.write_text("format: errcatalog/v1\ncodes: 7\n")
    with pytest.raises(CommandError, match=r"catalog\.yaml") as refused:
        call_command("catalog_lint", str(broken))
    assert refused.value.returncode == 2


@pytest.mark.django_db
def test_an_import_lists_the_warnings_of_what_it_imported(tmp_path, capsys):
    document = read_catalog_file(DEFAULT_CATALOG_PATH)
    code = next(c for c in document["codes"] if c["code"] == "TIMEOUT")
    code["variants"][0]["message"] = "An error occurred."
    path = tmp_path / "catalog.yaml"
    path.write_text(dump_catalog(document, "yaml"))
    call_command("catalog_import", str(path))
    out = capsys.readouterr().out
    assert (
        "Template warnings (the rules for writing error text): 1" in out
        and "(TIMEOUT) → variants[0] (default).message: 'An error occurred' is generic" in out
    )
    assert TemplateVariant.objects.get(error_code__code="TIMEOUT").message == "An error occurred."  # imported


@pytest.mark.django_db
def test_admin_shows_the_warnings_beside_the_variant_and_after_saving_it(client, staff_user):
    call_command("catalog_load_defaults", verbosity=0)
    client.force_login(staff_user)
    variant = TemplateVariant.objects.get(error_code__code="TIMEOUT", locale="")
    url = admin_url(TemplateVariant, "change", variant.pk)
    assert "No warnings." in client.get(url).content.decode()
    data = form_data(client.get(url))
    data["message"] = "An error occurred."
    response = client.post(url, data, follow=True)
    assert response.status_code == 200
    sent = [str(m) for m in response.context["messages"]]
    assert any("message: 'An error occurred' is generic" in m and "[generic]" in m for m in sent), sent
    page = client.get(url).content.decode()
    assert "errcatalog-lint" in page and "is generic" in page
    # The code's page shows it beside the variant too.
    code_page = client.get(admin_url(ErrorCode, "change", variant.error_code_id)).content.decode()
    assert "is generic" in code_page


@pytest.mark.django_db
def test_admin_refuses_a_question_for_a_secret_at_its_field(client, staff_user):
    client.force_login(staff_user)
    url = admin_url(ParameterHint, "add")
    response = client.post(
        url, {"tool": "login", "parameter": "password", "question": "Question: What is your password?"}
    )
    assert response.status_code == 200
    assert "holds a secret" in str(response.context["adminform"].form.errors["question"])
    assert not ParameterHint.objects.filter(parameter="password").exists()
