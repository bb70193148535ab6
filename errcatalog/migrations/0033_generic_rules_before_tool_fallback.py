"""Room for the rules on an upstream's failure in common words ("x not found", "Invalid x. Must be one of: …"), after
every rule on a specific wording and before the fallbacks.

The shipped fallback for a failed upstream tool (UPSTREAM_TOOL_FAILED on kind tool_error, position 300) moves to
309, beside the fallback for a JSON-RPC error (310): the default catalog puts its rules on common words at 306 and
307, which the next start creates where the positions are free, and admin's inbox places a rule made from a group
just before the fallback the group fell to, so such a rule still comes after every shipped rule. A fallback an
operator changed (another code, a condition, a note of their own), or a position an operator's rule holds, is left
alone; going back moves the fallback to 300 if that position is free.
"""

from __future__ import annotations

from django.db import migrations

OLD, NEW = 300, 309
CODE, KIND = "UPSTREAM_TOOL_FAILED", "tool_error"
SHIPPED_NOTE = "gateway: an upstream tool returned isError that no rule above recognises; claims no cause"
_NO_CONDITION = {"exception": "", "pattern": "", "upstream": "", "tool": "", "transport": "", "status_min": None,
                 "status_max": None, "jsonrpc_code": None}  # fmt: skip


def _move(apps, old: int, new: int) -> None:
    rules = apps.get_model("errcatalog", "ClassificationRule")
    rule = rules.objects.filter(
        position=old, error_code__code=CODE, kind=KIND, note__in=("", SHIPPED_NOTE), **_NO_CONDITION
    ).first()
    if rule is not None and not rules.objects.filter(position=new).exists():
        rule.position = new
        rule.save(update_fields=["position"])


def forward(apps, schema_editor):
    _move(apps, OLD, NEW)


def backward(apps, schema_editor):
    _move(apps, NEW, OLD)


class Migration(migrations.Migration):
    dependencies = [("errcatalog", "0032_failure_groups_withheld")]

    operations = [migrations.RunPython(forward, backward)]
