from django.db import migrations, models

# FUNCTION_NOT_FOUND's shipped wording named the tool the caller asked for; the endpoint no longer passes a name
# nothing serves, so the shipped wording changes with it. A wording an editor changed is left as it is.
OLD_MESSAGE = "The tool {tool_name} does not exist."
NEW_MESSAGE = "No tool of that name exists on this server."


def _reword(old: str, new: str):
    def reword(apps, schema_editor):
        variants = apps.get_model("errcatalog", "TemplateVariant").objects
        variants.filter(error_code__code="FUNCTION_NOT_FOUND", name="default", locale="", message=old).update(
            message=new
        )

    return reword


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0018_upstream_tool_pins"),
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
        migrations.RunPython(_reword(OLD_MESSAGE, NEW_MESSAGE), _reword(NEW_MESSAGE, OLD_MESSAGE)),
    ]
