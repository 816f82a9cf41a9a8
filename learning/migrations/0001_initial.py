"""PRMModel and ActiveLearningRun move here from labeling, keeping their tables."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from common.migration_ops import content_types_moved


class Migration(migrations.Migration):
    dependencies = [
        ('labeling', '0003_active_learning'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables are there already, under their old names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='PRMModel',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('version', models.PositiveIntegerField()),
                        ('backbone', models.CharField(default='bow', max_length=100)),
                        ('path', models.CharField(help_text='Checkpoint directory, relative to MEDIA_ROOT.', max_length=300)),
                        ('metrics', models.JSONField(blank=True, default=dict)),
                        ('training_labels', models.PositiveIntegerField(default=0, help_text='Submitted step labels in the training export.')),
                        ('training_solutions', models.PositiveIntegerField(default=0)),
                        ('is_active', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='prm_models', to='labeling.campaign')),
                    ],
                    options={
                        'db_table': 'labeling_prmmodel',
                        'ordering': ['campaign', '-version'],
                    },
                ),
                migrations.CreateModel(
                    name='ActiveLearningRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('queued', 'queued'), ('running', 'running'), ('succeeded', 'succeeded'), ('failed', 'failed')], default='queued', max_length=10)),
                        ('trigger', models.CharField(choices=[('auto', 'automatic'), ('manual', 'manual')], default='manual', max_length=10)),
                        ('training_labels', models.PositiveIntegerField(blank=True, help_text='Submitted step labels in the training export (the trigger counts from it).', null=True)),
                        ('metrics', models.JSONField(blank=True, default=dict)),
                        ('timings', models.JSONField(blank=True, default=dict, help_text='Seconds per stage.')),
                        ('queue_head', models.JSONField(blank=True, default=dict, help_text='Composition of the new queue head.')),
                        ('error', models.TextField(blank=True)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='al_runs', to='labeling.campaign')),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('model', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='learning.prmmodel')),
                    ],
                    options={
                        'db_table': 'labeling_activelearningrun',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.AddConstraint(
                    model_name='prmmodel',
                    constraint=models.UniqueConstraint(fields=('campaign', 'version'), name='prmmodel_unique_version'),
                ),
                migrations.AddConstraint(
                    model_name='prmmodel',
                    constraint=models.UniqueConstraint(condition=models.Q(('is_active', True)), fields=('campaign',), name='prmmodel_one_active'),
                ),
                migrations.AddIndex(
                    model_name='activelearningrun',
                    index=models.Index(fields=['campaign', '-created_at'], name='alrun_by_campaign'),
                ),
                migrations.AddConstraint(
                    model_name='activelearningrun',
                    constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['queued', 'running'])), fields=('campaign',), name='alrun_one_active_per_campaign'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_moved('labeling', 'learning', ['prmmodel', 'activelearningrun']),
            content_types_moved('learning', 'labeling', ['prmmodel', 'activelearningrun']),
        ),
    ]
