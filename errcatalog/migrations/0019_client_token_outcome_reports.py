from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0016_outcome_trace_id"),
    ]

    operations = [
        # Existing tokens do not report outcomes: reporting was open to every token, and is now a right given
        # on purpose (admin, or token_create --report-outcomes).
        migrations.AddField(
            model_name="clienttoken",
            name="can_report_outcomes",
            field=models.BooleanField(
                default=False,
                help_text="May report outcomes of calls to tools it may call (POST /api/v1/outcomes/), rate-limited.",
            ),
        ),
        migrations.AddField(
            model_name="clienttoken",
            name="outcomes_count_for_allocation",
            field=models.BooleanField(
                default=False,
                help_text="Its reported outcomes count towards adaptive allocation's variant weights, as "
                "errcatalog's own calls do. Only people who may change variant weights may set it.",
            ),
        ),
    ]
