"""Data browser benchmark: PostgreSQL, ~100,000 solutions and ~1,000,000 step labels.

Creates a database of its own (``bench/fresh_db.py``: dropped, created, migrated), builds the
manager-pages campaign of ``bench/dashboard.py`` in it (synthetic PRM800K phase 2 lines from
``bench/synthetic.py`` loaded with COPY: 800,000 labels, then a second annotator on every fourth
solution, quality-control solutions with gold, reviews; so the browser reads real history rows),
gives every solution a PRM score, and times through Django's test client (the whole request):

- the browser page, searched and filtered (a phrase, a common word; wrong answer, a negative
  step, a PRM range, disagreement; sorted by queue order, PRM score, disagreement), and its
  second page (cursor);
- the adjudication queue (open: first page and third; all);
- the item page of solutions with one and with two annotators;
- before the kept disagreement count (``Solution.disputed_steps``): the old sort's query
  (computed per match) and the old adjudication queue's GROUP BY over every label, alone;
- a bulk requeue of 10,000 solutions (a ``SolutionBulkAction`` job run as the worker runs it:
  one transaction, progress from a second connection).

Targets: pages p95 under 200 ms; the requeue under 10 s. It prints the machine's load average
with the figures (the machine is shared) and drops its database at the end. Connections: this
process's one, the job's progress thread's one, and the migration subprocess's one.

    .venv/bin/python bench/browser.py [--runs 30] [--keep]
    (BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/sw_bench_browser by default;
    --keep leaves the database for a later --reuse, which skips the build)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/sw_bench_browser"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (1 min), {five:.2f} (5 min), {os.cpu_count()} cores"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def time_pages(campaign, runs: int) -> list[tuple[str, list[float], int, int, int]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.db.models import Count
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment
    from django.urls import reverse

    from labeling.models import Assignment, Solution

    setup_test_environment()  # response.context, for the page's cursor and row count
    manager = get_user_model().objects.get(username="bench-manager")
    client = Client(HTTP_HOST="localhost")
    client.force_login(manager)
    browse = reverse("labeling:browser", kwargs={"slug": campaign.slug})
    annotator = Assignment.objects.filter(campaign=campaign).order_by("pk").first().annotator_id
    two = (
        Assignment.objects.filter(campaign=campaign, status="submitted")
        .values("solution_id")
        .annotate(n=Count("pk"))
        .filter(n=2)
        .order_by("solution_id")
        .first()["solution_id"]
    )
    one = Solution.objects.filter(campaign=campaign, assignment_count=1).order_by("pk").first().pk

    adjudications = reverse("annotators:adjudications", kwargs={"slug": campaign.slug})

    def item(pk: int) -> str:
        return reverse("labeling:browser-item", kwargs={"slug": campaign.slug, "pk": pk})

    first_page = "?q=%22probability+expected%22&answer=wrong&negative=true&sort=queue"
    page = client.get(browse + first_page)
    cursor = page.context["page"].next_cursor
    pages = [
        ("browse: no filter, queue order", browse),
        ('browse: "probability expected" + wrong + negative', browse + first_page),
        ("  ... its next page (cursor)", browse + first_page + f"&cursor={cursor or ''}"),
        ("browse: q=triangle (common word) + wrong", browse + "?q=triangle&answer=wrong"),
        ("browse: wrong + negative + PRM 0.8-1, by PRM", browse + "?answer=wrong&negative=true"
         "&prm_min=0.8&prm_max=1&sort=prm"),
        ("browse: disagree, by disagreement", browse + "?disagree=true&sort=disagreement"),
        ("browse: by one annotator, reviewed", browse + f"?annotator={annotator}"
         "&review=accepted,rejected"),
        ("browse: flagged, open, newest", browse + "?flagged=true&state=open&sort=newest"),
        ("adjudication queue: open, first page", adjudications),
        ("adjudication queue: open, page 3", adjudications + "?page=3"),
        ("adjudication queue: all, first page", adjudications + "?state=all"),
        ("item: one annotator", item(one)),
        ("item: two annotators", item(two)),
    ]  # fmt: skip
    results = []
    for label, path in pages:
        for _ in range(3):
            response = client.get(path)
        samples, queries = [], 0
        for _ in range(runs):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(path)
                samples.append((time.perf_counter() - started) * 1000)
            queries = len(captured)
        context = response.context
        rows = (
            len(context["page"].solutions)
            if "page" in context and hasattr(context["page"], "solutions")
            else len(context.get("rows", []))
        )
        results.append((label, samples, queries, response.status_code, rows))
    return results


def time_computed(campaign, runs: int) -> list[tuple[str, list[float]]]:
    """Before the kept count: the sort computing each match's disagreements per request, and the
    adjudication queue grouping every label of the campaign (the same queries as before)."""
    from django.db.models import F, OuterRef, Subquery
    from django.db.models.functions import Left

    from labeling.models import Adjudication, Solution, StepLabel, disputed_step_count
    from labeling.templatetags.labeling_tags import EXCERPT_SOURCE_CHARS

    def sort() -> None:
        list(
            Solution.objects.filter(campaign=campaign)
            .annotate(sort_key=disputed_step_count())
            .order_by("-sort_key", "pk")
            .values_list("pk", "sort_key")[:51]
        )

    def adjudication() -> None:
        # The open queue's first page as it was read: every regular label grouped, then paged.
        current = Adjudication.objects.filter(step_id=OuterRef("step_id"), replaced_at__isnull=True)
        rows = StepLabel.objects.filter(
            assignment__campaign=campaign, assignment__solution__kind=Solution.Kind.REGULAR
        ).disputed_steps()
        rows = rows.annotate(
            decided=Subquery(current.values("rating")[:1]),
            solution_id=F("step__solution_id"),
            index=F("step__index"),
            problem=Left("step__solution__problem__text", EXCERPT_SOURCE_CHARS),
        ).filter(decided__isnull=True)
        list(rows.order_by("step__solution_id", "step__index")[:51])

    out = []
    for label, query in (("computed: disagreement sort (query)", sort),
                         ("computed: adjudication GROUP BY (query)", adjudication)):  # fmt: skip
        query()
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            query()
            samples.append((time.perf_counter() - started) * 1000)
        out.append((label, samples))
    return out


def time_requeue(campaign) -> tuple[int, float, float]:
    """A bulk requeue of the 10,000 solutions with the highest ids (a selection of ids)."""
    from django.contrib.auth import get_user_model

    from labeling.curation import actions as curation
    from labeling.curation.filters import SolutionFilter
    from labeling.models import Solution

    manager = get_user_model().objects.get(username="bench-manager")
    ids = list(
        Solution.objects.filter(campaign=campaign).order_by("-pk").values_list("pk", flat=True)
    )[:10_000]
    started = time.perf_counter()
    job = curation.bulk_action_create(
        campaign=campaign,
        action="requeue",
        solution_filter=SolutionFilter(values={"id": ids}),
        created_by=manager,
    )
    created = time.perf_counter() - started
    job = curation.bulk_action_run(job=job)
    total = time.perf_counter() - started
    assert job.status == "done", job.error
    return job.changed, created, total


def time_requeue_by_filter(campaign) -> tuple[int, float]:
    """A bulk requeue of everything a filter matches (PRM score 0.9 and up: about 10%)."""
    from labeling.curation import actions as curation
    from labeling.curation.filters import SolutionFilter

    started = time.perf_counter()
    job = curation.bulk_action_create(
        campaign=campaign,
        action="requeue",
        solution_filter=SolutionFilter.from_params({"prm_min": "0.9"}),
    )
    job = curation.bulk_action_run(job=job)
    assert job.status == "done", job.error
    return job.changed, time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed requests per page")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--reuse", action="store_true", help="reuse a database kept by --keep (no rebuild)"
    )
    args = parser.parse_args(argv)
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    from bench.fresh_db import fresh_database

    print(f"before: {load()}", flush=True)
    started = time.monotonic()
    if not args.reuse:
        fresh_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    os.environ["STEPWISE_SNAPSHOT_MAX_AGE"] = str(10**9)
    import django

    django.setup()
    from django.db import connection, connections

    try:
        from bench.dashboard import build, counts

        campaign = build(rebuild=not args.reuse)
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE labeling_solution SET prm_score = random() WHERE campaign_id = %s",
                [campaign.pk],
            )
            # What autovacuum does soon after a bulk load: statistics, and the visibility map
            # that lets counts read indexes only.
            for table in ("solution", "problem", "step", "assignment", "steplabel", "review"):
                cur.execute(f"VACUUM ANALYZE labeling_{table}")
        print(counts(campaign), flush=True)
        print(f"built in {time.monotonic() - started:.0f} s; {load()}", flush=True)

        print(f"\n{'':<52}{'status':>7}{'rows':>6}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
              f"{'queries':>9}")  # fmt: skip
        worst = 0.0
        for label, samples, queries, status, rows in time_pages(campaign, args.runs):
            p95 = percentile(samples, 0.95)
            worst = max(worst, p95)
            print(
                f"{label:<52}{status:>7}{rows:>6}{statistics.median(samples):>9.1f}{p95:>9.1f}"
                f"{max(samples):>9.1f}{queries:>9}",
                flush=True,
            )
        print(f"slowest page p95: {worst:.0f} ms (target < 200 ms); {load()}", flush=True)
        print("\nbefore the kept count (the old queries alone, without the page around them):")
        for label, samples in time_computed(campaign, max(3, args.runs // 6)):
            print(
                f"{label:<52}{'':>13}{statistics.median(samples):>9.1f}"
                f"{percentile(samples, 0.95):>9.1f}{max(samples):>9.1f}",
                flush=True,
            )
        print(load(), flush=True)

        changed, created, total = time_requeue(campaign)
        print(
            f"\nbulk requeue of {changed:,} solutions (a selection of ids): {total:.2f} s "
            f"(job created in {created:.2f} s; target < 10 s); {load()}",
            flush=True,
        )
        changed, seconds = time_requeue_by_filter(campaign)
        print(
            f"bulk requeue of {changed:,} solutions (filter prm_min=0.9): {seconds:.2f} s; "
            f"{load()}",
            flush=True,
        )
    finally:
        connections.close_all()
        if not args.keep:
            import psycopg

            name = url.rsplit("/", 1)[1]
            admin = url.rsplit("/", 1)[0] + "/postgres"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            print(f"dropped database {name}", flush=True)


if __name__ == "__main__":
    main()
