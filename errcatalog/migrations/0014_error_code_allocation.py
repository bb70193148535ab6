"""Error codes say who sets their variants' weights: the writer (fixed) or the allocator (adaptive), unless frozen.
SQLite adds the columns by rebuilding the table, which drops its triggers; they are installed again so that code
changes keep raising the catalog revision (as 0011 does for the rules)."""

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLE = "errcatalog_errorcode"
CHOICES = [("fixed", "Fixed weights"), ("adaptive", "Adaptive (from recovery rates)")]
ALLOCATION_HELP = "Adaptive: a periodic task sets the variants' weights from how often each one recovers."
FROZEN_HELP = "Adaptive: keep the current weights (the allocator leaves this code alone)."


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, TABLE):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0013_upstream_health"),
    ]

    operations = (
        [
            migrations.AddField(
                model_name=model,
                name="allocation",
                field=models.CharField(choices=CHOICES, default="fixed", help_text=ALLOCATION_HELP, max_length=16),
            )
            for model in ("errorcode", "historicalerrorcode")
        ]
        + [
            migrations.AddField(
                model_name=model,
                name="allocation_frozen",
                field=models.BooleanField(default=False, help_text=FROZEN_HELP),
            )
            for model in ("errorcode", "historicalerrorcode")
        ]
        + [
            migrations.RunPython(reinstall_triggers, reinstall_triggers),
        ]
    )
