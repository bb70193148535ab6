"""Generic rules: rules that guess a code from common words ("not found", "permission denied" anywhere in the text)
for an upstream's failure no rule on a wording knows, marked so that what they answer still counts as unclassified
and stays in admin's inbox.

The default catalog puts them at 310-318, after every rule on a wording and before the fallbacks, which move from 309
(a failed tool) and 310 (a JSON-RPC error) to 319 and 320; the next start creates the generic rules where the
positions are free. A fallback an operator changed (another code, a condition, a note of their own), or a position an
operator's rule holds, is left alone; going back moves each fallback to its old position if that position is free
(the generic rule a start created at 310 keeps its place, and the JSON-RPC fallback then stays at 320). SQLite adds
and drops the column by rebuilding the table, which drops its triggers; they are installed again so that changes keep
raising the catalog revision.
"""

from __future__ import annotations

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

CODE = "UPSTREAM_TOOL_FAILED"
# Each shipped fallback: its kind, its note as shipped, its position before and after.
FALLBACKS = (
    (
        "tool_error",
        "gateway: an upstream tool returned isError that no rule above recognises; claims no cause",
        309,
        319,
    ),
    (
        "jsonrpc_error",
        "gateway: a JSON-RPC error no rule above knows, an upstream's -32603 among them; claims no cause",
        310,
        320,
    ),
)
_NO_CONDITION = {"exception": "", "pattern": "", "upstream": "", "tool": "", "transport": "", "status_min": None,
                 "status_max": None, "jsonrpc_code": None}  # fmt: skip
HELP = (
    "The rule guesses from common words rather than knowing a wording: the failures it answers still count as "
    "unclassified and stay in the inbox, so a rule that knows them can be written."
)


def _move(apps, *, back: bool) -> None:
    rules = apps.get_model("errcatalog", "ClassificationRule")
    # Going forward the tool fallback moves first and the JSON-RPC one second; back, the other way round, so that
    # neither waits on a position the other still holds.
    for kind, note, old, new in reversed(FALLBACKS) if back else FALLBACKS:
        source, target = (new, old) if back else (old, new)
        rule = rules.objects.filter(
            position=source, error_code__code=CODE, kind=kind, note__in=("", note), **_NO_CONDITION
        ).first()
        if rule is not None and not rules.objects.filter(position=target).exists():
            rule.position = target
            rule.save(update_fields=["position"])


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, "errcatalog_classificationrule"):
        schema_editor.execute(statement, params=None)


def forward(apps, schema_editor):
    _move(apps, back=False)


def backward(apps, schema_editor):
    _move(apps, back=True)


class Migration(migrations.Migration):
    dependencies = [("errcatalog", "0033_generic_rules_before_tool_fallback")]

    operations = [
        # Going back, this runs last: after the column is gone.
        migrations.RunPython(migrations.RunPython.noop, reinstall_triggers),
        migrations.AddField(
            model_name="classificationrule",
            name="generic",
            field=models.BooleanField(default=False, help_text=HELP),
        ),
        migrations.AddField(
            model_name="historicalclassificationrule",
            name="generic",
            field=models.BooleanField(default=False, help_text=HELP),
        ),
        migrations.RunPython(reinstall_triggers, migrations.RunPython.noop),
        migrations.RunPython(forward, backward),
    ]
