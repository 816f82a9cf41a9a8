"""Screening scores kappa with gold and first errors found (``labeling.queue.gold``): the default
pass mark becomes 0.35, and campaigns still on the old default (0.75, a share of steps alike that
an always-positive rater reached) move to it. A threshold a manager chose is kept; decided
screenings keep their outcome and the score they had."""

from django.db import migrations, models

OLD, NEW = 0.75, 0.35


def forwards(apps, schema_editor):
    apps.get_model("labeling", "Campaign").objects.filter(screening_threshold=OLD).update(
        screening_threshold=NEW
    )


def backwards(apps, schema_editor):
    apps.get_model("labeling", "Campaign").objects.filter(screening_threshold=NEW).update(
        screening_threshold=OLD
    )


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0014_al_scoring_endpoint"),
    ]

    operations = [
        migrations.AlterField(
            model_name="campaign",
            name="screening_threshold",
            field=models.FloatField(
                default=0.35,
                help_text=(
                    "Score against gold needed to pass screening: the mean of Cohen's kappa with"
                    " the gold ratings and the share of gold first errors found (0 for a careless"
                    " rater, 1 for a perfect one)."
                ),
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
