"""An upstream's own failure text is read before its bare JSON-RPC code, and its -32603 is its failure, not ours.

Many servers report every failure as a JSON-RPC -32603 ("internal error") with the reason in its message: a misspelt
SQL keyword, a missing table, a negative expiry. The shipped rule at position 260 answered all of them with
INTERNAL_ERROR ("a fault in the server, not in the request … repeating is unlikely to help"), before any rule on the
text could see them, and counted them as classified. Where the shipped rules are still as shipped:

- the rule at 260 (-32603 → INTERNAL_ERROR) is deleted: such a failure falls to the JSON-RPC fallback
  (UPSTREAM_TOOL_FAILED, which claims no cause and goes to admin's inbox) unless a rule on its text knows it;
- the rules on a bare JSON-RPC code (220, 230, 240, 250, 270) move after the rules on failure texts (301-305);
- the rules on failure texts (291-297) apply to a JSON-RPC error's message as to a tool's error result (their kind
  condition, tool_error, is cleared);
- the rule for an answer that is not MCP (320) moves before them (104): such an answer's text is our parser's.

A rule an operator changed, or a position an operator's rule holds, is left alone. Going back undoes each step that
applies, and recreates the rule at 260 if its position is free.
"""

from __future__ import annotations

from django.db import migrations

# Shipped rule on a bare JSON-RPC code: (old position, new position, code, JSON-RPC code).
MOVED = (
    (220, 301, "PARSE_ERROR", -32700),
    (230, 302, "INVALID_REQUEST", -32600),
    (240, 303, "METHOD_NOT_FOUND", -32601),
    (250, 304, "INVALID_PARAMS", -32602),
    (270, 305, "RESOURCE_NOT_FOUND", -32002),
)
TEXT_RULES = {291: "AUTHENTICATION_ERROR", 292: "RATE_LIMIT", 293: "PERMISSION_DENIED", 294: "NETWORK_ERROR",
              295: "INVALID_PARAMETER", 296: "INVALID_PARAMETER", 297: "NOT_FOUND"}  # fmt: skip
MALFORMED = (320, 104, "EXECUTION_FAILURE")
INTERNAL = (260, "INTERNAL_ERROR", -32603)
_NO_CONDITION = {"exception": "", "pattern": "", "upstream": "", "tool": "", "transport": "", "status_min": None,
                 "status_max": None}  # fmt: skip


def _shipped(rules, position: int, code: str, **conditions):
    fields = {**_NO_CONDITION, "kind": "", "jsonrpc_code": None, **conditions}
    return rules.objects.filter(position=position, error_code__code=code, **fields).first()


def _move(rules, rule, position: int) -> None:
    if rule is not None and not rules.objects.filter(position=position).exists():
        rule.position = position
        rule.save(update_fields=["position"])


def forward(apps, schema_editor):
    rules = apps.get_model("errcatalog", "ClassificationRule")
    old, code, jsonrpc = INTERNAL
    # Shipped without a note: one an operator wrote makes the rule theirs.
    internal = _shipped(rules, old, code, jsonrpc_code=jsonrpc, note="")
    if internal is not None:
        internal.delete()
    for old, new, code, jsonrpc in MOVED:
        _move(rules, _shipped(rules, old, code, jsonrpc_code=jsonrpc, note=""), new)
    old, new, code = MALFORMED
    _move(rules, _shipped(rules, old, code, kind="malformed"), new)
    unconditioned = {name: value for name, value in _NO_CONDITION.items() if name != "pattern"}
    for position, code in TEXT_RULES.items():
        rules.objects.filter(
            position=position, error_code__code=code, kind="tool_error", jsonrpc_code=None, **unconditioned
        ).exclude(pattern="").update(kind="")


def backward(apps, schema_editor):
    rules = apps.get_model("errcatalog", "ClassificationRule")
    codes = apps.get_model("errcatalog", "ErrorCode")
    for position, code in TEXT_RULES.items():
        rules.objects.filter(position=position, error_code__code=code, kind="", jsonrpc_code=None).exclude(
            pattern=""
        ).update(kind="tool_error")
    old, new, code = MALFORMED
    _move(rules, _shipped(rules, new, code, kind="malformed"), old)
    for old, new, code, jsonrpc in MOVED:
        _move(rules, _shipped(rules, new, code, jsonrpc_code=jsonrpc), old)
    old, code, jsonrpc = INTERNAL
    internal = codes.objects.filter(code=code).first()
    if internal is not None and not rules.objects.filter(position=old).exists():
        rules.objects.create(position=old, error_code=internal, jsonrpc_code=jsonrpc)


class Migration(migrations.Migration):
    dependencies = [("errcatalog", "0028_client_token_oauth_grants")]

    operations = [migrations.RunPython(forward, backward)]
