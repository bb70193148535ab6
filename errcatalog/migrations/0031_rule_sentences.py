"""A classification rule's sentence (``says``): what the answer adds when the rule chose the code, placing the facts
its pattern captures (which the pattern's help now names). And the upstream's "facts" choice, which now names those
facts. SQLite adds the column by
rebuilding each table, which drops its triggers; they are installed again so that changes keep raising the catalog
revision (which is how serving processes learn of them)."""

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLES = ("errcatalog_classificationrule", "errcatalog_upstream")
SAYS_HELP = (
    "A sentence the answer adds after the code's text when this rule chose the code, e.g. 'Column {name} does not "
    "exist.' It may place what the pattern captures by name: (?P<name>…) an identifier, (?P<path>…) a parameter or "
    "JSON path, (?P<expected>…) the type or values accepted; each is kept only in its own strict shape. Left out when "
    "a placeholder it uses has no value."
)
PATTERN_HELP = (
    "Only when the upstream's failure text contains this pattern: case-insensitive, RE2 syntax (no look-around or "
    "back-references), read over the text's first 2,000 characters; ^ anchors at its start. Named groups capture "
    "facts for the sentence below: (?P<name>…), (?P<path>…), (?P<expected>…)."
)
WORDS_CHOICES = [
    ("quoted", "Quoted, after the screen (credentials, markup, tracebacks and instructions to the model out)"),
    ("facts", "Only the facts rules take from them (the parameter, identifiers and values), never the words"),
    ("withheld", "Nothing: the words only choose the catalog's code"),
]
WORDS_HELP = (
    "What the model reads of this upstream's own words when its tool fails, after the catalog's code, cause and "
    "instruction."
)


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in TABLES:
        for statement in reinstall_sql(vendor, table):
            schema_editor.execute(statement, params=None)


def says_field():
    return models.CharField(blank=True, help_text=SAYS_HELP, max_length=300)


def pattern_field():
    return models.CharField(blank=True, help_text=PATTERN_HELP, max_length=500)


def words_field():
    return models.CharField(choices=WORDS_CHOICES, default="quoted", help_text=WORDS_HELP, max_length=10)


class Migration(migrations.Migration):
    dependencies = [("errcatalog", "0030_upstream_failure_words")]

    operations = [
        migrations.AddField(model_name="classificationrule", name="says", field=says_field()),
        migrations.AddField(model_name="historicalclassificationrule", name="says", field=says_field()),
        migrations.AlterField(model_name="classificationrule", name="pattern", field=pattern_field()),
        migrations.AlterField(model_name="historicalclassificationrule", name="pattern", field=pattern_field()),
        migrations.AlterField(model_name="historicalupstream", name="failure_words", field=words_field()),
        migrations.AlterField(model_name="upstream", name="failure_words", field=words_field()),
        migrations.RunPython(reinstall_triggers, reinstall_triggers),
    ]
