"""The error answer every endpoint of the REST API gives, in one shape (``errcatalog.web.api.exceptions``)."""

from __future__ import annotations

from rest_framework import serializers


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
