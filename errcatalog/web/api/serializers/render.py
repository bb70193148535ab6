"""The render preview's request and answer: a failure, the face to render it in, and unsaved variant text to try."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from errcatalog.catalog.models import Header
from errcatalog.catalog.previews import FACES, FaceOptions, variant_exists
from errcatalog.render import FORMATS, PROVIDERS, Failure, ParameterFault
from errcatalog.render.core import NETWORK_FAILURES
from errcatalog.render.locale import choose_locale
from errcatalog.safety import template_errors
from errcatalog.vocabulary import is_json_number
from errcatalog.web.api.serializers.request_fields import MAX_LIST_ITEMS, KnownFieldsOnly, value_range

_PROTOCOL_VERSION = r"^\d{4}-\d{2}-\d{2}$"
# A BCP 47 language tag as catalogs use them (de, pt-BR, zh-Hant-TW): letters, then subtags of letters and digits.
_LANGUAGE_TAG = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"


def validate_template(value: str) -> None:
    problems = template_errors(value)
    if problems:
        raise serializers.ValidationError(problems)


def _blank_to_none(value: str | None) -> str | None:
    return value or None


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
    parameters = ParameterFaultSerializer(many=True, required=False, default=list, max_length=MAX_LIST_ITEMS)
    status_code = serializers.IntegerField(required=False, allow_null=True, default=None, **value_range("http_status"))
    event_id = serializers.CharField(max_length=64, required=False, allow_blank=True, allow_null=True, default=None)
    retry_after = serializers.IntegerField(min_value=0, max_value=86400, required=False, allow_null=True, default=None)
    alternatives = serializers.ListField(
        child=serializers.CharField(max_length=128), required=False, default=list, max_length=MAX_LIST_ITEMS
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
        max_length=MAX_LIST_ITEMS,
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
