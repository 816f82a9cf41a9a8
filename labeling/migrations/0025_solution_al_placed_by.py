"""The strategy that placed each solution on the strategy arm (``Solution.al_placed_by``).

Solutions placed before the field existed get the strategy their campaign's runs measured them
for: the campaign's own, or under ``auto`` the one its last succeeded run ordered by (what the
data-efficiency estimate attributed them to until now).
"""

from django.db import migrations, models


def placed_by_backfill(apps, schema_editor):
    Campaign = apps.get_model("labeling", "Campaign")
    Solution = apps.get_model("labeling", "Solution")
    ActiveLearningRun = apps.get_model("learning", "ActiveLearningRun")
    db = schema_editor.connection.alias
    placed = Solution.objects.using(db).filter(al_arm="strategy", al_placed_by="")
    for campaign in Campaign.objects.using(db).filter(
        pk__in=placed.values("campaign_id").distinct()
    ):
        strategy = campaign.al_strategy
        if strategy == "auto":
            head = (
                ActiveLearningRun.objects.using(db)
                .filter(campaign=campaign, status="succeeded")
                .order_by("-created_at", "-pk")
                .values_list("queue_head", flat=True)
                .first()
            )
            strategy = (head or {}).get("strategy") or "uniform"
        placed.filter(campaign=campaign).update(al_placed_by=strategy)


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0024_al_strategy_machines_disagree"),
        ("learning", "0004_run_data_efficiency"),
    ]

    operations = [
        migrations.AddField(
            model_name="solution",
            name="al_placed_by",
            field=models.CharField(blank=True, db_default="", default="", max_length=20),
        ),
        migrations.RunPython(placed_by_backfill, migrations.RunPython.noop),
        # auto's label says it tries the others (choices only: no change to the column)
        migrations.AlterField(
            model_name="campaign",
            name="al_strategy",
            field=models.CharField(
                choices=[
                    ("convincing-wrong", "convincing wrong answers (PRM800K)"),
                    ("uncertainty", "uncertainty (where the PRM is least sure)"),
                    ("verifier", "imported verifier score"),
                    ("uniform", "uniform (random order, the control)"),
                    ("mixed", "half uncertainty, half convincing wrong answers"),
                    ("served-prm", "convincing wrong answers by the served PRM"),
                    ("ensemble", "ensemble disagreement (PRMs on resamples of the labels)"),
                    ("machines-disagree", "where the machines disagree (PRM, rollouts, judge)"),
                    ("auto", "auto (tries the others, moves to one measured to pay here)"),
                ],
                db_default="uniform",
                default="uniform",
                help_text="How active learning orders the queue.",
                max_length=20,
            ),
        ),
    ]
