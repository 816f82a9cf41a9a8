"""`manage.py import_solutions PATH --campaign SLUG --format FORMAT` (docs/import-formats.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from imports.pipeline import FORMATS, ImportValidationError, import_file
from labeling.models import Campaign


class Command(BaseCommand):
    help = "Import problems, solutions and step labels into a campaign, all or nothing."

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--format", required=True, choices=sorted(FORMATS), dest="fmt")
        parser.add_argument(
            "--no-create",
            action="store_true",
            help="fail if the campaign does not exist (by default it is created)",
        )
        parser.add_argument(
            "--no-grade", action="store_true", help="leave answers ungraded (see grade_answers)"
        )
        parser.add_argument(
            "--as-gold",
            choices=["qc", "screening"],
            help="processbench labels / jsonl gold_ratings become gold ratings of this kind",
        )
        parser.add_argument("--generator", help="generator name for solutions that give none")
        parser.add_argument(
            "--labeler", help="account for prm800k-trajectories labels (default prm800k-phase1)"
        )
        parser.add_argument(
            "--split",
            default="auto",
            help="how solutions given as text become steps: auto (default), paragraphs, lines, "
            "numbered, or a regular expression that separates steps (docs/generation.md)",
        )

    def handle(self, *args, path: Path, campaign: str, fmt: str, **opts) -> None:
        target = Campaign.objects.filter(slug=campaign).first()
        created = target is None
        if created:
            if opts["no_create"]:
                raise CommandError(f"no campaign {campaign!r}")
            target = Campaign.objects.create(slug=campaign, name=campaign)
        options = {k: opts[k] for k in ("as_gold", "generator", "labeler", "split") if opts[k]}
        try:
            result = import_file(
                path,
                campaign=target,
                fmt=fmt,
                grade=not opts["no_grade"],
                progress=sys.stderr.isatty(),
                **options,
            )
        except ImportValidationError as e:
            if created:
                target.delete()  # still empty: the import wrote nothing
            raise CommandError(f"nothing imported:\n{e}") from None
        if created:
            self.stdout.write(f"created campaign {campaign!r}")
        self.stdout.write(
            f"{path.name}: {result.lines} lines; problems +{result.problems_created}; "
            f"solutions +{result.solutions_created} ({result.solutions_existing} already there"
            + (
                f", {result.solutions_gold_applied} given the file's gold ratings"
                if result.solutions_gold_applied
                else ""
            )
            + "), "
            f"steps +{result.steps_created}; assignments +{result.assignments_created} "
            f"({result.assignments_existing} already there), "
            f"step labels +{result.step_labels_created}; accounts +{result.users_created}; "
            f"in {result.seconds:.1f}s; answers graded: {result.solutions_graded}"
        )
