"""GenerationJob and EvidenceJob now live in machines (same tables)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('imports', '0006_evidence_job'),
        ('machines', '0001_initial'),
    ]

    operations = [
        # The tables stay, under their names: only Django's state moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='generationjob',
                    name='campaign',
                ),
                migrations.RemoveField(
                    model_name='generationjob',
                    name='created_by',
                ),
                migrations.DeleteModel(
                    name='EvidenceJob',
                ),
                migrations.DeleteModel(
                    name='GenerationJob',
                ),
            ],
            database_operations=[],
        ),
    ]
