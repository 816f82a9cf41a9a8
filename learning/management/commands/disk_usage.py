"""``manage.py disk_usage [--reclaim] [--json]``: the media's disk use by campaign and area,
what the retention rule and the orphans would free, and (``--reclaim``) freeing it."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from learning.disk import disk_usage, reclaim


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


class Command(BaseCommand):
    help = (
        "Report the media's disk use per campaign (PRM checkpoints, runs and caches; exports; "
        "uploads) and orphans; --reclaim deletes what the retention rule and the orphans free."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reclaim", action="store_true", help="Delete what may go.")
        parser.add_argument("--json", action="store_true", help="One JSON object, for scripts.")

    def handle(self, *args: Any, **opts: Any) -> None:
        rows = disk_usage()
        freed = reclaim(rows) if opts["reclaim"] else 0
        if opts["json"]:
            body = {
                "areas": [
                    {
                        "area": r.area,
                        "campaign": r.campaign,
                        "bytes": r.bytes,
                        "reclaimable_bytes": r.reclaimable_bytes,
                        "reclaimable": r.reclaimable,
                    }
                    for r in rows
                ],
                "total_bytes": sum(r.bytes for r in rows),
                "reclaimable_bytes": sum(r.reclaimable_bytes for r in rows),
                "freed_bytes": freed,
            }
            self.stdout.write(json.dumps(body, indent=2))
            return
        self.stdout.write(f"{'campaign':<24} {'area':<10} {'size':>10} {'reclaimable':>12}")
        for r in rows:
            if r.bytes or r.reclaimable:
                self.stdout.write(
                    f"{r.campaign or '-':<24} {r.area:<10} {_size(r.bytes):>10} "
                    f"{_size(r.reclaimable_bytes):>12}"
                )
        total = sum(r.bytes for r in rows)
        reclaimable = sum(r.reclaimable_bytes for r in rows)
        self.stdout.write(f"{'total':<24} {'':<10} {_size(total):>10} {_size(reclaimable):>12}")
        if opts["reclaim"]:
            self.stdout.write(f"Freed {_size(freed)}.")
        elif reclaimable:
            self.stdout.write("Run with --reclaim to free what is reclaimable.")
