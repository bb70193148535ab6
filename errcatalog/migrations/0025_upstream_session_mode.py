"""A stdio upstream may run one child process per client session (``session_mode``). SQLite adds the column and the
constraint by rebuilding the table, which drops its triggers; they are installed again so that upstream changes keep
raising the catalog revision (which is how serving processes learn of them)."""

from django.db import migrations, models

from errcatalog.catalog.revision import reinstall_sql

TABLE = "errcatalog_upstream"


def reinstall_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in reinstall_sql(vendor, TABLE):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("errcatalog", "0024_upstream_relay_switches"),
    ]

    operations = [
        migrations.AddField(
            model_name="historicalupstream",
            name="session_mode",
            field=models.CharField(
                choices=[
                    ("shared", "One child process for every client"),
                    ("per_client", "One child process per client session"),
                ],
                default="shared",
                help_text="stdio: whether every client session gets a child process of its own (bounded by ERRCATALOG_GATEWAY_SESSIONS_PER_UPSTREAM per web process) or all share one. HTTP upstreams always give each client session its own upstream session.",
                max_length=10,
            ),
        ),
        migrations.AddField(
            model_name="upstream",
            name="session_mode",
            field=models.CharField(
                choices=[
                    ("shared", "One child process for every client"),
                    ("per_client", "One child process per client session"),
                ],
                default="shared",
                help_text="stdio: whether every client session gets a child process of its own (bounded by ERRCATALOG_GATEWAY_SESSIONS_PER_UPSTREAM per web process) or all share one. HTTP upstreams always give each client session its own upstream session.",
                max_length=10,
            ),
        ),
        migrations.AddConstraint(
            model_name="upstream",
            constraint=models.CheckConstraint(
                condition=models.Q(("session_mode__in", ["shared", "per_client"])), name="upstream_session_mode_known"
            ),
        ),
        migrations.RunPython(reinstall_triggers, reinstall_triggers),
    ]
