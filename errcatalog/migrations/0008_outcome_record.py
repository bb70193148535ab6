"""The stored outcome model is named ``OutcomeRecord``, apart from the ``OutcomeEvent`` it stores.

Only Django's name for the model changes: the table keeps its name (``Meta.db_table``), so on every database
``RenameModel`` renames nothing (the old and new table names are equal) and no row, index or constraint is touched.
``AlterModelTable`` first pins the table to the name Django had derived from the old model name.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0007_outcome_locale"),
    ]

    operations = [
        migrations.AlterModelTable(name="outcomeevent", table="errcatalog_outcomeevent"),
        migrations.RenameModel(old_name="OutcomeEvent", new_name="OutcomeRecord"),
    ]
