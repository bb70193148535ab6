"""Upstream health as each serving process reports it. Not catalog data: no revision triggers on this table."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('errcatalog', '0012_outcomes_upstream'),
    ]

    operations = [
        migrations.CreateModel(
            name='UpstreamHealth',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('process', models.CharField(help_text='host:pid of the serving process.', max_length=128)),
                ('state', models.CharField(max_length=16)),
                ('protocol_version', models.CharField(blank=True, max_length=32)),
                ('tool_count', models.PositiveIntegerField(default=0)),
                ('circuit', models.CharField(max_length=16)),
                ('last_failure', models.CharField(blank=True, max_length=300)),
                ('last_failure_at', models.DateTimeField(blank=True, null=True)),
                ('reported_at', models.DateTimeField()),
                ('upstream', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='health', to='errcatalog.upstream')),
            ],
            options={
                'ordering': ['upstream', 'process'],
                'constraints': [models.UniqueConstraint(fields=('upstream', 'process'), name='upstream_health_one_per_process')],
            },
        ),
    ]
