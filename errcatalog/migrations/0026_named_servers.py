"""Named servers: staff compose our tools and upstreams into a server served at /mcp/<name>. Both tables raise the
catalog revision like upstream rows, so every serving process follows a change."""

import django.db.models.deletion
import simple_history.models
from django.conf import settings
from django.db import migrations, models

from errcatalog.catalog.revision import install_sql, remove_sql

TABLES = ("errcatalog_namedserver", "errcatalog_namedserverupstream")


def install_triggers(apps, schema_editor):
    for table in TABLES:
        for statement in install_sql(schema_editor.connection.vendor, table):
            schema_editor.execute(statement, params=None)


def remove_triggers(apps, schema_editor):
    for table in TABLES:
        for statement in remove_sql(schema_editor.connection.vendor, table):
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('errcatalog', '0025_upstream_session_mode'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='NamedServer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text="Its path, /mcp/<name>: lower-case letters, digits, '-' and '_'. Never an upstream's name.", max_length=64, unique=True)),
                ('description', models.TextField(blank=True, help_text="Who it is for and what it does: served as the server's instructions to the client's model.", max_length=2000)),
                ('enabled', models.BooleanField(default=True, help_text="Off, its path answers as an unknown server's (404).")),
                ('tools', models.JSONField(blank=True, default=list, help_text='Our own tools it serves, by name (as /mcp serves them).')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='HistoricalNamedServer',
            fields=[
                ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                ('name', models.CharField(db_index=True, help_text="Its path, /mcp/<name>: lower-case letters, digits, '-' and '_'. Never an upstream's name.", max_length=64)),
                ('description', models.TextField(blank=True, help_text="Who it is for and what it does: served as the server's instructions to the client's model.", max_length=2000)),
                ('enabled', models.BooleanField(default=True, help_text="Off, its path answers as an unknown server's (404).")),
                ('tools', models.JSONField(blank=True, default=list, help_text='Our own tools it serves, by name (as /mcp serves them).')),
                ('created_at', models.DateTimeField(blank=True, editable=False)),
                ('updated_at', models.DateTimeField(blank=True, editable=False)),
                ('history_id', models.AutoField(primary_key=True, serialize=False)),
                ('history_date', models.DateTimeField(db_index=True)),
                ('history_change_reason', models.CharField(max_length=100, null=True)),
                ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'historical named server',
                'verbose_name_plural': 'historical named servers',
                'ordering': ('-history_date', '-history_id'),
                'get_latest_by': ('history_date', 'history_id'),
            },
            bases=(simple_history.models.HistoricalChanges, models.Model),
        ),
        migrations.CreateModel(
            name='HistoricalNamedServerUpstream',
            fields=[
                ('id', models.BigIntegerField(auto_created=True, blank=True, db_index=True, verbose_name='ID')),
                ('tools', models.JSONField(blank=True, default=list, help_text='Its tools served, by their own names at the upstream; empty serves every tool /mcp serves of it.')),
                ('history_id', models.AutoField(primary_key=True, serialize=False)),
                ('history_date', models.DateTimeField(db_index=True)),
                ('history_change_reason', models.CharField(max_length=100, null=True)),
                ('history_type', models.CharField(choices=[('+', 'Created'), ('~', 'Changed'), ('-', 'Deleted')], max_length=1)),
                ('history_user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('upstream', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='errcatalog.upstream')),
                ('server', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='errcatalog.namedserver')),
            ],
            options={
                'verbose_name': 'historical upstream of a named server',
                'verbose_name_plural': 'historical upstream of a named servers',
                'ordering': ('-history_date', '-history_id'),
                'get_latest_by': ('history_date', 'history_id'),
            },
            bases=(simple_history.models.HistoricalChanges, models.Model),
        ),
        migrations.CreateModel(
            name='NamedServerUpstream',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tools', models.JSONField(blank=True, default=list, help_text='Its tools served, by their own names at the upstream; empty serves every tool /mcp serves of it.')),
                ('server', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='members', to='errcatalog.namedserver')),
                ('upstream', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='named_servers', to='errcatalog.upstream')),
            ],
            options={
                'verbose_name': 'upstream of a named server',
                'ordering': ['server', 'upstream'],
                'constraints': [models.UniqueConstraint(fields=('server', 'upstream'), name='named_server_upstream_once')],
            },
        ),
        migrations.AlterField(
            model_name='clienttoken',
            name='servers',
            field=models.JSONField(blank=True, default=list, help_text='MCP servers this key may use, by name: "" for /mcp itself, an upstream\'s or a named server\'s name for /mcp/<name>; empty allows every server.'),
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]
