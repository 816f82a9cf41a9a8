"""PRMModel and ActiveLearningRun now live in learning (same tables)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ('labeling', '0004_membership_invitation_moved_in'),
        ('learning', '0001_initial'),
    ]

    operations = [
        # The tables are there already, under their old names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='prmmodel',
                    name='campaign',
                ),
                migrations.DeleteModel(
                    name='ActiveLearningRun',
                ),
                migrations.DeleteModel(
                    name='PRMModel',
                ),
            ],
            database_operations=[],
        ),
    ]
