"""REST API benchmark: cursor-paginated lists on a large campaign, first page vs deep pages.

What it measures: the server time of ``GET /api/campaigns/<slug>/solutions/`` and
``.../labels/`` (100 rows a page) authenticated with an API token, on the first page and after
following ``next`` deep into the list, plus the same with a filter. Cursor pagination reads
``WHERE id > cursor ORDER BY id LIMIT 101``: no OFFSET and no COUNT, so a deep page should cost
what the first one does. It also times token authentication alone (``GET /api/tokens/``).

How: Django's test client in this process (full middleware stack, no network), PostgreSQL.
Data: ``--solutions`` solutions of 3 steps with one submitted assignment each (3 labels).

    DATABASE_URL is not used: BENCH_DATABASE_URL (default below) is dropped and recreated.
    .venv/bin/python -m bench.api_pages [--solutions 100000] [--requests 200]
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
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/sw_bench_api_pages"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solutions", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per case")
    parser.add_argument("--deep", type=int, default=500, help="pages followed for 'deep'")
    return parser.parse_args()


def load(n: int):
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotators.services import api_token_create
    from labeling.models import Assignment, Campaign, Membership, Problem, Solution, Step, StepLabel

    campaign = Campaign.objects.create(slug="bench", name="Bench")
    User = get_user_model()
    manager = User.objects.create_user(username="bench-manager", password="x")
    Membership.objects.create(user=manager, campaign=campaign, role="manager")
    rater = User.objects.create(username="rater")
    problems = Problem.objects.bulk_create(
        (
            Problem(campaign=campaign, text=f"Problem {i}", content_hash=Problem.hash_text(str(i)))
            for i in range(n)
        ),
        batch_size=5000,
    )
    solutions = Solution.objects.bulk_create(
        (
            Solution(
                campaign=campaign,
                problem=p,
                generator="g" if i % 2 else "h",
                answer_is_correct=bool(i % 3),
                content_hash=str(i),
            )
            for i, p in enumerate(problems)
        ),
        batch_size=5000,
    )
    steps = Step.objects.bulk_create(
        (Step(solution=s, index=j, text=f"step {j}") for s in solutions for j in range(3)),
        batch_size=10_000,
    )
    now = timezone.now()
    work = Assignment.objects.bulk_create(
        (
            Assignment(
                campaign=campaign,
                solution=s,
                annotator=rater,
                status="submitted",
                submitted_at=now,
                finish_reason="solution",
                submission_key=f"k{i}",
            )
            for i, s in enumerate(solutions)
        ),
        batch_size=5000,
    )
    StepLabel.objects.bulk_create(
        (
            StepLabel(assignment=a, step=steps[i * 3 + j], rating=1)
            for i, a in enumerate(work)
            for j in range(3)
        ),
        batch_size=10_000,
    )
    _, key = api_token_create(user=manager, name="bench")
    return campaign, key


def timed(client, url: str, n: int, headers: dict) -> tuple[list[float], int]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(url, headers=headers)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:200]
    return times, len(response.json().get("results", []))


def report(name: str, times: list[float], rows: int) -> None:
    times = sorted(times)
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    print(
        f"{name:<44} p50 {statistics.median(times):6.1f} ms  p95 {p(0.95):6.1f} ms  ({rows} rows)"
    )


def main() -> None:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    os.environ["DATABASE_URL"] = url
    os.environ["DB_CONN_MAX_AGE"] = "60"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    os.environ["STEPWISE_FAST_HASHER"] = "true"
    os.environ["ALLOWED_HOSTS"] = "testserver,localhost"
    print(f"database {url} (dropped and recreated)")
    from bench.fresh_db import fresh_database

    fresh_database(url)
    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    started = time.perf_counter()
    campaign, key = load(args.solutions)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"loaded {args.solutions} solutions, {3 * args.solutions} labels in "
        f"{time.perf_counter() - started:.1f} s"
    )

    client = Client()
    headers = {"Authorization": f"Token {key}"}
    base = f"/api/campaigns/{campaign.slug}/"
    report(
        "tokens (authentication + 1 row)", *timed(client, "/api/tokens/", args.requests, headers)
    )
    for name in ("solutions", "labels"):
        first = base + f"{name}/"
        report(f"{name}: first page", *timed(client, first, args.requests, headers))
        url = first
        for _ in range(args.deep):
            url = client.get(url, headers=headers).json()["next"]
        report(f"{name}: page {args.deep + 1}", *timed(client, url, args.requests, headers))
    report(
        "solutions?answer=wrong&generator=g",
        *timed(client, base + "solutions/?answer=wrong&generator=g", args.requests, headers),
    )


if __name__ == "__main__":
    main()
