"""Membership and Invitation move here from annotators (the queue locks a membership on every claim)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from common.migration_ops import content_types_moved


class Migration(migrations.Migration):
    dependencies = [
        ('labeling', '0003_active_learning'),
        ('annotators', '0003_api_tokens'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables are there already, under their old names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Invitation',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('role', models.CharField(choices=[('manager', 'manager'), ('reviewer', 'reviewer'), ('annotator', 'annotator')], default='annotator', max_length=10)),
                        ('token_hash', models.CharField(max_length=64, unique=True)),
                        ('token_hint', models.CharField(max_length=8)),
                        ('note', models.CharField(blank=True, help_text='Who it is for, for the list.', max_length=200)),
                        ('max_uses', models.PositiveIntegerField(default=1, help_text='1: single use.')),
                        ('uses', models.PositiveIntegerField(default=0)),
                        ('expires_at', models.DateTimeField()),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='labeling.campaign')),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotators_invitation',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='Membership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('role', models.CharField(choices=[('manager', 'manager'), ('reviewer', 'reviewer'), ('annotator', 'annotator')], default='annotator', max_length=10)),
                        ('status', models.CharField(choices=[('active', 'active'), ('paused', 'paused'), ('removed', 'removed')], default='active', max_length=10)),
                        ('screening', models.CharField(choices=[('pending', 'pending'), ('passed', 'passed'), ('failed', 'failed')], default='pending', max_length=10)),
                        ('screening_score', models.FloatField(blank=True, null=True)),
                        ('joined_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='labeling.campaign')),
                        ('invitation', models.ForeignKey(blank=True, help_text='The link they joined with, if any.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='memberships', to='labeling.invitation')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotators_membership',
                    },
                ),
                migrations.AddConstraint(
                    model_name='membership',
                    constraint=models.UniqueConstraint(fields=('user', 'campaign'), name='membership_unique_user'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(
            content_types_moved('annotators', 'labeling', ['membership', 'invitation']),
            content_types_moved('labeling', 'annotators', ['membership', 'invitation']),
        ),
    ]
