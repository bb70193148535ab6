"""Upstream tool metadata pinned (``UpstreamTool``) and upstreams that may be trusted. The pins raise the catalog
revision like upstream rows, so an approval reaches every serving process; SQLite adds ``trusted`` by rebuilding
the upstream table, which drops its triggers, so they are installed again."""

import django.db.models.deletion
import simple_history.models
from django.conf import settings
from django.db import migrations, models

from errcatalog.catalog.revision import install_sql, reinstall_sql, remove_sql

UPSTREAMS = "errcatalog_upstream"
PINS = "errcatalog_upstreamtool"


def install_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in [*reinstall_sql(vendor, UPSTREAMS), *install_sql(vendor, PINS)]:
        schema_editor.execute(statement, params=None)


def remove_triggers(apps, schema_editor):
    for statement in remove_sql(schema_editor.connection.vendor, PINS):
        schema_editor.execute(statement, params=None)


def reinstall_upstream_triggers(apps, schema_editor):
    """Unapplying: removing ``trusted`` rebuilds the upstream table on SQLite, so its triggers go in again after."""
    for statement in reinstall_sql(schema_editor.connection.vendor, UPSTREAMS):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0017_upstream_values_bound"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, reinstall_upstream_triggers),
        migrations.AddField(
            model_name="historicalupstream",
            name="trusted",
            field=models.BooleanField(
                default=False,
                help_text="Serve its tools' changed or new metadata without review, once the screen finds nothing in it.",
            ),
        ),
        migrations.AddField(
            model_name="upstream",
            name="trusted",
            field=models.BooleanField(
                default=False,
                help_text="Serve its tools' changed or new metadata without review, once the screen finds nothing in it.",
            ),
        ),
        migrations.CreateModel(
            name="HistoricalUpstreamTool",
            fields=[
                ("id", models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name="ID")),
                ("kind", models.CharField(choices=[("tool", "tool")], default="tool", max_length=16)),
                ("name", models.CharField(help_text="The tool's own name at the upstream.", max_length=128)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("approved", "approved"),
                            ("review", "waiting for review"),
                            ("held", "held by the screen"),
                            ("rejected", "rejected"),
                        ],
                        max_length=16,
                    ),
                ),
                ("approved", models.JSONField(blank=True, help_text="The metadata served.", null=True)),
                ("approved_hash", models.CharField(blank=True, max_length=64)),
                ("approved_at", models.DateTimeField(blank=True, null=True)),
                (
                    "approved_how",
                    models.CharField(blank=True, help_text="first listing, trusted upstream or staff", max_length=16),
                ),
                (
                    "pending",
                    models.JSONField(blank=True, help_text="What the upstream lists now, cut to the caps.", null=True),
                ),
                ("pending_hash", models.CharField(blank=True, max_length=64)),
                (
                    "flags",
                    models.JSONField(
                        blank=True, default=list, help_text="What the screen found in the pending metadata."
                    ),
                ),
                (
                    "listed_at",
                    models.DateTimeField(help_text="When the pending metadata (or the approved) was last seen new."),
                ),
                ("history_id", models.AutoField(primary_key=True, serialize=False)),
                ("history_date", models.DateTimeField(db_index=True)),
                ("history_change_reason", models.CharField(max_length=100, null=True)),
                (
                    "history_type",
                    models.CharField(choices=[("+", "Created"), ("~", "Changed"), ("-", "Deleted")], max_length=1),
                ),
                (
                    "approved_by",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
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
                (
                    "upstream",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="errcatalog.upstream",
                    ),
                ),
            ],
            options={
                "verbose_name": "historical upstream tool",
                "verbose_name_plural": "historical upstream tools",
                "ordering": ("-history_date", "-history_id"),
                "get_latest_by": ("history_date", "history_id"),
            },
            bases=(simple_history.models.HistoricalChanges, models.Model),
        ),
        migrations.CreateModel(
            name="UpstreamTool",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("tool", "tool")], default="tool", max_length=16)),
                ("name", models.CharField(help_text="The tool's own name at the upstream.", max_length=128)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("approved", "approved"),
                            ("review", "waiting for review"),
                            ("held", "held by the screen"),
                            ("rejected", "rejected"),
                        ],
                        max_length=16,
                    ),
                ),
                ("approved", models.JSONField(blank=True, help_text="The metadata served.", null=True)),
                ("approved_hash", models.CharField(blank=True, max_length=64)),
                ("approved_at", models.DateTimeField(blank=True, null=True)),
                (
                    "approved_how",
                    models.CharField(blank=True, help_text="first listing, trusted upstream or staff", max_length=16),
                ),
                (
                    "pending",
                    models.JSONField(blank=True, help_text="What the upstream lists now, cut to the caps.", null=True),
                ),
                ("pending_hash", models.CharField(blank=True, max_length=64)),
                (
                    "flags",
                    models.JSONField(
                        blank=True, default=list, help_text="What the screen found in the pending metadata."
                    ),
                ),
                (
                    "listed_at",
                    models.DateTimeField(help_text="When the pending metadata (or the approved) was last seen new."),
                ),
                (
                    "approved_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "upstream",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="pins", to="errcatalog.upstream"
                    ),
                ),
            ],
            options={
                "ordering": ["upstream", "kind", "name"],
                "permissions": [("approve_upstreamtool", "Can approve an upstream tool's metadata")],
                "constraints": [
                    models.UniqueConstraint(fields=("upstream", "kind", "name"), name="upstream_tool_one_per_name"),
                    models.CheckConstraint(
                        condition=models.Q(("status__in", ["approved", "review", "held", "rejected"])),
                        name="upstream_tool_status_known",
                    ),
                ],
            },
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
