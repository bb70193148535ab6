"""The catalog revision: one row that triggers on the four catalog tables raise with every committed change.

Serving processes poll it to learn that the catalog changed, whichever process or tool changed it
(``errcatalog.catalog.revision`` holds the SQL and explains it). The row is created by the first change.
"""

from django.db import migrations, models

from errcatalog.catalog.revision import CATALOG_TABLES, install_sql, remove_function_sql, remove_sql


def install_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in CATALOG_TABLES:
        for statement in install_sql(vendor, table):
            schema_editor.execute(statement, params=None)


def remove_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in CATALOG_TABLES:
        for statement in remove_sql(vendor, table):
            schema_editor.execute(statement, params=None)
    for statement in remove_function_sql(vendor):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0008_outcome_record"),
    ]

    operations = [
        migrations.CreateModel(
            name="CatalogRevision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("number", models.BigIntegerField(default=0)),
                ("changed_at", models.DateTimeField(null=True)),
            ],
            options={
                "db_table": "errcatalog_catalogrevision",
            },
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
