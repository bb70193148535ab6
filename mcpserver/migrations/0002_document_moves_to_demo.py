"""The demo's Document model leaves mcpserver for the demo app: state only, so its table and rows stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("mcpserver", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="Document")]),
    ]
