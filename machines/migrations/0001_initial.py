"""GenerationJob and EvidenceJob move here from imports, ScoringJob and ServedScore from
learning, keeping their tables."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from common.migration_ops import content_types_moved


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('labeling', '0025_solution_al_placed_by'),
        ('imports', '0006_evidence_job'),
        ('learning', '0004_run_data_efficiency'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables are there already, under their old names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='EvidenceJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('error', models.TextField(blank=True)),
                        ('status', models.CharField(choices=[('pending', 'pending'), ('running', 'running'), ('done', 'done'), ('failed', 'failed')], default='pending', max_length=10)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('kind', models.CharField(choices=[('rollouts', 'rollouts from steps'), ('judge', "a judge's first error")], max_length=10)),
                        ('endpoint', models.CharField(help_text='A declared chat endpoint, by name.', max_length=100)),
                        ('model', models.CharField(max_length=200)),
                        ('selection', models.JSONField(blank=True, default=dict, help_text="The data browser's filter of the solutions asked about.")),
                        ('steps', models.JSONField(blank=True, default=list, help_text='Step indexes to roll out from (empty: every step).')),
                        ('samples_per_step', models.PositiveSmallIntegerField(default=8)),
                        ('prompt_template', models.TextField(default='Solve the following math problem step by step. Write one step per paragraph, separated by a blank line. When you are done, write the final answer on its own after a line that says "# Answer", like this:\n\n# Answer\n\n42\n\nProblem: {problem}')),
                        ('temperature', models.FloatField(default=1.0)),
                        ('top_p', models.FloatField(default=1.0)),
                        ('max_tokens', models.PositiveIntegerField(default=1024)),
                        ('concurrency', models.PositiveSmallIntegerField(default=4)),
                        ('timeout_s', models.FloatField(default=120.0)),
                        ('max_retries', models.PositiveSmallIntegerField(default=5)),
                        ('budget_tokens', models.PositiveBigIntegerField(default=0, help_text='0: no budget.')),
                        ('plan', models.JSONField(blank=True, default=list, help_text='[[solution id, step index], ...]')),
                        ('requested', models.PositiveIntegerField(default=0, help_text='Units of work in the plan.')),
                        ('completed', models.PositiveIntegerField(default=0)),
                        ('failed', models.PositiveIntegerField(default=0)),
                        ('samples', models.PositiveIntegerField(default=0, help_text='Completions stored.')),
                        ('prompt_tokens', models.PositiveBigIntegerField(default=0)),
                        ('completion_tokens', models.PositiveBigIntegerField(default=0)),
                        ('retries', models.PositiveIntegerField(default=0)),
                        ('progress', models.FloatField(default=0.0)),
                        ('stopped_by_budget', models.BooleanField(default=False)),
                        ('errors', models.JSONField(blank=True, default=list, help_text='The last few [{key, message}].')),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='evidence_jobs', to='labeling.campaign')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'imports_evidencejob',
                        'ordering': ['-created_at', '-id'],
                        'abstract': False,
                    },
                ),
                migrations.CreateModel(
                    name='GenerationJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('error', models.TextField(blank=True)),
                        ('status', models.CharField(choices=[('pending', 'pending'), ('running', 'running'), ('done', 'done'), ('failed', 'failed')], default='pending', max_length=10)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('endpoint', models.CharField(blank=True, db_default='', default='', help_text="The declared endpoint's name (STEPWISE_ENDPOINTS).", max_length=50)),
                        ('base_url', models.CharField(blank=True, db_default='', default='', help_text='A free-form URL, where the operator allows them.', max_length=500)),
                        ('model', models.CharField(max_length=200)),
                        ('generator', models.CharField(blank=True, help_text='Default: the model.', max_length=200)),
                        ('samples_per_problem', models.PositiveIntegerField(default=4)),
                        ('selection', models.CharField(choices=[('all', 'all problems'), ('filter', 'problems matching a filter'), ('fewer_than_k', 'problems with fewer than K open solutions')], default='all', max_length=20)),
                        ('problem_filter', models.JSONField(blank=True, default=dict, help_text="{subject, level, search}: for selection 'filter'.")),
                        ('prompt_template', models.TextField(default='Solve the following math problem step by step. Write one step per paragraph, separated by a blank line. When you are done, write the final answer on its own after a line that says "# Answer", like this:\n\n# Answer\n\n42\n\nProblem: {problem}')),
                        ('temperature', models.FloatField(default=1.0)),
                        ('top_p', models.FloatField(default=1.0)),
                        ('max_tokens', models.PositiveIntegerField(default=1024)),
                        ('split', models.CharField(default='auto', max_length=200)),
                        ('concurrency', models.PositiveSmallIntegerField(default=4)),
                        ('timeout_s', models.FloatField(default=120.0)),
                        ('max_retries', models.PositiveSmallIntegerField(default=5)),
                        ('grade', models.BooleanField(default=True)),
                        ('plan', models.JSONField(blank=True, default=list, help_text='[[problem id, samples], ...]')),
                        ('requested', models.PositiveIntegerField(default=0)),
                        ('completed', models.PositiveIntegerField(default=0)),
                        ('failed', models.PositiveIntegerField(default=0)),
                        ('solutions_created', models.PositiveIntegerField(default=0)),
                        ('prompt_tokens', models.PositiveBigIntegerField(default=0)),
                        ('completion_tokens', models.PositiveBigIntegerField(default=0)),
                        ('retries', models.PositiveIntegerField(default=0)),
                        ('progress', models.FloatField(default=0.0)),
                        ('errors', models.JSONField(blank=True, default=list, help_text='The last few [{key, message}].')),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='generation_jobs', to='labeling.campaign')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'imports_generationjob',
                        'ordering': ['-created_at', '-id'],
                        'abstract': False,
                    },
                ),
                migrations.CreateModel(
                    name='ScoringJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('error', models.TextField(blank=True)),
                        ('status', models.CharField(choices=[('pending', 'pending'), ('running', 'running'), ('done', 'done'), ('failed', 'failed')], default='pending', max_length=10)),
                        ('endpoint', models.CharField(max_length=50)),
                        ('model', models.CharField(max_length=200)),
                        ('total', models.PositiveIntegerField(default=0, help_text='Open solutions to score.')),
                        ('scored', models.PositiveIntegerField(default=0, help_text='Scored and committed so far.')),
                        ('requests', models.PositiveIntegerField(default=0)),
                        ('retries', models.PositiveIntegerField(default=0)),
                        ('seconds', models.FloatField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scoring_jobs', to='labeling.campaign')),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'learning_scoringjob',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='ServedScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('endpoint', models.CharField(max_length=50)),
                        ('model', models.CharField(max_length=200)),
                        ('step_scores', models.JSONField(default=list)),
                        ('score', models.FloatField()),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='labeling.campaign')),
                        ('job', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='machines.scoringjob')),
                        ('solution', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='served_scores', to='labeling.solution')),
                    ],
                    options={
                        'db_table': 'learning_servedscore',
                    },
                ),
                migrations.AddConstraint(
                    model_name='scoringjob',
                    constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['pending', 'running'])), fields=('campaign',), name='scoringjob_one_active_per_campaign'),
                ),
                migrations.AddIndex(
                    model_name='servedscore',
                    index=models.Index(fields=['campaign', 'endpoint', 'model'], name='servedscore_by_model'),
                ),
                migrations.AddIndex(
                    model_name='servedscore',
                    index=models.Index(fields=['job', 'solution'], name='servedscore_by_job'),
                ),
                migrations.AddConstraint(
                    model_name='servedscore',
                    constraint=models.UniqueConstraint(fields=('solution', 'endpoint', 'model'), name='servedscore_one_per_model'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_moved('imports', 'machines', ['generationjob', 'evidencejob']),
            content_types_moved('machines', 'imports', ['generationjob', 'evidencejob']),
        ),
        migrations.RunPython(
            content_types_moved('learning', 'machines', ['scoringjob', 'servedscore']),
            content_types_moved('machines', 'learning', ['scoringjob', 'servedscore']),
        ),
    ]
