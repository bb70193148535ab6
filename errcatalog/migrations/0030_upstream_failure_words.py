"""What a model reads of an upstream's own words when its tool fails (``failure_words``: quoted, facts or withheld;
quoted by default). SQLite adds the column and the constraint by rebuilding the table, which drops its triggers; they
are installed again so that upstream changes keep raising the catalog revision (which is how serving processes learn
of them)."""

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLE = "errcatalog_upstream"
CHOICES = [
    ("quoted", "Quoted, after the screen (credentials, markup, tracebacks and instructions to the model out)"),
    ("facts", "Only the facts rules take from them (the parameter they name), never the words"),
    ("withheld", "Nothing: the words only choose the catalog's code"),
]
HELP = (
    "What the model reads of this upstream's own words when its tool fails, after the catalog's code, cause and "
    "instruction."
)


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, TABLE):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("errcatalog", "0029_upstream_text_rules_before_jsonrpc_codes")]

    operations = [
        migrations.AddField(
            model_name="historicalupstream",
            name="failure_words",
            field=models.CharField(choices=CHOICES, default="quoted", help_text=HELP, max_length=10),
        ),
        migrations.AddField(
            model_name="upstream",
            name="failure_words",
            field=models.CharField(choices=CHOICES, default="quoted", help_text=HELP, max_length=10),
        ),
        migrations.AddConstraint(
            model_name="upstream",
            constraint=models.CheckConstraint(
                condition=models.Q(("failure_words__in", ["quoted", "facts", "withheld"])),
                name="upstream_failure_words_known",
            ),
        ),
        migrations.RunPython(reinstall_triggers, reinstall_triggers),
    ]
