"""python manage.py export_dataset --campaign SLUG --format FORMAT --out PATH [policy options]"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exports.files import write_export
from exports.formats.options import FORMAT_OPTIONS, FormatOption
from exports.formats.registry import FORMATS
from exports.policy import POLICY_OPTIONS, ExportError, LabelPolicy, Option
from labeling.models import Campaign


def add_policy_option(group: argparse._ArgumentGroup, option: Option) -> None:
    """One policy option's flag, from its declaration: ``--neutral``, ``--[no-]reviewed-only``."""
    # argparse formats help with %, so a literal one is doubled.
    common = {"default": option.default, "help": option.help.replace("%", "%%")}
    if option.type is bool:
        group.add_argument(option.flag, action=argparse.BooleanOptionalAction, **common)
    elif option.choices:
        group.add_argument(option.flag, choices=option.values, **common)
    else:
        group.add_argument(option.flag, type=option.type, **common)


def add_format_option(group: argparse._ArgumentGroup, option: FormatOption) -> None:
    """One format option's flag, from its declaration; a flag not given leaves the format's
    default (and a format without the option is not told about it)."""
    text = f"{option.scope}: {option.help}".replace("%", "%%")
    if option.type is bool:
        group.add_argument(option.flag, action="store_true", default=None, help=text)
    else:
        group.add_argument(option.flag, type=option.type, default=None, help=text)


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
        for option in POLICY_OPTIONS:
            add_policy_option(policy, option)
        formats = parser.add_argument_group(
            "format options (TRL's are PRMTrainer's settings, docs/exports.md)"
        )
        for format_option in FORMAT_OPTIONS:
            add_format_option(formats, format_option)
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
        show = opts["progress"] if opts["progress"] is not None else sys.stderr.isatty()
        given = (o.name for o in FORMAT_OPTIONS)
        options = {name: opts[name] for name in given if opts[name] is not None}
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
                policy=LabelPolicy(**{o.name: opts[o.name] for o in POLICY_OPTIONS}),
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
        if check := manifest.get("length_check"):
            before, after = check["as_exported"], check["as_written"]
            self.stdout.write(
                f"at max_length {check['max_length']}: {before['records_losing_negative']} of "
                f"{before['records_with_negative']} records with a negative label would lose it "
                f"({before['labels_cut']['negative']} negative, {before['labels_cut']['positive']}"
                f" positive labels cut); as written: {after['labels_cut']['negative']} negative, "
                f"{after['labels_cut']['positive']} positive labels cut"
            )
