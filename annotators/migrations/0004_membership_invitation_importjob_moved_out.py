"""Membership and Invitation now live in labeling, ImportJob in imports (same tables)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ('annotators', '0003_api_tokens'),
        ('labeling', '0004_membership_invitation_moved_in'),
        ('imports', '0001_initial'),
    ]

    operations = [
        # The tables are there already, under their old names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='invitation',
                    name='campaign',
                ),
                migrations.RemoveField(
                    model_name='invitation',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='invitation',
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='campaign',
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='user',
                ),
                migrations.DeleteModel(
                    name='ImportJob',
                ),
                migrations.DeleteModel(
                    name='Invitation',
                ),
                migrations.DeleteModel(
                    name='Membership',
                ),
            ],
            database_operations=[],
        ),
    ]
