"""ImportJob moves here from annotators, keeping its table."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from common.migration_ops import content_types_moved


class Migration(migrations.Migration):
    dependencies = [
        ('labeling', '0001_initial'),
        ('annotators', '0003_api_tokens'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables are there already, under their old names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ImportJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('pending', 'pending'), ('running', 'running'), ('done', 'done'), ('failed', 'failed')], default='pending', max_length=10)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('file_name', models.CharField(help_text='The name it was uploaded with.', max_length=255)),
                        ('stored_path', models.CharField(blank=True, help_text='Under MEDIA_ROOT.', max_length=500)),
                        ('size', models.PositiveBigIntegerField(default=0)),
                        ('sha256', models.CharField(blank=True, max_length=64)),
                        ('format', models.CharField(max_length=30)),
                        ('options', models.JSONField(blank=True, default=dict)),
                        ('grade', models.BooleanField(default=True, help_text='Grade new answers after the import.')),
                        ('phase', models.CharField(blank=True, max_length=20)),
                        ('progress', models.FloatField(default=0.0)),
                        ('counts', models.JSONField(blank=True, default=dict)),
                        ('errors', models.JSONField(blank=True, default=list, help_text='[{file, line, field, message}]')),
                        ('errors_truncated', models.BooleanField(default=False)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to='labeling.campaign')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotators_importjob',
                        'ordering': ['-created_at', '-id'],
                        'abstract': False,
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_moved('annotators', 'imports', ['importjob']),
            content_types_moved('imports', 'annotators', ['importjob']),
        ),
    ]
