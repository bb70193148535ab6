"""Upstream MCP servers (the gateway), with history; their changes raise the catalog revision like catalog rows,
so every serving process follows them (``mcpserver.gateway.pool``)."""

import django.core.validators
import django.db.models.deletion
import simple_history.models
from django.conf import settings
from django.db import migrations, models

from errcatalog.catalog.revision import install_sql, remove_sql

TABLE = "errcatalog_upstream"


def install_triggers(apps, schema_editor):
    for statement in install_sql(schema_editor.connection.vendor, TABLE):
        schema_editor.execute(statement, params=None)


def remove_triggers(apps, schema_editor):
    for statement in remove_sql(schema_editor.connection.vendor, TABLE):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0009_catalog_revision"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="HistoricalUpstream",
            fields=[
                ("id", models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name="ID")),
                (
                    "name",
                    models.CharField(
                        db_index=True,
                        help_text="Lower-case letters, digits, '-' and '_'. Names the upstream in outcomes, metrics and rules.",
                        max_length=64,
                    ),
                ),
                (
                    "prefix",
                    models.CharField(
                        db_index=True,
                        help_text="Tools are served as <prefix>__<tool>: letters, digits, '-' and '_'.",
                        max_length=32,
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                (
                    "transport",
                    models.CharField(
                        choices=[("http", "Streamable HTTP"), ("stdio", "stdio (a command run on this server)")],
                        default="http",
                        max_length=8,
                    ),
                ),
                (
                    "url",
                    models.URLField(
                        blank=True, help_text="The upstream's MCP endpoint (Streamable HTTP).", max_length=2000
                    ),
                ),
                (
                    "headers",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Header name → env:VARIABLE or a sealed value. Never shown back.",
                    ),
                ),
                (
                    "command",
                    models.CharField(blank=True, help_text="The program to run (stdio), e.g. npx.", max_length=500),
                ),
                ("args", models.JSONField(blank=True, default=list, help_text="Its arguments, as a list of strings.")),
                (
                    "cwd",
                    models.CharField(
                        blank=True, help_text="Its working folder (blank: the server's).", max_length=1000
                    ),
                ),
                (
                    "env",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Variables the process gets: name → env:VARIABLE or a sealed value. Nothing else of ours.",
                    ),
                ),
                (
                    "timeout_seconds",
                    models.FloatField(
                        default=30.0,
                        help_text="Per call.",
                        validators=[
                            django.core.validators.MinValueValidator(0.1),
                            django.core.validators.MaxValueValidator(600),
                        ],
                    ),
                ),
                (
                    "max_concurrency",
                    models.PositiveIntegerField(
                        default=8,
                        help_text="Calls in flight to this upstream at once, per web process; more wait their turn.",
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(1000),
                        ],
                    ),
                ),
                (
                    "tools",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="The upstream tools exposed, by their own names; empty exposes all.",
                    ),
                ),
                ("created_at", models.DateTimeField(blank=True, editable=False)),
                ("updated_at", models.DateTimeField(blank=True, editable=False)),
                ("history_id", models.AutoField(primary_key=True, serialize=False)),
                ("history_date", models.DateTimeField(db_index=True)),
                ("history_change_reason", models.CharField(max_length=100, null=True)),
                (
                    "history_type",
                    models.CharField(choices=[("+", "Created"), ("~", "Changed"), ("-", "Deleted")], max_length=1),
                ),
                (
                    "history_user",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "historical upstream",
                "verbose_name_plural": "historical upstreams",
                "ordering": ("-history_date", "-history_id"),
                "get_latest_by": ("history_date", "history_id"),
            },
            bases=(simple_history.models.HistoricalChanges, models.Model),
        ),
        migrations.CreateModel(
            name="Upstream",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "name",
                    models.CharField(
                        help_text="Lower-case letters, digits, '-' and '_'. Names the upstream in outcomes, metrics and rules.",
                        max_length=64,
                        unique=True,
                    ),
                ),
                (
                    "prefix",
                    models.CharField(
                        help_text="Tools are served as <prefix>__<tool>: letters, digits, '-' and '_'.",
                        max_length=32,
                        unique=True,
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                (
                    "transport",
                    models.CharField(
                        choices=[("http", "Streamable HTTP"), ("stdio", "stdio (a command run on this server)")],
                        default="http",
                        max_length=8,
                    ),
                ),
                (
                    "url",
                    models.URLField(
                        blank=True, help_text="The upstream's MCP endpoint (Streamable HTTP).", max_length=2000
                    ),
                ),
                (
                    "headers",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Header name → env:VARIABLE or a sealed value. Never shown back.",
                    ),
                ),
                (
                    "command",
                    models.CharField(blank=True, help_text="The program to run (stdio), e.g. npx.", max_length=500),
                ),
                ("args", models.JSONField(blank=True, default=list, help_text="Its arguments, as a list of strings.")),
                (
                    "cwd",
                    models.CharField(
                        blank=True, help_text="Its working folder (blank: the server's).", max_length=1000
                    ),
                ),
                (
                    "env",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Variables the process gets: name → env:VARIABLE or a sealed value. Nothing else of ours.",
                    ),
                ),
                (
                    "timeout_seconds",
                    models.FloatField(
                        default=30.0,
                        help_text="Per call.",
                        validators=[
                            django.core.validators.MinValueValidator(0.1),
                            django.core.validators.MaxValueValidator(600),
                        ],
                    ),
                ),
                (
                    "max_concurrency",
                    models.PositiveIntegerField(
                        default=8,
                        help_text="Calls in flight to this upstream at once, per web process; more wait their turn.",
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(1000),
                        ],
                    ),
                ),
                (
                    "tools",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="The upstream tools exposed, by their own names; empty exposes all.",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ["name"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("transport__in", ["http", "stdio"])), name="upstream_transport_known"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("timeout_seconds__gte", 0.1), ("timeout_seconds__lte", 600)),
                        name="upstream_timeout_range",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("max_concurrency__gte", 1), ("max_concurrency__lte", 1000)),
                        name="upstream_concurrency_range",
                    ),
                ],
            },
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
