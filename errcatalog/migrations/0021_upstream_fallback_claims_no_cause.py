"""The upstream fallbacks of the default catalog become UPSTREAM_TOOL_FAILED, which claims no cause.

An upstream tool's failure that no rule recognises was answered with EXECUTION_FAILURE, whose text tells the model the
arguments were fine, the opposite of the truth for most failures real servers report (a bad value, a missing file).
Where the shipped fallback rules (positions 300 and 310, on the kinds tool_error and jsonrpc_error, with no other
condition) still name EXECUTION_FAILURE, they now name UPSTREAM_TOOL_FAILED; the code is created first, with the
default catalog's wording copied here so that this migration keeps doing what it did if the catalog file changes.
Rules an operator changed are left alone. ``catalog_load_defaults`` adds the new rules on failure texts after it.
Going back points the two rules at EXECUTION_FAILURE again and keeps the code.
"""

from __future__ import annotations

from django.db import migrations

NEW = "UPSTREAM_TOOL_FAILED"
OLD = "EXECUTION_FAILURE"
FALLBACKS = {300: "tool_error", 310: "jsonrpc_error"}
CODE = {
    "category": "tool",
    "kind": "error",
    "retryable": False,
    "retry_after_seconds": None,
    "http_statuses": [],
    "jsonrpc_code": -32603,
    "system": True,
    "doc_url": "",
    "explanation": (
        "An upstream MCP server behind the gateway reported a failure that no rule recognises, so nothing is "
        "known about why: most failures real servers report are the caller's input (a bad value, a missing "
        "file, a path outside the allowed folders), so the model is told to check its arguments and not to "
        "repeat the identical call, never that the arguments were fine. It counts as a system failure, logged"
        " as an error and captured in Sentry, because it is what the rules do not yet cover: it is the "
        "operator's to look at, and a rule with a pattern for its text gives it a specific code (a caller-"
        "input or not-found code is then a warning, not an event)."
    ),
    "active": True,
}
VARIANT = {
    "name": "default",
    "locale": "",
    "weight": 100,
    "header": "Error",
    "message": "The tool {tool_name} reported a failure.",
    "cause": (
        "The tool did not say why in words this server recognises; the arguments, the data they name or the "
        "service behind the tool may be at fault."
    ),
    "instruction": (
        "Check the arguments against the tool's description and input schema and correct any that do not fit."
        " Do not repeat the identical call; if nothing needs correcting, tell the user the operation failed."
    ),
    "question": "",
    "active": True,
}


def _shipped_fallbacks(rules, code: str):
    for position, kind in FALLBACKS.items():
        yield from rules.objects.filter(
            position=position, kind=kind, error_code__code=code, exception="", pattern="", upstream="", tool="",
            transport="", jsonrpc_code=None, status_min=None, status_max=None,
        )  # fmt: skip


def forward(apps, schema_editor):
    codes = apps.get_model("errcatalog", "ErrorCode")
    rules = apps.get_model("errcatalog", "ClassificationRule")
    todo = list(_shipped_fallbacks(rules, OLD))
    if not todo:
        return
    new, created = codes.objects.get_or_create(code=NEW, defaults=CODE)
    if created:
        apps.get_model("errcatalog", "TemplateVariant").objects.create(error_code=new, **VARIANT)
    for rule in todo:
        rule.error_code = new
        rule.save(update_fields=["error_code"])


def backward(apps, schema_editor):
    codes = apps.get_model("errcatalog", "ErrorCode")
    rules = apps.get_model("errcatalog", "ClassificationRule")
    old = codes.objects.filter(code=OLD).first()
    if old is None:
        return
    for rule in _shipped_fallbacks(rules, NEW):
        rule.error_code = old
        rule.save(update_fields=["error_code"])


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0020_rule_kind_and_pattern"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
