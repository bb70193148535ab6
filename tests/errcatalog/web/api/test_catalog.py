"""Reading and editing the catalog: codes with nested variants, parameter hints, classification rules."""

from __future__ import annotations

import pytest

from errcatalog.catalog.models import ClassificationRule, ErrorCode, ParameterHint, TemplateVariant
from tests.errcatalog.web.api.error_shape import assert_api_error

pytestmark = pytest.mark.django_db

QUOTA = {
    "code": "QUOTA_EXCEEDED",
    "category": "rate_limit",
    "kind": "error",
    "retryable": True,
    "retry_after_seconds": 3600,
    "http_statuses": [429],
    "variants": [
        {
            "name": "default",
            "header": "Error",
            "message": "The {service} quota is used up.",
            "instruction": "Wait {retry_after} seconds, then retry.",
        },
        {"name": "short", "weight": 50, "message": "Quota used up.", "instruction": "Retry later."},
    ],
}


@pytest.fixture(params=["staff_client", "writer_client"])
def editor(request):
    """Both kinds of writer: a staff session and a token with catalog write rights."""
    return request.getfixturevalue(request.param)


def variants_by_name(body: dict) -> dict[str, dict]:
    return {v["name"]: v for v in body["variants"]}


# --- Codes ------------------------------------------------------------------------------------------------


def test_codes_are_listed_with_their_variants(catalog, reader_client):
    body = reader_client.get("/api/v1/codes/").json()

    assert body["count"] == ErrorCode.objects.count()
    codes = {c["code"]: c for c in body["results"]}
    assert {"NOT_FOUND", "RATE_LIMIT", "MISSING_PARAMETER", "UNKNOWN_ERROR"} <= set(codes)
    assert codes["MISSING_PARAMETER"]["kind"] == "needs_input"
    assert codes["MISSING_PARAMETER"]["variants"][0]["question"]


def test_codes_can_be_filtered(catalog, reader_client):
    body = reader_client.get("/api/v1/codes/", {"kind": "needs_input", "active": "true"}).json()

    assert body["results"]
    assert {c["kind"] for c in body["results"]} == {"needs_input"}
    assert_api_error(reader_client.get("/api/v1/codes/", {"active": "maybe"}), 400, "invalid")


def test_a_code_is_addressed_by_its_name(catalog, reader_client):
    body = reader_client.get("/api/v1/codes/RATE_LIMIT/").json()

    assert body["code"] == "RATE_LIMIT"
    assert body["retryable"] is True
    assert 429 in body["http_statuses"]
    assert body["variants"]


def test_an_unknown_code_is_404(catalog, reader_client):
    assert_api_error(reader_client.get("/api/v1/codes/NO_SUCH_CODE/"), 404, "not_found")


def test_a_code_is_created_with_its_variants(catalog, editor):
    response = editor.post("/api/v1/codes/", QUOTA, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["code"] == "QUOTA_EXCEEDED"
    assert set(variants_by_name(body)) == {"default", "short"}
    code = ErrorCode.objects.get(code="QUOTA_EXCEEDED")
    assert code.retry_after_seconds == 3600
    assert code.variants.get(name="short").weight == 50
    assert editor.get("/api/v1/codes/QUOTA_EXCEEDED/").json() == body


def test_a_code_without_variants_is_refused(catalog, editor):
    response = editor.post("/api/v1/codes/", {**QUOTA, "variants": []}, format="json")
    assert "variants" in assert_api_error(response, 400, "invalid")["fields"]

    response = editor.post("/api/v1/codes/", {k: v for k, v in QUOTA.items() if k != "variants"}, format="json")
    assert "variants" in assert_api_error(response, 400, "invalid")["fields"]


def test_put_makes_the_given_variants_the_complete_set(catalog, editor):
    editor.post("/api/v1/codes/", QUOTA, format="json")
    default_id = TemplateVariant.objects.get(error_code__code="QUOTA_EXCEEDED", name="default").pk
    replacement = {
        **QUOTA,
        "retryable": False,
        "variants": [
            {"name": "default", "message": "Your quota is used up.", "instruction": "Upgrade the plan."},
            {"name": "polite", "locale": "en", "message": "Sorry, no quota left.", "instruction": "Try tomorrow."},
        ],
    }

    response = editor.put("/api/v1/codes/QUOTA_EXCEEDED/", replacement, format="json")

    assert response.status_code == 200, response.content
    variants = variants_by_name(response.json())
    assert set(variants) == {"default", "polite"}
    assert variants["default"]["message"] == "Your quota is used up."
    assert response.json()["retryable"] is False
    # Matched by (locale, name): the default variant was updated in place, keeping its history.
    updated = TemplateVariant.objects.get(pk=default_id)
    assert updated.message == "Your quota is used up."
    assert updated.history.count() == 2


def test_put_without_variants_leaves_them_alone(catalog, editor):
    editor.post("/api/v1/codes/", QUOTA, format="json")
    fields = {k: v for k, v in QUOTA.items() if k != "variants"}

    response = editor.put("/api/v1/codes/QUOTA_EXCEEDED/", {**fields, "system": True}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["system"] is True
    assert set(variants_by_name(response.json())) == {"default", "short"}


def test_patch_updates_the_listed_variants_and_keeps_the_others(catalog, editor):
    editor.post("/api/v1/codes/", QUOTA, format="json")

    response = editor.patch(
        "/api/v1/codes/QUOTA_EXCEEDED/",
        {"variants": [{"name": "short", "weight": 0}, {"name": "new", "message": "New.", "instruction": "Go."}]},
        format="json",
    )

    assert response.status_code == 200, response.content
    variants = variants_by_name(response.json())
    assert set(variants) == {"default", "short", "new"}
    assert variants["short"]["weight"] == 0
    assert variants["short"]["message"] == "Quota used up."


def test_patch_of_a_new_variant_needs_its_texts(catalog, editor):
    editor.post("/api/v1/codes/", QUOTA, format="json")

    response = editor.patch("/api/v1/codes/QUOTA_EXCEEDED/", {"variants": [{"name": "new"}]}, format="json")

    fields = assert_api_error(response, 400, "invalid")["fields"]
    assert set(fields) == {"variants.0.message", "variants.0.instruction"}


def test_patch_changes_only_the_given_fields(catalog, editor):
    before = ErrorCode.objects.get(code="NOT_FOUND")

    response = editor.patch("/api/v1/codes/NOT_FOUND/", {"doc_url": "https://example.com/not-found"}, format="json")

    assert response.status_code == 200, response.content
    after = ErrorCode.objects.get(code="NOT_FOUND")
    assert after.doc_url == "https://example.com/not-found"
    assert (after.category, after.retryable, after.http_statuses) == (
        before.category,
        before.retryable,
        before.http_statuses,
    )
    assert after.variants.count() == before.variants.count()


def test_a_code_can_be_renamed(catalog, editor):
    editor.post("/api/v1/codes/", QUOTA, format="json")

    response = editor.patch("/api/v1/codes/QUOTA_EXCEEDED/", {"code": "QUOTA_USED_UP"}, format="json")

    assert response.status_code == 200
    assert editor.get("/api/v1/codes/QUOTA_USED_UP/").status_code == 200
    assert_api_error(editor.get("/api/v1/codes/QUOTA_EXCEEDED/"), 404, "not_found")


def test_a_duplicate_code_is_refused(catalog, editor):
    response = editor.post("/api/v1/codes/", {**QUOTA, "code": "NOT_FOUND"}, format="json")
    assert "code" in assert_api_error(response, 400, "invalid")["fields"]


def test_a_code_is_deleted_with_its_variants(catalog, editor):
    editor.post("/api/v1/codes/", QUOTA, format="json")

    assert editor.delete("/api/v1/codes/QUOTA_EXCEEDED/").status_code == 204

    assert not ErrorCode.objects.filter(code="QUOTA_EXCEEDED").exists()
    assert not TemplateVariant.objects.filter(error_code__code="QUOTA_EXCEEDED").exists()


def test_a_code_that_rules_point_to_cannot_be_deleted(catalog, editor):
    code = ClassificationRule.objects.first().error_code.code

    error = assert_api_error(editor.delete(f"/api/v1/codes/{code}/"), 409, "protected")

    assert "refer" in error["message"]
    assert ErrorCode.objects.filter(code=code).exists()


# --- Parameter hints --------------------------------------------------------------------------------------


def test_hints_are_created_read_updated_and_deleted(catalog, editor):
    created = editor.post(
        "/api/v1/hints/",
        {
            "tool": "book_flight",
            "parameter": "departure_date",
            "description": "the departure date",
            "parameter_type": "date",
            "example": "2026-12-24",
            "question": "When do you want to fly out of {tool_name}?",
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    url = f"/api/v1/hints/{created.json()['id']}/"

    assert editor.get("/api/v1/hints/", {"tool": "book_flight"}).json()["count"] == 1
    assert editor.patch(url, {"example": "2027-01-01"}, format="json").json()["example"] == "2027-01-01"
    assert ParameterHint.objects.get(tool="book_flight").description == "the departure date"
    assert editor.delete(url).status_code == 204
    assert not ParameterHint.objects.filter(tool="book_flight").exists()


def test_a_hint_for_a_secret_may_not_carry_a_question(catalog, editor):
    question = {"tool": "login", "parameter": "api_key", "question": "Question: What is your API key?"}
    fields = assert_api_error(editor.post("/api/v1/hints/", question, format="json"), 400, "invalid")["fields"]
    assert "holds a secret" in str(fields["question"])
    # Nor can a question be added to an existing hint for one.
    created = editor.post("/api/v1/hints/", {"tool": "login", "parameter": "api_key"}, format="json")
    assert created.status_code == 201, created.content
    url = f"/api/v1/hints/{created.json()['id']}/"
    assert_api_error(editor.patch(url, {"question": "Question: Your key?"}, format="json"), 400, "invalid")
    assert ParameterHint.objects.get(tool="login").question == ""


def test_a_hint_needs_identifier_names_and_a_valid_question(catalog, editor):
    response = editor.post(
        "/api/v1/hints/",
        {"tool": "book flight!", "parameter": "date", "question": "When? {x.__class__}"},
        format="json",
    )

    fields = assert_api_error(response, 400, "invalid")["fields"]
    assert set(fields) == {"tool", "question"}
    assert "attribute access" in fields["question"][0]


def test_a_second_hint_for_the_same_parameter_is_refused(catalog, editor):
    hint = {"tool": "book_flight", "parameter": "date"}
    assert editor.post("/api/v1/hints/", hint, format="json").status_code == 201

    assert_api_error(editor.post("/api/v1/hints/", hint, format="json"), 400, "invalid")


# --- Classification rules ---------------------------------------------------------------------------------


def test_rules_are_listed_in_the_order_they_are_tried(catalog, reader_client):
    positions = [r["position"] for r in reader_client.get("/api/v1/rules/").json()["results"]]

    assert positions == sorted(positions)
    assert len(positions) == ClassificationRule.objects.count()


def test_rules_are_created_updated_and_deleted(catalog, editor):
    position = max(ClassificationRule.objects.values_list("position", flat=True)) + 10
    created = editor.post(
        "/api/v1/rules/",
        {"position": position, "code": "RATE_LIMIT", "upstream": "billing", "status_min": 402, "status_max": 402},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["code"] == "RATE_LIMIT"
    url = f"/api/v1/rules/{created.json()['id']}/"

    updated = editor.patch(
        url, {"code": "CLIENT_ERROR", "note": "billing says 402 for exhausted credit"}, format="json"
    )

    assert updated.json()["code"] == "CLIENT_ERROR"
    assert ClassificationRule.objects.get(position=position).error_code.code == "CLIENT_ERROR"
    assert editor.delete(url).status_code == 204


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"code": "NO_SUCH_CODE", "status_min": 400}, "code"),
        # A name no code can have is refused before the database is asked (PostgreSQL: a 500 for NUL).
        ({"code": "NOT\x00FOUND", "status_min": 400}, "code"),
        ({"code": "not found", "status_min": 400}, "code"),
        ({"code": "NOT_FOUND"}, "non_field_errors"),
        ({"code": "NOT_FOUND", "status_min": 500, "status_max": 400}, "status_max"),
        ({"code": "NOT_FOUND", "status_min": 99}, "status_min"),
        ({"code": "NOT_FOUND", "exception": "requests.exceptions.Timeout"}, "exception"),
        ({"code": "NOT_FOUND", "transport": "carrier_pigeon"}, "transport"),
        ({"code": "NOT_FOUND", "kind": "UpstreamToolError"}, "kind"),
        ({"code": "NOT_FOUND", "kind": "tool_error", "pattern": "(?<=open ')/x"}, "pattern"),
        ({"code": "NOT_FOUND", "pattern": "x" * 501}, "pattern"),
    ],
)
def test_invalid_rules_are_refused(catalog, editor, rule, field):
    response = editor.post("/api/v1/rules/", {"position": 99_999, **rule}, format="json")

    assert field in assert_api_error(response, 400, "invalid")["fields"]


def test_a_pattern_re2_refuses_is_refused_with_the_reason(catalog, editor):
    response = editor.post(
        "/api/v1/rules/", {"position": 99_999, "code": "NOT_FOUND", "pattern": r"(a)\1"}, format="json"
    )

    messages = assert_api_error(response, 400, "invalid")["fields"]["pattern"]
    assert any("RE2 cannot use this pattern" in m and "back-references" in m for m in messages)
    assert not ClassificationRule.objects.filter(position=99_999).exists()


def test_a_rule_on_an_upstream_failures_kind_and_text_is_written_and_read_back(catalog, editor):
    rule = {"position": 99_999, "code": "NOT_FOUND", "upstream": "files", "kind": "tool_error", "pattern": "^ENOENT: "}
    created = editor.post("/api/v1/rules/", rule, format="json")

    assert created.status_code == 201, created.content
    assert {k: created.json()[k] for k in rule} == rule
    stored = ClassificationRule.objects.get(position=99_999)
    assert (stored.kind, stored.pattern) == ("tool_error", "^ENOENT: ")


def test_api_edits_are_recorded_in_history_with_the_token_user(catalog, writer_client, catalog_editor):
    writer_client.patch("/api/v1/codes/NOT_FOUND/", {"retryable": True}, format="json")

    latest = ErrorCode.objects.get(code="NOT_FOUND").history.order_by("-history_date").first()
    assert latest.retryable is True
    assert latest.history_user == catalog_editor


def test_a_codes_allocation_is_set_through_the_api_and_checked(catalog, editor):
    url = "/api/v1/codes/TIMEOUT/"
    assert_api_error(editor.patch(url, {"allocation": "sometimes"}, format="json"), 400, "invalid")
    changed = editor.patch(url, {"allocation": "adaptive", "allocation_frozen": True}, format="json")
    assert changed.status_code == 200, changed.content
    assert (changed.json()["allocation"], changed.json()["allocation_frozen"]) == ("adaptive", True)
    assert ErrorCode.objects.get(code="TIMEOUT").allocation == "adaptive"
