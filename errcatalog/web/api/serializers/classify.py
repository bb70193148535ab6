"""Classification's request and answer: a raw failure's facts, and the catalog code the rules choose for them."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from errcatalog.render.classify import FailureFacts, transport_for
from errcatalog.render.core import NETWORK_FAILURES
from errcatalog.render.patterns import TEXT_MAX_CHARS
from errcatalog.safety import redacted_for_people
from errcatalog.vocabulary import TOOL_NAME_PATTERN, UPSTREAM_FAILURE_KINDS
from errcatalog.web.api.serializers.request_fields import MAX_LIST_ITEMS, KnownFieldsOnly, TextWithoutNul, value_range

# Python class names, as classification rules and ``classify/`` compare them (no module path).
_CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": f"^{_CLASS_NAME.pattern}$"},
            {
                "type": "array",
                "items": {"type": "string", "pattern": f"^{_CLASS_NAME.pattern}$"},
                "maxItems": MAX_LIST_ITEMS,
            },
        ],
        "description": "An exception class name, or the class and its bases, most specific first.",
    }
)
class ExceptionNamesField(serializers.Field):
    default_error_messages = {
        "invalid": "Give a class name or a list of class names, most specific first.",
        "name": "Give class names without their module, e.g. TimeoutError.",
        "too_many": f"Give at most {MAX_LIST_ITEMS} class names.",
    }

    def to_internal_value(self, data: Any) -> tuple[str, ...]:
        names = [data] if isinstance(data, str) else data
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.fail("invalid")
        if len(names) > MAX_LIST_ITEMS:
            self.fail("too_many")
        if not all(_CLASS_NAME.fullmatch(n) for n in names):
            self.fail("name")
        return tuple(names)

    def to_representation(self, value: tuple[str, ...]) -> list[str]:
        return list(value)


# The Python MCP SDK's wrapper around what a tool raised ("Error executing tool read_file: "). The gateway reads an
# upstream tool's failure text without it (``mcpserver.gateway.failures.UpstreamToolError``), so a text pasted from
# a log is matched as the gateway would match it.
_SDK_TOOL_WRAPPER = re.compile(f"^Error executing tool {TOOL_NAME_PATTERN}: ")


class ClassifyRequestSerializer(KnownFieldsOnly):
    """The facts of a raw failure, and for an upstream's failure its kind and text, to try the rules with.

    ``text`` is read as the gateway reads an upstream's failure text: credentials redacted
    (``errcatalog.safety.redacted_for_people``), then matched by the rules' patterns. It only chooses the code: no
    answer, error message included, repeats it.
    """

    exception = ExceptionNamesField(required=False, default=tuple)
    status_code = serializers.IntegerField(required=False, allow_null=True, default=None, **value_range("http_status"))
    jsonrpc_code = serializers.IntegerField(
        required=False, allow_null=True, default=None, **value_range("jsonrpc_code")
    )
    upstream = TextWithoutNul(max_length=64, required=False, allow_blank=True, default="")
    tool = TextWithoutNul(
        max_length=128, required=False, allow_blank=True, default="", help_text="An upstream's tool, as /mcp serves it."
    )
    transport = serializers.ChoiceField(
        choices=sorted(NETWORK_FAILURES),
        required=False,
        allow_blank=True,
        default="",
        help_text="Implied by timeout and connection exception names when not given.",
    )
    kind = serializers.ChoiceField(
        choices=list(UPSTREAM_FAILURE_KINDS),
        required=False,
        allow_blank=True,
        default="",
        # DRF's own message quotes the value sent; ours names only the choices.
        error_messages={"invalid_choice": f"Use one of {', '.join(UPSTREAM_FAILURE_KINDS)}."},
        help_text="How an upstream MCP server's call failed: "
        + "; ".join(f"{name} ({words})" for name, words in UPSTREAM_FAILURE_KINDS.items())
        + ". Empty for a failure of our own tools.",
    )
    text = TextWithoutNul(
        max_length=TEXT_MAX_CHARS,
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text=f"The upstream's own failure text (at most {TEXT_MAX_CHARS} characters), for rules with a pattern. "
        "Credentials are redacted before matching; the text chooses the code and is never sent back.",
    )

    def facts(self) -> FailureFacts:
        data = self.validated_data
        text = redacted_for_people(data["text"], limit=TEXT_MAX_CHARS)
        if data["kind"] == "tool_error":
            text = _SDK_TOOL_WRAPPER.sub("", text, count=1)
        return FailureFacts(
            exception_types=data["exception"],
            status_code=data["status_code"],
            jsonrpc_code=data["jsonrpc_code"],
            upstream=data["upstream"],
            tool=data["tool"],
            transport=data["transport"] or transport_for(data["exception"]),
            kind=data["kind"],
            text=text,
        )


class ClassifyResponseSerializer(serializers.Serializer):
    code = serializers.CharField()
    category = serializers.CharField()
    kind = serializers.CharField()
    retryable = serializers.BooleanField()
    system = serializers.BooleanField()
    classified = serializers.BooleanField(
        help_text="A specific rule chose the code; false for a generic rule's guess from common words, a fallback's "
        "code that claims no cause, or no rule at all. An upstream's failure that is not classified goes to the inbox."
    )
