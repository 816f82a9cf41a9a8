"""Import benchmark: N synthetic PRM800K label lines into PostgreSQL, then grading on its own.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/stepwise .venv/bin/python bench/import.py \
        [--n 100000] [--unlabelled] [--keep]

Generates the lines with ``bench/synthetic.py`` into a temporary file (streamed, never held in
memory), imports them through ``imports.import_file`` (what ``import_solutions`` runs)
into a fresh campaign with grading deferred, then grades the new solutions. Prints solutions/s,
steps/s, step labels/s, peak RSS of this process, and the grading rate separately. The campaign
is deleted afterwards unless ``--keep``. Target on a 2-core machine: >= 3,000 solutions/s (about
30,000 steps/s) with peak RSS < 500 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="lines (solutions)")
    parser.add_argument("--steps", type=int, default=10, help="mean steps per solution")
    parser.add_argument("--unlabelled", action="store_true", help="lines without labels")
    parser.add_argument("--keep", action="store_true", help="keep the campaign afterwards")
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)  # the database may predate the newest migrations

    from bench.synthetic import write_jsonl
    from imports.pipeline import import_file
    from labeling.grading import Grader, solutions_grade
    from labeling.models import Campaign, Solution

    if connection.vendor != "postgresql":
        print("note: DATABASE_URL is not PostgreSQL; the target is for PostgreSQL", file=sys.stderr)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.jsonl"
        started = time.monotonic()
        write_jsonl(path, args.n, steps=args.steps, labelled=not args.unlabelled)
        size = path.stat().st_size / 1e6
        print(f"generated {args.n:,} lines ({size:.0f} MB) in {time.monotonic() - started:.1f}s")

        campaign = Campaign.objects.create(
            slug=f"bench-import-{int(time.time())}", name="bench import"
        )
        rss_before = peak_rss_mb()
        backend = _backend_cpu()
        cpu, started = time.process_time(), time.monotonic()
        result = import_file(path, campaign=campaign, fmt="prm800k", grade=False)
        seconds = time.monotonic() - started
        cpu = time.process_time() - cpu
        backend = _backend_cpu() - backend if backend is not None else None
        rss = peak_rss_mb()

    print(
        f"import: {result.solutions_created:,} solutions, {result.steps_created:,} steps, "
        f"{result.assignments_created:,} assignments, {result.step_labels_created:,} step "
        f"labels, {result.problems_created:,} problems in {seconds:.1f}s (validation included)"
    )
    print(f"  {result.solutions_created / seconds:,.0f} solutions/s")
    print(f"  {result.steps_created / seconds:,.0f} steps/s")
    print(f"  {result.step_labels_created / seconds:,.0f} step labels/s")
    print(f"  peak RSS {rss:.0f} MB (before the import: {rss_before:.0f} MB)")
    per = 1000 / result.solutions_created
    print(
        f"  CPU per 1,000 solutions: this process {cpu * per:.2f}s"
        + ("" if backend is None else f", database backend {backend * per:.2f}s")
    )

    started = time.monotonic()
    grading = solutions_grade(solutions=Solution.objects.filter(campaign=campaign))
    seconds = time.monotonic() - started
    Grader.shared().close()  # so that its workers count in RUSAGE_CHILDREN
    print(
        f"grading: {grading.solutions:,} solutions, {grading.pairs:,} distinct pairs in "
        f"{seconds:.1f}s: {grading.solutions / seconds:,.0f} solutions/s, "
        f"{grading.pairs / seconds:,.0f} pairs/s; {grading.graded:,} decided; "
        f"math-verify workers' peak RSS {peak_rss_mb(resource.RUSAGE_CHILDREN):.0f} MB "
        "(0: plain integers need none)"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.keep:
        _drop(campaign.pk)


def _backend_cpu() -> float | None:
    """CPU seconds used so far by this connection's PostgreSQL backend (same machine only)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _drop(campaign_id: int) -> None:
    """Delete the bench campaign with a few set-based statements (the ORM's cascade collects
    every row in Python)."""
    from django.db import connection, transaction

    from labeling.models import Assignment, Campaign, Problem, Solution, Step, StepLabel

    q = connection.ops.quote_name
    t = {m: q(m._meta.db_table) for m in (Assignment, Campaign, Problem, Solution, Step, StepLabel)}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {t[StepLabel]} WHERE assignment_id IN "
            f"(SELECT id FROM {t[Assignment]} WHERE campaign_id = %s)",
            [campaign_id],
        )
        cursor.execute(f"DELETE FROM {t[Assignment]} WHERE campaign_id = %s", [campaign_id])
        cursor.execute(
            f"DELETE FROM {t[Step]} WHERE solution_id IN "
            f"(SELECT id FROM {t[Solution]} WHERE campaign_id = %s)",
            [campaign_id],
        )
        cursor.execute(f"DELETE FROM {t[Solution]} WHERE campaign_id = %s", [campaign_id])
        cursor.execute(f"DELETE FROM {t[Problem]} WHERE campaign_id = %s", [campaign_id])
        Campaign.objects.filter(pk=campaign_id).delete()  # memberships go with it


if __name__ == "__main__":
    main()
