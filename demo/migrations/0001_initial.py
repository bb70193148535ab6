"""Document, as the demo app's model on the table it had in mcpserver.

A database made before the move has the table, with its rows (mcpserver/0001): only the state changes. A database
made since has it too, because mcpserver/0001 still runs. The table is created here only when it is missing
(a database whose mcpserver migrations were squashed or faked).
"""

import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models


def create_table_when_missing(apps, schema_editor):
    document = apps.get_model("demo", "Document")
    if document._meta.db_table not in schema_editor.connection.introspection.table_names():
        schema_editor.create_model(document)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("mcpserver", "0002_document_moves_to_demo"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Document",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID"),
                        ),
                        ("title", models.CharField(max_length=200)),
                        ("content", models.TextField()),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "db_table": "mcpserver_document",
                        "ordering": ["-updated_at", "-id"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=django.db.models.lookups.GreaterThan(
                                    django.db.models.functions.text.Length(
                                        django.db.models.functions.text.Trim("content")
                                    ),
                                    0,
                                ),
                                name="mcpserver_document_content_not_empty",
                            )
                        ],
                    },
                ),
            ]
        ),
        migrations.RunPython(create_table_when_missing, migrations.RunPython.noop),
    ]
