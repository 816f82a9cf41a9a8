"""``manage.py grade_answers --campaign SLUG``: grade the final answers an import left ungraded."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from labeling.grading import solutions_grade
from labeling.models import Campaign, Solution


class Command(BaseCommand):
    help = "Grade solutions' final answers against their problems' ground truth (math-verify)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument(
            "--all", action="store_true", help="grade again the solutions already graded"
        )

    def handle(self, *args, campaign: str, **opts) -> None:
        target = Campaign.objects.filter(slug=campaign).first()
        if target is None:
            raise CommandError(f"no campaign {campaign!r}")
        result = solutions_grade(
            solutions=Solution.objects.filter(campaign=target),
            regrade=opts["all"],
            progress=sys.stderr.isatty(),
        )
        self.stdout.write(
            f"{result.solutions} solutions with an answer and a ground truth, "
            f"{result.pairs} distinct pairs: {result.graded} graded, "
            f"{result.solutions - result.graded} undecided, in {result.seconds:.1f}s"
        )
