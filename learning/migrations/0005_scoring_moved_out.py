"""ScoringJob and ServedScore now live in machines (same tables)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('learning', '0004_run_data_efficiency'),
        ('machines', '0001_initial'),
    ]

    operations = [
        # The tables stay, under their names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='servedscore',
                    name='job',
                ),
                migrations.RemoveField(
                    model_name='servedscore',
                    name='campaign',
                ),
                migrations.RemoveField(
                    model_name='servedscore',
                    name='solution',
                ),
                migrations.DeleteModel(
                    name='ScoringJob',
                ),
                migrations.DeleteModel(
                    name='ServedScore',
                ),
            ],
            database_operations=[],
        ),
    ]
