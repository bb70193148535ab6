"""Classification rules may name an upstream's tool. SQLite adds the column by rebuilding the table, which drops
its triggers; they are installed again so that rule changes keep raising the catalog revision."""

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLE = "errcatalog_classificationrule"
HELP = "Only for this tool, by the name /mcp serves it under (blank: any)."


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, TABLE):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0010_upstream"),
    ]

    operations = [
        migrations.AddField(
            model_name="classificationrule",
            name="tool",
            field=models.CharField(blank=True, help_text=HELP, max_length=128),
        ),
        migrations.AddField(
            model_name="historicalclassificationrule",
            name="tool",
            field=models.CharField(blank=True, help_text=HELP, max_length=128),
        ),
        migrations.RunPython(reinstall_triggers, reinstall_triggers),
    ]
