"""``manage.py seed_demo``: the demo campaign with real data from ``demo/``, a demo manager and a
demo annotator. Running it again changes nothing but the two passwords (reset to the printed one).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from imports.pipeline import import_file
from labeling import events
from labeling.models import Campaign, Membership

DEMO_DIR = settings.ASSETS_DIR / "demo"
SLUG = "demo"
PASSWORD = "stepwise-demo"
# (file, format, options): open work first, then labelled history, then gold for quality control.
FILES = [
    ("gsm8k_model_solutions.jsonl", "jsonl", {}),
    ("qwen25math_math_samples.jsonl", "jsonl", {}),
    ("prm800k_phase1_train_examples.jsonl", "prm800k", {}),
    ("prm800k_phase2_train_examples.jsonl", "prm800k", {}),
    ("prm800k_phase1_trajectories.jsonl", "prm800k-trajectories", {}),
    ("processbench_samples.jsonl", "processbench", {"as_gold": "qc"}),
]
INSTRUCTIONS = """\
Rate every step of the solution, one at a time:

- **+1 (positive)**: correct and a step towards the answer;
- **0 (neutral)**: correct but unhelpful, or ambiguous;
- **-1 (negative)**: wrong, or based on a wrong step.

The first negative step ends the solution: you may write a correction. Flag a step you are unsure
of. Report a problem that cannot be solved as stated.
"""
USERS = [("demo-manager", Membership.Role.MANAGER), ("demo-annotator", Membership.Role.ANNOTATOR)]


class Command(BaseCommand):
    help = "Create or complete the demo campaign, its manager and annotator (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--password", default=PASSWORD, help="password of both demo accounts")
        parser.add_argument(
            "--force", action="store_true", help="run even with STEPWISE_PRODUCTION set"
        )

    def handle(self, *args, password: str, force: bool, **options) -> None:
        if getattr(settings, "PRODUCTION", False) and not force:
            raise CommandError("refusing to create demo accounts in production (use --force)")
        campaign, created = Campaign.objects.get_or_create(
            slug=SLUG,
            defaults={
                "name": "Demo: grade-school and competition math",
                "instructions": INSTRUCTIONS,
                "qc_rate": 0.1,
                # The worker (started by `make run`) retrains the PRM and reorders the queue
                # after every 25 new step labels; the import of the labelled files queues the first
                # run (labeling.events.solutions_imported, to which active learning listens).
                "active_learning": True,
                "al_retrain_every": 25,
            },
        )
        created = labels = 0
        for name, fmt, opts in FILES:
            result = import_file(DEMO_DIR / name, campaign=campaign, fmt=fmt, **opts)
            created += result.solutions_created
            labels += result.step_labels_created
            self.stdout.write(
                f"  {name}: +{result.solutions_created} solutions "
                f"({result.solutions_existing} already there), "
                f"+{result.assignments_created} labelled"
            )
        with transaction.atomic():
            for username, role in USERS:
                user, _ = get_user_model().objects.get_or_create(username=username)
                user.set_password(password)
                user.save(update_fields=["password"])
                Membership.objects.update_or_create(
                    user=user,
                    campaign=campaign,
                    defaults={"role": role, "status": Membership.Status.ACTIVE},
                )
        if created:
            answers = events.publish(
                events.solutions_imported,
                campaign_id=campaign.pk,
                solutions_created=created,
                labels_created=labels,
            )
            for answer in filter(None, answers):
                self.stdout.write(f"  waiting for the worker: {answer}")
        total = campaign.solutions.count()
        self.stdout.write(
            f"Demo campaign {campaign.name!r} ({'created' if created else 'ready'}): "
            f"{total} solutions, {campaign.solutions.filter(is_open=True).count()} open."
        )
        self.stdout.write("Demo logins (demo data only; never seed production):")
        for username, role in USERS:
            self.stdout.write(f"  {role:<9}  user {username}  password {password}")
