"""How many of an inbox group's failures had their text withheld from the model because it spoke to it. The inbox's
tables are not catalog data: they carry no revision triggers to install again."""

from django.db import migrations, models

HELP = (
    "Of these, the failures whose text spoke to the model (instructions, role markers): withheld from it whole, "
    "whatever the upstream's failure words say."
)


class Migration(migrations.Migration):
    dependencies = [("errcatalog", "0031_rule_sentences")]

    operations = [
        migrations.AddField(
            model_name="upstreamfailuregroup",
            name="withheld",
            field=models.PositiveBigIntegerField(default=0, help_text=HELP),
        ),
    ]
