"""python manage.py export_dataset --campaign SLUG --format FORMAT --out PATH [policy options]"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exports.formats import (
    ANNOTATOR_CHOICES,
    FORMATS,
    MATH500_CHOICES,
    NEUTRAL_CHOICES,
    ExportError,
    LabelPolicy,
    write_export,
)
from labeling.models import Campaign

_DEFAULT = LabelPolicy()


class Command(BaseCommand):
    help = (
        "Export a campaign's labels in a format PRM trainers read, with a manifest beside it. "
        "With a train/test split, PATH's name gains .train / .test before its suffix."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--format", required=True, choices=list(FORMATS), dest="fmt")
        parser.add_argument("--out", required=True, type=Path, help="output file")
        policy = parser.add_argument_group("label policy")
        policy.add_argument("--neutral", choices=NEUTRAL_CHOICES, default=_DEFAULT.neutral)
        policy.add_argument(
            "--cut-after-first-negative",
            action=argparse.BooleanOptionalAction,
            default=_DEFAULT.cut_after_first_negative,
        )
        policy.add_argument(
            "--alternatives",
            action=argparse.BooleanOptionalAction,
            default=_DEFAULT.alternatives,
            help="each other rated candidate becomes its own example",
        )
        policy.add_argument("--annotators", choices=ANNOTATOR_CHOICES, default=_DEFAULT.annotators)
        policy.add_argument(
            "--include-quality-control",
            action=argparse.BooleanOptionalAction,
            default=_DEFAULT.include_quality_control,
        )
        policy.add_argument(
            "--include-screening",
            action=argparse.BooleanOptionalAction,
            default=_DEFAULT.include_screening,
        )
        policy.add_argument(
            "--reviewed-only",
            action=argparse.BooleanOptionalAction,
            default=_DEFAULT.reviewed_only,
            help="only assignments a reviewer accepted",
        )
        policy.add_argument("--test-fraction", type=float, default=_DEFAULT.test_fraction)
        policy.add_argument("--split-seed", type=int, default=_DEFAULT.split_seed)
        policy.add_argument("--math500", choices=MATH500_CHOICES, default=_DEFAULT.math500)
        parser.add_argument("--step-tag", help="math-shepherd's step tag (default ки)")
        parser.add_argument(
            "--progress",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="progress bar (default: when stderr is a terminal)",
        )

    def handle(self, *args, **opts) -> None:
        try:
            campaign = Campaign.objects.get(slug=opts["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign with slug {opts['campaign']!r}") from None
        names = LabelPolicy.__dataclass_fields__
        show = opts["progress"] if opts["progress"] is not None else sys.stderr.isatty()
        options = {"step_tag": opts["step_tag"]} if opts["step_tag"] else {}
        bar = None
        if show:
            from tqdm import tqdm

            bar = tqdm(total=0, unit="solution", desc=f"{campaign.slug} → {opts['fmt']}")

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            manifest = write_export(
                campaign=campaign,
                fmt=opts["fmt"],
                out=opts["out"],
                policy=LabelPolicy(**{k: v for k, v in opts.items() if k in names}),
                options=options,
                progress=progress if bar else None,
            )
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if bar:
                bar.close()
        for f in manifest["files"]:
            self.stdout.write(f"{f['name']}: {f['records']} records, sha256 {f['sha256']}")
        self.stdout.write(f"manifest: {manifest['manifest_name']}")
        self.stdout.write(json.dumps(manifest["counts"]))
