"""Classification rules gain ``kind`` (how an upstream's call failed) and ``pattern`` (over its failure's text).

Rules that named one of the gateway's exception classes (``UpstreamToolError`` and its siblings) now say the same by
kind, the words admin, the catalog file and the REST API use; the class names are copied here rather than imported,
so that this migration keeps doing what it did if the gateway changes. A rule naming the base class
``UpstreamError`` (any upstream failure) keeps it: no one kind says that. Going back names the classes again.
SQLite adds the columns by rebuilding the table, which drops its triggers; they are installed again so that rule
changes keep raising the catalog revision.
"""

from __future__ import annotations

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLE = "errcatalog_classificationrule"

# The gateway's failure classes (mcpserver.gateway.failures) and the kind each stands for.
_KIND_OF_CLASS = {
    "UpstreamToolError": "tool_error",
    "UpstreamJsonRpcError": "jsonrpc_error",
    "UpstreamHttpError": "http_status",
    "UpstreamTimeout": "timeout",
    "UpstreamConnectionError": "connection",
    "UpstreamProtocolError": "malformed",
    "UpstreamUnavailable": "circuit_open",
}


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, TABLE):
        schema_editor.execute(statement, params=None)


def _by_kind(apps, schema_editor):
    rules = apps.get_model("errcatalog", "ClassificationRule")
    for name, kind in _KIND_OF_CLASS.items():
        # A rule that already says a kind keeps its class name too: both conditions stay as they were.
        rules.objects.filter(exception=name, kind="").update(exception="", kind=kind)


def _by_class(apps, schema_editor):
    rules = apps.get_model("errcatalog", "ClassificationRule")
    for name, kind in _KIND_OF_CLASS.items():
        rules.objects.filter(exception="", kind=kind).update(exception=name, kind="")


class Migration(migrations.Migration):

    dependencies = [
        ('errcatalog', '0019_client_token_outcome_reports'),
    ]

    operations = [
        migrations.AddField(
            model_name='classificationrule',
            name='kind',
            field=models.CharField(blank=True, choices=[('', 'Any'), ('tool_error', 'The tool reported an error'), ('jsonrpc_error', 'A JSON-RPC error'), ('http_status', 'An HTTP error status'), ('timeout', 'No answer in time'), ('connection', 'A refused or dropped connection'), ('malformed', 'An answer that is not MCP'), ('circuit_open', 'Circuit open after repeated failures')], help_text="Only for an upstream server's failures of this kind (blank: any failure).", max_length=16),
        ),
        migrations.AddField(
            model_name='classificationrule',
            name='pattern',
            field=models.CharField(blank=True, help_text="Only when the upstream's failure text contains this pattern: case-insensitive, RE2 syntax (no look-around or back-references), read over the text's first 2,000 characters; ^ anchors at its start. The text only chooses the code: it never appears in the answer.", max_length=500),
        ),
        migrations.AddField(
            model_name='historicalclassificationrule',
            name='kind',
            field=models.CharField(blank=True, choices=[('', 'Any'), ('tool_error', 'The tool reported an error'), ('jsonrpc_error', 'A JSON-RPC error'), ('http_status', 'An HTTP error status'), ('timeout', 'No answer in time'), ('connection', 'A refused or dropped connection'), ('malformed', 'An answer that is not MCP'), ('circuit_open', 'Circuit open after repeated failures')], help_text="Only for an upstream server's failures of this kind (blank: any failure).", max_length=16),
        ),
        migrations.AddField(
            model_name='historicalclassificationrule',
            name='pattern',
            field=models.CharField(blank=True, help_text="Only when the upstream's failure text contains this pattern: case-insensitive, RE2 syntax (no look-around or back-references), read over the text's first 2,000 characters; ^ anchors at its start. The text only chooses the code: it never appears in the answer.", max_length=500),
        ),
        migrations.AlterField(
            model_name='classificationrule',
            name='exception',
            field=models.CharField(blank=True, help_text="Exception class name of our own tools' failures; subclasses match too (e.g. TimeoutError). Upstream servers' failures are told apart by kind and pattern.", max_length=128),
        ),
        migrations.AlterField(
            model_name='historicalclassificationrule',
            name='exception',
            field=models.CharField(blank=True, help_text="Exception class name of our own tools' failures; subclasses match too (e.g. TimeoutError). Upstream servers' failures are told apart by kind and pattern.", max_length=128),
        ),
        migrations.RunPython(reinstall_triggers, reinstall_triggers),
        migrations.RunPython(_by_kind, _by_class),
    ]
