"""Roots are relayed by default (``relay_roots``). SQLite alters the column by rebuilding the table, which drops its
triggers; they are installed again so that upstream changes keep raising the catalog revision (which is how serving
processes learn of them)."""

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLE = "errcatalog_upstream"
HELP = (
    "Relay its requests for the client's roots (folders the client shares) to the clients that declared roots, over "
    "each client's own upstream session; never to a stdio child that every client shares."
)


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, TABLE):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0026_named_servers"),
    ]

    operations = [
        migrations.AlterField(
            model_name="historicalupstream",
            name="relay_roots",
            field=models.BooleanField(default=True, help_text=HELP),
        ),
        migrations.AlterField(
            model_name="upstream",
            name="relay_roots",
            field=models.BooleanField(default=True, help_text=HELP),
        ),
        migrations.RunPython(reinstall_triggers, reinstall_triggers),
    ]
