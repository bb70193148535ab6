"""The writers' admin, through Django's test client: pages, search and filters, placeholder checks at the field,
history and revert, the preview of every face, client tokens, and who may get in."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from errcatalog.access.models import ClientToken
from errcatalog.access.tokens import client_token_create
from errcatalog.catalog.document import validate_catalog_document
from errcatalog.catalog.export import catalog_document_from_db
from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from errcatalog.catalog.preview_samples import SAMPLE_EVENT_ID
from errcatalog.catalog.snapshot import catalog_changed
from tests.errcatalog.catalog.admin_pages import admin_url as _url
from tests.errcatalog.catalog.admin_pages import form_data as _form_data

pytestmark = pytest.mark.django_db

CATALOG_MODELS = (ErrorCode, TemplateVariant, ParameterHint, ClassificationRule)


@pytest.fixture
def catalog() -> None:
    call_command("catalog_load_defaults", verbosity=0)


@pytest.fixture
def writer(client, staff_user, catalog):
    client.force_login(staff_user)
    return client


def _variant_index(response, variant: TemplateVariant) -> int:
    forms = response.context["inline_admin_formsets"][0].formset.forms
    return next(i for i, form in enumerate(forms) if form.instance.pk == variant.pk)


# --- Pages ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [*CATALOG_MODELS, ClientToken], ids=lambda m: m.__name__)
def test_changelist_change_add_and_history_pages_load(writer, staff_user, model):
    client_token_create(user=staff_user, name="laptop")
    obj = model.objects.first()
    assert obj is not None, f"the default catalog has no {model.__name__}"
    assert writer.get(_url(model, "changelist")).status_code == 200
    assert writer.get(_url(model, "change", obj.pk)).status_code == 200
    assert writer.get(_url(model, "add")).status_code == 200
    assert writer.get(_url(model, "history", obj.pk)).status_code == 200


def test_error_code_list_counts_variants(writer):
    response = writer.get(_url(ErrorCode, "changelist"))
    row = next(c for c in response.context["cl"].result_list if c.code == "MISSING_PARAMETER")
    assert row.variant_count == TemplateVariant.objects.filter(error_code__code="MISSING_PARAMETER").count()


def test_search_finds_codes_by_code_and_by_variant_text(writer):
    by_code = writer.get(_url(ErrorCode, "changelist"), {"q": "NETWORK_ERROR"})
    assert [c.code for c in by_code.context["cl"].result_list] == ["NETWORK_ERROR"]

    variant = TemplateVariant.objects.get(error_code__code="MISSING_PARAMETER", name="default", locale="")
    variant.message = "Nobody said whom to write to"
    variant.save(update_fields=["message"])
    by_text = writer.get(_url(ErrorCode, "changelist"), {"q": "whom to write"})
    assert [c.code for c in by_text.context["cl"].result_list] == ["MISSING_PARAMETER"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"category__exact": "network"}, lambda c: c.category == "network"),
        ({"kind__exact": "needs_input"}, lambda c: c.kind == "needs_input"),
        ({"system__exact": "1"}, lambda c: c.system),
        ({"retryable__exact": "0"}, lambda c: not c.retryable),
    ],
    ids=["category", "kind", "system", "retryable"],
)
def test_filters_narrow_the_error_code_list(writer, params, expected):
    rows = list(writer.get(_url(ErrorCode, "changelist"), params).context["cl"].result_list)
    assert rows
    assert all(expected(c) for c in rows)
    assert len(rows) == sum(1 for c in ErrorCode.objects.all() if expected(c))


def test_variant_rule_and_hint_lists_search_and_filter(writer):
    variants = writer.get(_url(TemplateVariant, "changelist"), {"q": "MISSING_PARAMETER"}).context["cl"]
    assert {v.error_code.code for v in variants.result_list} == {"MISSING_PARAMETER"}
    headers = writer.get(_url(TemplateVariant, "changelist"), {"header__exact": "Input Error"}).context["cl"]
    assert headers.result_list and all(v.header == "Input Error" for v in headers.result_list)

    rules = list(writer.get(_url(ClassificationRule, "changelist")).context["cl"].result_list)
    assert [r.position for r in rules] == sorted(r.position for r in rules)
    timeouts = writer.get(_url(ClassificationRule, "changelist"), {"transport__exact": "timeout"}).context["cl"]
    assert all(r.transport == "timeout" for r in timeouts.result_list)

    hint = ParameterHint.objects.first()
    hints = writer.get(_url(ParameterHint, "changelist"), {"q": hint.parameter}).context["cl"]
    assert hint in hints.result_list


def test_export_action_downloads_the_selected_codes_as_an_importable_document(writer):
    selected = ErrorCode.objects.filter(code__in=["NETWORK_ERROR", "MISSING_PARAMETER"])
    response = writer.post(
        _url(ErrorCode, "changelist"),
        {"action": "export_yaml", "_selected_action": [c.pk for c in selected]},
    )

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert "attachment" in response["Content-Disposition"]
    document = validate_catalog_document(yaml.safe_load(response.content.decode()))
    assert [c["code"] for c in document["codes"]] == ["MISSING_PARAMETER", "NETWORK_ERROR"]
    variants = document["codes"][1]["variants"]
    assert {v["name"] for v in variants} == set(
        selected.get(code="NETWORK_ERROR").variants.values_list("name", flat=True)
    )


# --- Placeholder checks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("Tool {x.__class__} failed.", "attribute access and indexing are not allowed"),
        ("Tool {0[1]} failed.", "attribute access and indexing are not allowed"),
        ("Tool {unknown} failed.", "{unknown} is not a known placeholder"),
    ],
    ids=["attribute", "index", "unknown"],
)
def test_unsafe_placeholder_in_an_inline_variant_is_refused_at_the_field(writer, template, problem):
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    variant = code.variants.first()
    before = variant.message
    url = _url(ErrorCode, "change", code.pk)
    page = writer.get(url)
    index = _variant_index(page, variant)
    data = _form_data(page)
    data[f"variants-{index}-message"] = template

    response = writer.post(url, data)

    assert response.status_code == 200
    inline_form = response.context["inline_admin_formsets"][0].formset.forms[index]
    assert any(problem in error for error in inline_form.errors["message"])
    assert problem in response.content.decode()
    variant.refresh_from_db()
    assert variant.message == before


def test_unsafe_placeholder_on_the_variant_page_is_refused(writer):
    variant = TemplateVariant.objects.get(error_code__code="MISSING_PARAMETER", name="default", locale="")
    before = variant.question
    url = _url(TemplateVariant, "change", variant.pk)
    data = _form_data(writer.get(url))
    data["question"] = "Question: {tool_name.__globals__}?"

    response = writer.post(url, data)

    assert response.status_code == 200
    assert "attribute access and indexing are not allowed" in response.context["adminform"].form.errors["question"][0]
    variant.refresh_from_db()
    assert variant.question == before


def test_template_fields_list_the_allowed_placeholders(writer):
    code = ErrorCode.objects.get(code="MISSING_PARAMETER")
    page = writer.get(_url(ErrorCode, "change", code.pk)).content.decode()
    assert "Allowed placeholders" in page
    assert "{tool_name}" in page
    assert "the tool&#x27;s registered name" in page


# --- History and revert -----------------------------------------------------------------------------------


def test_valid_edit_saves_and_appears_in_history(writer):
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    variant = code.variants.first()
    versions_before = code.history.count()
    url = _url(ErrorCode, "change", code.pk)
    page = writer.get(url)
    data = _form_data(page)
    data["explanation"] = "The network between us and the service failed."
    data[f"variants-{_variant_index(page, variant)}-message"] = "The call to {tool_name} did not reach its service."

    response = writer.post(url, data)

    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    code.refresh_from_db()
    variant.refresh_from_db()
    assert code.explanation == "The network between us and the service failed."
    assert variant.message == "The call to {tool_name} did not reach its service."
    assert code.history.count() == versions_before + 1
    assert code.history.first().history_user.username == "writer"
    assert variant.history.first().message == variant.message
    history_page = writer.get(_url(ErrorCode, "history", code.pk))
    assert history_page.status_code == 200
    assert "Explanation" in history_page.content.decode()


@pytest.mark.parametrize("model", [ErrorCode, ClientToken], ids=lambda m: m.__name__)
def test_deeply_nested_json_in_a_field_is_a_form_error_not_a_500(writer, staff_user, model):
    deep = "[" * 50_000 + "]" * 50_000
    statuses = ErrorCode.objects.get(code="NETWORK_ERROR").http_statuses
    if model is ErrorCode:
        url = _url(ErrorCode, "change", ErrorCode.objects.get(code="NETWORK_ERROR").pk)
        data = {**_form_data(writer.get(url)), "http_statuses": deep}
    else:
        url, data = _url(ClientToken, "add"), {"name": "deep", "user": staff_user.pk, "tool_scope": deep}

    response = writer.post(url, data)

    assert response.status_code == 200
    assert "Enter valid JSON, nested at most 64 levels." in response.content.decode()
    assert not ClientToken.objects.exists()
    assert ErrorCode.objects.get(code="NETWORK_ERROR").http_statuses == statuses


def test_revert_through_history_restores_the_old_explanation(writer):
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    original = code.explanation
    url = _url(ErrorCode, "change", code.pk)
    data = _form_data(writer.get(url))
    data["explanation"] = "A wrong explanation."
    assert writer.post(url, data).status_code == 302
    old = code.history.filter(explanation=original).first()

    revert_url = f"/admin/errcatalog/errorcode/{code.pk}/history/{old.history_id}/"
    response = writer.post(revert_url, _form_data(writer.get(revert_url)))

    assert response.status_code == 302
    code.refresh_from_db()
    assert code.explanation == original
    assert code.history.first().explanation == original


def test_revert_through_history_restores_the_old_variant_text(writer):
    variant = TemplateVariant.objects.get(error_code__code="MISSING_PARAMETER", name="default", locale="")
    original = variant.question
    url = _url(TemplateVariant, "change", variant.pk)
    data = _form_data(writer.get(url))
    data["question"] = "Question: What now?"
    assert writer.post(url, data).status_code == 302
    old = variant.history.filter(question=original).first()

    revert_url = f"/admin/errcatalog/templatevariant/{variant.pk}/history/{old.history_id}/"
    assert writer.get(revert_url).status_code == 200
    response = writer.post(revert_url, _form_data(writer.get(revert_url)))

    assert response.status_code == 302
    variant.refresh_from_db()
    assert variant.question == original


# --- Preview ----------------------------------------------------------------------------------------------


def _preview(writer, code: str) -> tuple[list, str]:
    response = writer.get(_url(ErrorCode, "change", ErrorCode.objects.get(code=code).pk))
    assert response.status_code == 200
    return response.context["variant_previews"], response.content.decode()


def test_preview_shows_every_face_of_every_variant(writer):
    previews, page = _preview(writer, "NETWORK_ERROR")
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    assert {(p.variant.name, p.variant.locale) for _, p in previews} == {
        (v.name, v.locale) for v in code.variants.all()
    }
    assert {variant_id for variant_id, _ in previews} == set(code.variants.values_list("pk", flat=True))
    for label in (
        "MCP tool result · markdown",
        "MCP tool result · json",
        "MCP tool result · both",
        "JSON-RPC error",
        "Markdown for people",
        "Agent-tool wrapper",
        "Anatomy",
        "OpenAI function_call_output",
        "Anthropic tool_result",
        "Gemini functionResponse",
    ):
        assert label in page
    assert "toolError:v1" in page
    assert "function_call_output" in page
    assert "functionResponse" in page
    assert "errcatalog/preview.js" in page


def test_preview_of_missing_parameter_asks_a_question(writer):
    previews, page = _preview(writer, "MISSING_PARAMETER")
    assert "Question:" in page
    assert "needsInput:v1" in page
    # Each variant is previewed in its own locale: the German one asks in German.
    questions = {p.variant.locale: p.rendered.question for _, p in previews}
    assert questions[""].startswith("Question:")
    assert questions["de"].startswith("Frage: ")
    assert "Frage:" in page
    # The sample call is a served tool missing one of its own required parameters: the first one whose hint has no
    # question of its own, so the preview shows the variant's question (send_email's parameters all have one).
    from mcpserver.admin import served_sample_tools

    failure = previews[0][1].failure
    served = {t.name: [p.name for p in t.required] for t in served_sample_tools()}
    assert failure.parameters[0].name in served[failure.tool_name]
    hint = ParameterHint.objects.filter(tool=failure.tool_name, parameter=failure.parameters[0].name).first()
    assert hint is None or not hint.question
    assert all(p.failure == failure for _, p in previews)


def test_preview_of_a_system_code_shows_the_event_id(writer):
    code = ErrorCode.objects.filter(system=True, active=True).first()
    previews, page = _preview(writer, code.code)
    assert f"Event ID: {SAMPLE_EVENT_ID}" in page
    assert all(p.rendered.event_id == SAMPLE_EVENT_ID for _, p in previews)


def test_preview_of_an_unknown_tool_offers_alternatives(writer):
    previews, page = _preview(writer, "FUNCTION_NOT_FOUND")
    assert all(p.rendered.alternatives == ("get_weather", "get_forecast") for _, p in previews)
    assert "get_forecast" in page


def test_preview_shows_the_saved_text_at_once(writer):
    variant = TemplateVariant.objects.get(error_code__code="NETWORK_ERROR", name="default", locale="")
    variant.message = "Freshly saved wording for {tool_name}."
    variant.save(update_fields=["message"])
    _previews, page = _preview(writer, "NETWORK_ERROR")
    assert "Freshly saved wording for send_email." in page


def test_preview_of_a_localised_variant_shows_its_own_text(writer):
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    TemplateVariant.objects.create(
        error_code=code, name="default", locale="de", message="Netzwerkfehler bei {tool_name}.", instruction="Warten."
    )
    previews, page = _preview(writer, "NETWORK_ERROR")
    german = next(p for _, p in previews if p.variant.locale == "de")
    assert german.rendered.message == "Netzwerkfehler bei send_email."
    assert "Netzwerkfehler bei send_email." in page


def test_preview_of_an_inactive_code_renders_that_code(writer):
    ErrorCode.objects.filter(code="NETWORK_ERROR").update(active=False)
    previews, _page = _preview(writer, "NETWORK_ERROR")
    assert previews and all(p.rendered.code == "NETWORK_ERROR" for _, p in previews)


@pytest.mark.parametrize(
    "code", ["MISSING_PARAMETER", "FUNCTION_NOT_FOUND", "NETWORK_ERROR", "RATE_LIMIT", "UNKNOWN_ERROR"]
)
def test_render_api_reproduces_every_face_so_the_live_preview_matches(writer, code):
    # The browser re-renders a face by posting the request the page carries, plus the draft text; with the
    # saved text as draft, the answer must be the face the server rendered.
    catalog_changed()
    previews, _page = _preview(writer, code)
    assert previews
    for _variant_id, preview in previews:
        v = preview.variant
        draft = {"message": v.message, "cause": v.cause, "instruction": v.instruction, "question": v.question}
        for face in preview.faces:
            for body in (face.request, {**face.request, "draft": {**draft, "header": v.header}}):
                response = writer.post(reverse("api-render"), body, content_type="application/json")
                assert response.status_code == 200, response.content
                assert response.json()["output"] == face.output, (code, v.name, face.key)


def test_text_over_the_budget_is_flagged(writer, settings):
    settings.ERRCATALOG = {**settings.ERRCATALOG, "MAX_MESSAGE_CHARS": 80}
    variant = TemplateVariant.objects.get(error_code__code="NETWORK_ERROR", name="default", locale="")
    variant.message = "word " * 30
    variant.save(update_fields=["message"])
    previews, page = _preview(writer, "NETWORK_ERROR")
    mine = next(p for _, p in previews if p.variant.name == "default" and not p.variant.locale)
    assert mine.over_budget
    assert len(mine.rendered.text) <= 80
    assert "errcatalog-over" in page
    assert "/ 80" in page


def test_the_variant_page_says_which_text_each_tool_gets(writer):
    variant = TemplateVariant.objects.get(error_code__code="MISSING_PARAMETER", name="default", locale="")
    page = writer.get(_url(TemplateVariant, "change", variant.pk)).content.decode()
    assert "the model gets the question only" in page
    assert "a parameter hint&#x27;s question replaces this variant&#x27;s question" in page
    hint = ParameterHint.objects.get(tool="send_email", parameter="to")
    # send_email · to gets its hint's question, linked to the hint's page; explain_error · code the variant's.
    assert f'href="{_url(ParameterHint, "change", hint.pk)}"' in page
    assert "Who should I send this email to?" in page
    assert "Question: What should I use for code?" in page


def test_the_hint_page_lists_the_codes_whose_question_it_replaces(writer):
    hint = ParameterHint.objects.get(tool="send_email", parameter="to")
    page = writer.get(_url(ParameterHint, "change", hint.pk)).content.decode()
    rows = page.split('<table class="errcatalog-tools">', 1)[1].split("</table>", 1)[0]
    assert "MISSING_PARAMETER" in rows and "INVALID_PARAMETER" in rows
    # A code about a service is not asked about a parameter, so the hint has no say in it.
    assert "AUTHENTICATION_REQUIRED" not in rows
    missing_row = rows.split("MISSING_PARAMETER", 1)[1].split("</tr>", 1)[0]
    assert "replaces this variant" in missing_row and "Who should I send this email to?" in missing_row
    invalid_row = rows.split("INVALID_PARAMETER", 1)[1].split("</tr>", 1)[0]
    assert "this variant&#x27;s question only" in invalid_row


def test_a_hint_for_a_tool_nobody_serves_says_so(writer):
    hint = ParameterHint.objects.create(tool="no_such_tool", parameter="x", question="Question: Which x?")
    page = writer.get(_url(ParameterHint, "change", hint.pk)).content.decode()
    assert "No served tool is named <code>no_such_tool</code>" in page


# --- Client tokens ----------------------------------------------------------------------------------------


def test_adding_a_token_shows_its_key_once_and_never_the_hash(writer, staff_user):
    response = writer.post(
        _url(ClientToken, "add"),
        {"name": "ci runner", "user": staff_user.pk, "tool_scope": '["send_email"]'},
        follow=True,
    )

    assert response.status_code == 200
    token = ClientToken.objects.get(name="ci runner")
    shown = [str(m) for m in response.context["messages"] if "shown only this once" in str(m)]
    assert len(shown) == 1
    raw_key = shown[0].rsplit(" ", 1)[1]
    assert raw_key.startswith(token.key_prefix)
    assert token.tool_scope == ["send_email"]
    from errcatalog.access.tokens import client_token_authenticate

    assert client_token_authenticate(raw_key) == token
    for page in (response, writer.get(_url(ClientToken, "change", token.pk))):
        assert token.key_hash not in page.content.decode()
    assert raw_key not in writer.get(_url(ClientToken, "change", token.pk)).content.decode()


def test_a_token_for_metrics_is_added_in_admin(writer, staff_user):
    response = writer.post(
        _url(ClientToken, "add"),
        {"name": "grafana", "user": staff_user.pk, "tool_scope": "[]", "can_read_metrics": "on"},
        follow=True,
    )

    assert response.status_code == 200
    token = ClientToken.objects.get(name="grafana")
    assert token.can_read_metrics and not token.can_write_catalog
    assert "can_read_metrics" in writer.get(_url(ClientToken, "change", token.pk)).content.decode()


def test_revoke_action_revokes_the_selected_tokens(writer, staff_user):
    kept, _ = client_token_create(user=staff_user, name="kept")
    revoked, _ = client_token_create(user=staff_user, name="lost laptop")

    response = writer.post(
        _url(ClientToken, "changelist"), {"action": "revoke", "_selected_action": [revoked.pk]}, follow=True
    )

    assert response.status_code == 200
    revoked.refresh_from_db()
    kept.refresh_from_db()
    assert revoked.revoked_at is not None
    assert kept.revoked_at is None


# --- Access -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["anonymous", "plain_user"])
def test_only_staff_get_in(client, catalog, plain_user, who):
    if who == "plain_user":
        client.force_login(plain_user)
    code = ErrorCode.objects.get(code="NETWORK_ERROR")
    for url in (_url(ErrorCode, "changelist"), _url(ErrorCode, "change", code.pk), _url(ClientToken, "changelist")):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.django_db
def test_view_site_goes_to_the_dashboard(client, staff_user):
    client.force_login(staff_user)
    page = client.get("/admin/").content.decode()
    assert '<a href="/dashboard/">View site</a>' in page
    assert 'rel="icon" type="image/svg+xml" href="/static/errcatalog/favicon.svg"' in page


# --- Rules on an upstream failure's kind and text -------------------------------------------------------------


def _rule_form(writer, **fields) -> dict[str, str]:
    data = _form_data(writer.get(_url(ClassificationRule, "add")))
    data.update(position="99999", error_code=str(ErrorCode.objects.get(code="NOT_FOUND").pk), **fields)
    return data


def test_a_pattern_re2_refuses_is_an_error_at_its_field(writer):
    response = writer.post(_url(ClassificationRule, "add"), _rule_form(writer, kind="tool_error", pattern="(?=x)y"))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["pattern"]
    assert any("RE2 cannot use this pattern" in e and "look-around" in e for e in errors)
    assert not ClassificationRule.objects.filter(position=99999).exists()


def test_a_rule_on_kind_and_pattern_is_saved_and_listed_in_words(writer):
    response = writer.post(
        _url(ClassificationRule, "add"), _rule_form(writer, upstream="files", kind="tool_error", pattern="^ENOENT: ")
    )

    assert response.status_code == 302
    rule = ClassificationRule.objects.get(position=99999)
    assert (rule.kind, rule.pattern) == ("tool_error", "^ENOENT: ")  # its trailing space kept
    listed = writer.get(_url(ClassificationRule, "changelist")).content.decode()
    assert "upstream files, the tool reported an error, text matches &#x27;^ENOENT: &#x27;" in listed


def test_the_previews_call_the_served_tools_as_the_endpoint_describes_them(writer):
    from errcatalog.catalog.preview_samples import sample_failure
    from errcatalog.render import render
    from errcatalog.render.entries import CatalogSnapshot
    from mcpserver.admin import served_sample_tools

    tools = {t.name: t for t in served_sample_tools()}
    create = tools["create_document"]
    assert [p.name for p in create.required] == ["content"] and create.optional == ("title",)
    assert create.summary == "Create a new text document and store it."
    snapshot = CatalogSnapshot.from_document(catalog_document_from_db(), version="t")
    failure = sample_failure(snapshot.codes["MISSING_PARAMETER"], call=(create, create.required[0]))
    data = render(snapshot, failure).data
    assert data["optional_parameters"] == ["title"] and data["guidance"] == create.summary


def test_the_previews_call_approved_upstream_tools_by_their_served_names(writer):
    from errcatalog.gateway.services import upstream_tools_record, upstreams_import
    from mcpserver.admin import served_sample_tools

    upstreams_import({"mcpServers": {"tracker": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}, actor=None)
    schema = {
        "type": "object",
        "properties": {"repo": {"type": "string", "description": "Repository name."}, "labels": {"type": "array"}},
        "required": ["repo"],
    }
    listing = [{"name": "search_issues", "description": "Search the issues of a repository.", "inputSchema": schema}]
    upstream_tools_record(upstream="tracker", listing=listing)  # a first listing is approved as it is
    tools = {t.name: t for t in served_sample_tools()}
    served = next(t for name, t in tools.items() if name.endswith("search_issues"))
    assert served.upstream == "tracker"
    assert [p.name for p in served.required] == ["repo"] and served.required[0].description == "Repository name."
    assert served.optional == ("labels",)
    assert served.summary == ""  # an upstream's description is its own prose: not a question's guidance
