"""What every request serializer shares: refusing fields it does not have, an integer field's bounds from the
catalog's table of them, text that may hold anything but NUL, and the longest list a request may hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from rest_framework import serializers

from errcatalog.catalog.models import INTEGER_RANGES

# The question protocol asks one question per missing parameter; more than this is not a preview anyone needs.
MAX_LIST_ITEMS = 20


def value_range(name: str) -> dict[str, int]:
    """An integer field's bounds from the catalog's one table of them (``errcatalog.catalog.models``)."""
    low, high = INTEGER_RANGES[name]
    return {"min_value": low, "max_value": high}


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


class TextWithoutNul(serializers.RegexField):
    """Text that may hold anything but NUL (which no stored value holds, and PostgreSQL cannot compare), as its schema
    says (a ``pattern``), so that a request the schema calls valid is never refused for it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(r"^[^\x00]*$", error_messages={"invalid": "Null characters are not allowed."}, **kwargs)
        # The pattern says it once; CharField's own NUL check would say it again.
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]
