"""Request and response shapes of the REST API.

The catalog serializers check the shape of a request (types, lengths, choices, the nesting of variants); the
catalog's own rules are checked once, by ``errcatalog.catalog.services`` (through the models' ``clean()``), for
the REST API as for the admin and import, and a row that breaks one is answered as a 400 in the same shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from errcatalog.catalog.models import (
    INTEGER_RANGES,
    RULE_CONDITIONS,
    ClassificationRule,
    ErrorCode,
    Header,
    ParameterHint,
    Problems,
    TemplateVariant,
    classification_rule_problems,
    error_code_problems,
    parameter_hint_problems,
)
from errcatalog.catalog.previews import FACES, FaceOptions, variant_exists
from errcatalog.render import FORMATS, PROVIDERS, Failure, ParameterFault
from errcatalog.render.classify import FailureFacts, transport_for
from errcatalog.render.core import NETWORK_FAILURES
from errcatalog.render.locale import choose_locale
from errcatalog.render.patterns import PATTERN_MAX_CHARS, TEXT_MAX_CHARS
from errcatalog.safety import redacted_for_people, template_errors
from errcatalog.vocabulary import CODE_PATTERN, TOOL_NAME_PATTERN, UPSTREAM_FAILURE_KINDS, is_json_number

# Python class names, as classification rules and ``classify/`` compare them (no module path).
_CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_PROTOCOL_VERSION = r"^\d{4}-\d{2}-\d{2}$"
# A BCP 47 language tag as catalogs use them (de, pt-BR, zh-Hant-TW): letters, then subtags of letters and digits.
_LANGUAGE_TAG = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"
# The question protocol asks one question per missing parameter; more than this is not a preview anyone needs.
_MAX_LIST_ITEMS = 20


def validate_template(value: str) -> None:
    problems = template_errors(value)
    if problems:
        raise serializers.ValidationError(problems)


def _range(name: str) -> dict[str, int]:
    """An integer field's bounds from the catalog's one table of them (``errcatalog.catalog.models``)."""
    low, high = INTEGER_RANGES[name]
    return {"min_value": low, "max_value": high}


def _blank_to_none(value: str | None) -> str | None:
    return value or None


# --- Request fields -----------------------------------------------------------------------------------------

# Unknown names listed in one answer, each cut to this length: enough to spot a typo, not an echo of the body.
_MAX_UNKNOWN_LISTED = 20
_UNKNOWN_NAME_CHARS = 64


class KnownFieldsOnly(serializers.Serializer):
    """Refuses a request field the serializer does not have, naming it, rather than dropping it unread, and a
    number where a string field is.

    ``{"explantion": "x"}`` used to answer 200 and change nothing. Read-only fields (``id``, ``updated_at``) are
    known: a row read and sent back as it was is accepted, and they are ignored as documented.
    """

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = [name for name in data if name not in self.fields]
            message = "Unknown field; see the API schema for this request's fields."
            errors = {str(name)[:_UNKNOWN_NAME_CHARS]: [message] for name in unknown[:_MAX_UNKNOWN_LISTED]}
            # DRF's CharField turns a number into its text; the schema says string, so a number is refused.
            for name, value in data.items():
                field = self.fields.get(name)
                if isinstance(field, serializers.CharField) and not isinstance(value, str) and value is not None:
                    errors[name] = ["Give a string."]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


# --- Catalog rows -----------------------------------------------------------------------------------------


class CatalogRowSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    """A catalog row's serializer that also reports the catalog's rules (``errcatalog.catalog.models``).

    The rules are checked once, by the service every writer calls; they are also run here, beside the request's
    shape, so that one answer lists every problem of a request, as the admin's forms and a catalog file do. A
    field that already failed its own check is not judged again.
    """

    @staticmethod
    def row_problems(values: Mapping[str, Any]) -> Problems:
        return {}

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, Any] = {}
        try:
            values = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, Mapping):
                raise
            errors = dict(exc.detail)
            values = {k: v for k, v in data.items() if k not in errors} if isinstance(data, Mapping) else {}
        # A PATCH is judged as the row it would make: the saved values with the request's over them.
        row = self.instance
        saved = {f.name: getattr(row, f.name) for f in row._meta.concrete_fields} if row is not None else {}
        for name, texts in self.row_problems({**saved, **values}).items():
            key = name or api_settings.NON_FIELD_ERRORS_KEY
            if key not in errors:
                errors[key] = texts
        if errors:
            raise serializers.ValidationError(errors)
        return values


class TemplateVariantSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    class Meta:
        model = TemplateVariant
        fields = [
            "name",
            "locale",
            "weight",
            "header",
            "message",
            "cause",
            "instruction",
            "question",
            "active",
            "updated_at",
        ]
        read_only_fields = ["updated_at"]
        # The key is required, as in catalog files; it may be empty only to reproduce a one-line toolError:v1 message.
        extra_kwargs = {"weight": _range("weight"), "instruction": {"required": True, "allow_blank": True}}


class ErrorCodeSerializer(CatalogRowSerializer):
    """A code with its variants.

    Writing ``variants`` matches them by (locale, name): PUT makes the list the complete set (variants left out
    are deleted), PATCH updates and adds the listed ones and keeps the others. Without ``variants`` they are
    left alone.
    """

    http_statuses = serializers.ListField(
        child=serializers.IntegerField(**_range("http_status")), required=False, max_length=_MAX_LIST_ITEMS
    )
    optional_parameters = serializers.ListField(
        child=serializers.RegexField(f"^{TOOL_NAME_PATTERN}$", max_length=128),
        required=False,
        max_length=_MAX_LIST_ITEMS,
        help_text="The question protocol's data.optional_parameters for missing input.",
    )
    variants = TemplateVariantSerializer(many=True, required=False, allow_empty=False)
    row_problems = staticmethod(error_code_problems)

    class Meta:
        model = ErrorCode
        fields = [
            "code",
            "category",
            "kind",
            "retryable",
            "retry_after_seconds",
            "http_statuses",
            "jsonrpc_code",
            "system",
            "doc_url",
            "explanation",
            "setup_url",
            "action_required",
            "optional_parameters",
            "guidance",
            "active",
            "allocation",
            "allocation_frozen",
            "updated_at",
            "variants",
        ]
        read_only_fields = ["updated_at"]
        extra_kwargs = {"retry_after_seconds": _range("retry_after_seconds"), "jsonrpc_code": _range("jsonrpc_code")}

    def validate_variants(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: set[tuple[str, str]] = set()
        errors: list[dict[str, list[str]]] = []
        for variant in value:
            key = (variant.get("locale", ""), variant.get("name", "default"))
            errors.append({"name": ["Another variant has this name and locale."]} if key in seen else {})
            seen.add(key)
        if any(errors):
            raise serializers.ValidationError(errors)
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        variants = attrs.get("variants")
        if self.instance is None and not variants:
            raise serializers.ValidationError({"variants": ["A code needs at least one variant."]})
        if self.instance is not None and variants and self.partial:
            # PATCH merges into existing variants; one that does not exist yet needs its required texts.
            existing = {(v.locale, v.name) for v in self.instance.variants.all()}
            errors = []
            for variant in variants:
                missing = {}
                if (variant.get("locale", ""), variant.get("name", "default")) not in existing:
                    missing = {f: ["This field is required."] for f in ("message", "instruction") if f not in variant}
                errors.append(missing)
            if any(errors):
                raise serializers.ValidationError({"variants": errors})
        return attrs


class ParameterHintSerializer(CatalogRowSerializer):
    tool = serializers.CharField(max_length=128)
    parameter = serializers.CharField(max_length=128)
    row_problems = staticmethod(parameter_hint_problems)

    class Meta:
        model = ParameterHint
        fields = ["id", "tool", "parameter", "description", "parameter_type", "example", "question", "updated_at"]
        read_only_fields = ["id", "updated_at"]


class CodeByNameField(serializers.SlugRelatedField):
    """A catalog code by its name. A name no code can have is refused before the database is asked: PostgreSQL
    refuses text with a NUL character in a query (a 500), and no other such name can match."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and not re.fullmatch(CODE_PATTERN, data):
            self.fail("does_not_exist", slug_name=self.slug_field, value=data.replace("\x00", "\\x00")[:64])
        return super().to_internal_value(data)


class ClassificationRuleSerializer(CatalogRowSerializer):
    code = CodeByNameField(
        source="error_code", slug_field="code", queryset=ErrorCode.objects.all(), help_text="The code to assign."
    )
    upstream = serializers.CharField(max_length=64, required=False, allow_blank=True)
    tool = serializers.CharField(max_length=128, required=False, allow_blank=True)
    # A pattern's spaces are part of it ("^ENOENT: ").
    pattern = serializers.CharField(
        max_length=PATTERN_MAX_CHARS, required=False, allow_blank=True, trim_whitespace=False
    )
    row_problems = staticmethod(classification_rule_problems)

    class Meta:
        model = ClassificationRule
        fields = ["id", "position", "code", *RULE_CONDITIONS, "says", "generic", "active", "note"]
        read_only_fields = ["id"]
        extra_kwargs = {name: _range(name) for name in ("position", "status_min", "status_max", "jsonrpc_code")}


# --- Render preview ---------------------------------------------------------------------------------------


# JSON numbers beyond a double (1e400 parses as infinity, a 309-digit integer as an int no float holds) are no value
# a message can show.
NUMBER_TOO_LARGE = "Give a number a double can hold: finite, within ±1.7976931348623157e308."


@extend_schema_field(OpenApiTypes.NUMBER)
class NumberField(serializers.Field):
    """An int or a float, kept as given (JSON has one number type, Python two)."""

    default_error_messages = {"invalid": "Give a number.", "too_large": NUMBER_TOO_LARGE}

    def to_internal_value(self, data: Any) -> int | float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if not is_json_number(data):
            self.fail("too_large")
        return data

    def to_representation(self, value: int | float) -> int | float:
        return value


@extend_schema_field({"oneOf": [{"type": "number"}, {"type": "boolean"}], "nullable": True})
class ReceivedValueField(serializers.Field):
    """A value the caller of a tool sent, when it is a number or a boolean; text is refused."""

    default_error_messages = {
        "invalid": "Give a number or a boolean; text values are never shown.",
        "too_large": NUMBER_TOO_LARGE,
    }

    def to_internal_value(self, data: Any) -> int | float | bool:
        if not isinstance(data, int | float | bool):
            self.fail("invalid")
        if not isinstance(data, bool) and not is_json_number(data):
            self.fail("too_large")
        return data

    def to_representation(self, value: int | float | bool) -> int | float | bool:
        return value


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string"}], "nullable": True})
class JsonRpcIdField(serializers.Field):
    default_error_messages = {"invalid": "Give a JSON-RPC id: a string or an integer."}

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        return data

    def to_representation(self, value: int | str) -> int | str:
        return value


class ParameterFaultSerializer(KnownFieldsOnly):
    name = serializers.CharField(max_length=128, help_text="The parameter's name in the tool's input schema.")
    problem = serializers.ChoiceField(choices=["missing", "invalid"], default="missing")
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    type = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    expected_format = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    minimum = NumberField(required=False, allow_null=True, default=None)
    maximum = NumberField(required=False, allow_null=True, default=None)
    received = ReceivedValueField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The number or boolean the caller sent (shown as in 'got 30'); text is refused, never shown.",
    )


class TemplateDraftSerializer(KnownFieldsOnly):
    """Unsaved variant text to preview; each given field replaces the variant's."""

    message = serializers.CharField(required=False, allow_blank=True, validators=[validate_template])
    cause = serializers.CharField(required=False, allow_blank=True, validators=[validate_template])
    instruction = serializers.CharField(required=False, allow_blank=True, validators=[validate_template])
    question = serializers.CharField(required=False, allow_blank=True, validators=[validate_template])
    header = serializers.ChoiceField(choices=Header.choices, required=False)


def _default_format() -> str:
    return settings.ERRCATALOG["DEFAULT_FORMAT"]


def _default_legacy_codes() -> bool:
    return settings.ERRCATALOG["LEGACY_JSONRPC_CODES"]


class RenderRequestSerializer(KnownFieldsOnly):
    """A failure to render and the face to render it in.

    Tool, parameter, service and alternative names are shown only when they are names of the tool-name
    vocabulary; anything else renders as [REDACTED], as it would on the MCP endpoint. A parameter's description,
    type and expected format, and the partial result, pass the renderer's screen for tool metadata
    (``errcatalog.safety.safe_schema_text`` / ``safe_partial_result``), the same as a tool's schema on the MCP path.
    """

    code = serializers.CharField(max_length=64)
    tool_name = serializers.CharField(max_length=128, required=False, allow_blank=True, allow_null=True, default=None)
    parameters = ParameterFaultSerializer(many=True, required=False, default=list, max_length=_MAX_LIST_ITEMS)
    status_code = serializers.IntegerField(required=False, allow_null=True, default=None, **_range("http_status"))
    event_id = serializers.CharField(max_length=64, required=False, allow_blank=True, allow_null=True, default=None)
    retry_after = serializers.IntegerField(min_value=0, max_value=86400, required=False, allow_null=True, default=None)
    alternatives = serializers.ListField(
        child=serializers.CharField(max_length=128), required=False, default=list, max_length=_MAX_LIST_ITEMS
    )
    network_failure = serializers.ChoiceField(
        choices=sorted(NETWORK_FAILURES), required=False, allow_null=True, default=None
    )
    service = serializers.CharField(max_length=64, required=False, allow_blank=True, allow_null=True, default=None)
    partial_result = serializers.JSONField(required=False, allow_null=True, default=None)
    optional_parameters = serializers.ListField(
        child=serializers.CharField(max_length=128),
        required=False,
        default=list,
        max_length=_MAX_LIST_ITEMS,
        help_text="The tool's optional parameters, for a question's data when the code's catalog entry sets none.",
    )
    guidance = serializers.CharField(
        max_length=1000,
        required=False,
        allow_blank=True,
        default="",
        help_text="One sentence of the tool's description, for a question's data when the code's catalog entry "
        "sets none and the tool has optional parameters; shown only if it reads as schema text.",
    )
    variant = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
    locale = serializers.RegexField(
        _LANGUAGE_TAG,
        max_length=16,
        required=False,
        allow_blank=True,
        default="",
        error_messages={"invalid": "Enter a language tag such as de or de-CH."},
        help_text="A language tag such as de or de-CH: the best catalog locale for it is served (de-CH falls back to "
        "de), else the catalog default.",
    )
    draft = TemplateDraftSerializer(required=False, allow_null=True, default=None)
    face = serializers.ChoiceField(choices=FACES, default="tool_result")
    format = serializers.ChoiceField(choices=FORMATS, default=_default_format, help_text="For face=tool_result.")
    provider = serializers.ChoiceField(choices=PROVIDERS, required=False, help_text="Required for face=provider.")
    call_id = serializers.CharField(max_length=128, required=False, allow_blank=True, default="")
    request_id = JsonRpcIdField(required=False, allow_null=True, default=None, help_text="For face=jsonrpc.")
    protocol_version = serializers.RegexField(
        _PROTOCOL_VERSION, required=False, allow_blank=True, default="", help_text="MCP protocol, e.g. 2025-11-25."
    )
    legacy_codes = serializers.BooleanField(
        default=_default_legacy_codes, help_text="FastMCP's legacy -32001/-32000 codes on face=jsonrpc."
    )

    def validate_code(self, value: str) -> str:
        if value not in self.context["snapshot"].codes:
            raise serializers.ValidationError("The catalog has no code of this name.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["face"] == "provider" and not attrs.get("provider"):
            raise serializers.ValidationError({"provider": ["Choose openai, anthropic or gemini for face=provider."]})
        variant = attrs["variant"]
        snapshot = self.context["snapshot"]
        if variant and not attrs["draft"] and not variant_exists(snapshot, attrs["code"], variant, attrs["locale"]):
            raise serializers.ValidationError({"variant": ["This code has no variant of this name."]})
        if attrs["locale"] and not variant and not attrs["draft"]:
            # A language tag asks for the best catalog locale, as an Accept-Language header does on MCP (de-CH
            # falls back to de); a preview of a named variant or a draft keeps the exact locale it names.
            attrs["locale"] = choose_locale(snapshot.codes[attrs["code"]].locales, (attrs["locale"].lower(),))
        return attrs

    def failure(self) -> Failure:
        data = self.validated_data
        return Failure(
            code=data["code"],
            tool_name=_blank_to_none(data["tool_name"]),
            parameters=tuple(ParameterFault(**p) for p in data["parameters"]),
            status_code=data["status_code"],
            event_id=_blank_to_none(data["event_id"]),
            retry_after=data["retry_after"],
            alternatives=tuple(data["alternatives"]),
            network_failure=data["network_failure"],
            service=_blank_to_none(data["service"]),
            partial_result=data["partial_result"],
            optional_parameters=tuple(data["optional_parameters"]),
            guidance=data["guidance"],
        )

    def face_options(self) -> FaceOptions:
        data = self.validated_data
        return FaceOptions(
            format=data["format"],
            provider=data.get("provider", PROVIDERS[0]),
            call_id=data["call_id"],
            request_id=data["request_id"],
            protocol_version=data["protocol_version"],
            legacy_codes=data["legacy_codes"],
        )


class RenderResponseSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="The code rendered.")
    variant = serializers.CharField(help_text="The variant whose wording was used.")
    locale = serializers.CharField(help_text="The locale of that variant; empty for the catalog default.")
    interactive = serializers.BooleanField(help_text="Rendered as a question.")
    output = serializers.JSONField(help_text="The face: an object, or a string for face=markdown.")


# --- Classification ---------------------------------------------------------------------------------------


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": f"^{_CLASS_NAME.pattern}$"},
            {
                "type": "array",
                "items": {"type": "string", "pattern": f"^{_CLASS_NAME.pattern}$"},
                "maxItems": _MAX_LIST_ITEMS,
            },
        ],
        "description": "An exception class name, or the class and its bases, most specific first.",
    }
)
class ExceptionNamesField(serializers.Field):
    default_error_messages = {
        "invalid": "Give a class name or a list of class names, most specific first.",
        "name": "Give class names without their module, e.g. TimeoutError.",
        "too_many": f"Give at most {_MAX_LIST_ITEMS} class names.",
    }

    def to_internal_value(self, data: Any) -> tuple[str, ...]:
        names = [data] if isinstance(data, str) else data
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.fail("invalid")
        if len(names) > _MAX_LIST_ITEMS:
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
    status_code = serializers.IntegerField(required=False, allow_null=True, default=None, **_range("http_status"))
    jsonrpc_code = serializers.IntegerField(required=False, allow_null=True, default=None, **_range("jsonrpc_code"))
    upstream = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    tool = serializers.CharField(
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
    text = serializers.CharField(
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


# --- Errors -----------------------------------------------------------------------------------------------


class ApiErrorBodySerializer(serializers.Serializer):
    status = serializers.IntegerField()
    code = serializers.CharField(help_text="Machine-readable: invalid, not_authenticated, permission_denied, …")
    message = serializers.CharField()
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text='Validation errors by dotted field path, e.g. "variants.0.message".',
    )


class ApiErrorSerializer(serializers.Serializer):
    error = ApiErrorBodySerializer()


# --- Metrics and outcomes ---------------------------------------------------------------------------------


def _rate(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=f"{help_text} Null when the denominator is 0.")


class QueryChoiceField(serializers.ChoiceField):
    """A choice in a query string, where a blank value (``window=``) is a value to refuse, not an absent one.

    DRF reads a blank form or query value of an optional field as absent and fills in the default; the schema's
    enum has no blank, so the API refuses one rather than accept what its document says is invalid.
    """

    def get_value(self, dictionary: Mapping[str, Any]) -> Any:
        return dictionary.get(self.field_name, empty)


class QueryTextField(serializers.RegexField):
    """A text filter of a query string: anything but NUL (which no stored value holds, and PostgreSQL cannot compare),
    as its schema says (a ``pattern``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(r"^[^\x00]*$", error_messages={"invalid": "Null characters are not allowed."}, **kwargs)
        # The pattern says it once; CharField's own NUL check would say it again.
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]


class MetricsQuerySerializer(serializers.Serializer):
    """The query string of ``GET /api/v1/metrics/``: a window and optional filters, each an exact match."""

    window = QueryChoiceField(
        choices=["1h", "24h", "7d", "30d"],
        required=False,
        default="24h",
        # DRF's own message quotes the value sent; ours names only the choices.
        error_messages={"invalid_choice": "Use one of 1h, 24h, 7d, 30d."},
    )
    tool = QueryTextField(max_length=128, required=False, allow_blank=True, default="")
    code = QueryTextField(max_length=64, required=False, allow_blank=True, default="")
    client = QueryTextField(max_length=128, required=False, allow_blank=True, default="")
    variant = QueryTextField(max_length=40, required=False, allow_blank=True, default="")
    upstream = QueryTextField(
        max_length=64,
        required=False,
        allow_blank=True,
        default="",
        help_text="An upstream MCP server of the gateway, by name: only calls to its tools.",
    )

    def filters(self) -> dict[str, str | None]:
        """The filters given, blank ones (``tool=``) meaning no filter."""
        return {name: self.validated_data[name] or None for name in ("tool", "code", "client", "variant", "upstream")}


class MetricsWindowSerializer(serializers.Serializer):
    name = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    bucket_seconds = serializers.IntegerField()


class MetricsFiltersSerializer(serializers.Serializer):
    tool = serializers.CharField(allow_null=True)
    code = serializers.CharField(allow_null=True)
    client = serializers.CharField(allow_null=True)
    variant = serializers.CharField(allow_null=True)
    upstream = serializers.CharField(allow_null=True)


class MetricsTargetsSerializer(serializers.Serializer):
    retry_success_rate = serializers.FloatField()
    interactive_error_rate = serializers.FloatField()


class MetricsRowSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    errors = serializers.IntegerField()
    error_rate = _rate("errors / calls.")
    interactive_errors = serializers.IntegerField()
    interactive_error_rate = _rate("interactive_errors / errors.")
    retries = serializers.IntegerField(help_text="Calls that were retries.")
    episodes = serializers.IntegerField(help_text="Error episodes opened.")
    recovered = serializers.IntegerField()
    first_retry_recovered = serializers.IntegerField()
    exhausted = serializers.IntegerField()
    abandoned = serializers.IntegerField()
    abandoned_without_retry = serializers.IntegerField()
    retried_episodes = serializers.IntegerField(help_text="recovered + exhausted + abandoned - abandoned_without_retry")
    retry_success_rate = _rate("recovered / retried_episodes.")
    first_retry_success_rate = _rate("first_retry_recovered / retried_episodes.")
    latency_p50_ms = serializers.FloatField(allow_null=True)
    latency_p95_ms = serializers.FloatField(allow_null=True)
    resolution_p50_seconds = serializers.FloatField(
        allow_null=True,
        help_text="User resolution time, as the question protocol measures it, median: seconds from an episode's "
        "first failed call to the call that recovered it, over recovered episodes; from rollup histograms (about "
        "±20 %). Null without one.",
    )
    resolution_p90_seconds = serializers.FloatField(
        allow_null=True, help_text="User resolution time, 90th percentile (as resolution_p50_seconds)."
    )


class MetricsSeriesPointSerializer(MetricsRowSerializer):
    bucket = serializers.DateTimeField()


class MetricsBreakdownRowSerializer(MetricsRowSerializer):
    key = serializers.CharField()


class MetricsVariantRowSerializer(MetricsBreakdownRowSerializer):
    code = serializers.CharField()
    variant = serializers.CharField()


class MetricsBreakdownsSerializer(serializers.Serializer):
    code = MetricsBreakdownRowSerializer(many=True)
    tool = MetricsBreakdownRowSerializer(many=True)
    client = MetricsBreakdownRowSerializer(many=True)
    upstream = MetricsBreakdownRowSerializer(
        many=True, help_text="Calls to the gateway's upstream MCP servers, by upstream name (none for our own tools)."
    )
    variant = MetricsVariantRowSerializer(many=True)


class VariantResultSerializer(serializers.Serializer):
    variant = serializers.CharField()
    episodes = serializers.IntegerField(help_text="Retried episodes that ended.")
    recovered = serializers.IntegerField()
    first_retry_recovered = serializers.IntegerField()
    retry_success_rate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(help_text="Wilson 95 % interval, lower end.")
    ci_high = serializers.FloatField(help_text="Wilson 95 % interval, upper end.")


class VariantComparisonSerializer(serializers.Serializer):
    code = serializers.CharField()
    variants = VariantResultSerializer(many=True)
    best = serializers.CharField(allow_null=True)
    runner_up = serializers.CharField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()
    verdict = serializers.CharField()


class RecentEpisodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    tool = serializers.CharField()
    upstream = serializers.CharField(help_text="The upstream MCP server of the tool; empty for our own tools.")
    code = serializers.CharField()
    variant = serializers.CharField()
    client = serializers.CharField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    ending = serializers.ChoiceField(choices=["open", "recovered", "exhausted", "abandoned"])
    retries = serializers.IntegerField()
    recovered_at_attempt = serializers.IntegerField(allow_null=True)
    resolution_seconds = serializers.FloatField(
        allow_null=True, help_text="Recovered episodes: seconds from the first failed call to the recovering call."
    )
    sentry_event_id = serializers.CharField()
    sentry_url = serializers.URLField(allow_null=True)


class MetricsSerializer(serializers.Serializer):
    """The answer of ``GET /api/v1/metrics/`` (documentation: the view returns the selector's data as is)."""

    window = MetricsWindowSerializer()
    filters = MetricsFiltersSerializer()
    targets = MetricsTargetsSerializer()
    totals = MetricsRowSerializer()
    series = MetricsSeriesPointSerializer(many=True)
    breakdowns = MetricsBreakdownsSerializer()
    variant_comparison = VariantComparisonSerializer(many=True)
    recent_episodes = RecentEpisodeSerializer(many=True)


class OutcomeBatchSerializer(serializers.Serializer):
    """Documentation of ``POST /api/v1/outcomes/``; the view checks each event with ``events.from_wire``."""

    events = serializers.ListField(
        child=serializers.DictField(),
        max_length=1000,
        help_text="Wire events: id (UUID), ts (Unix seconds, last 7 days), tool, outcome (ok|error|input_required), "
        "and optionally client, session, code (required for errors), variant, locale (the variant's language tag, "
        "e.g. de), upstream (the upstream MCP server's name, lower-case), interactive, latency_ms, "
        "elicitation, sentry_event_id, trace_id (the call's OpenTelemetry trace: 32 lower-case hex digits). Names "
        "are 1-128 letters, digits or _.:@/+-.",
    )


class OutcomeBatchAcceptedSerializer(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="Events taken for recording; stored once each, by event ID.")
