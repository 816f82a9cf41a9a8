"""Labelling page benchmark: server time to serve the next solution after a submit (issue 4).

What it measures: the htmx ``POST .../submit/`` that the page sends when the annotator presses
Enter. One request submits the drafts (``assignment_submit``), claims the next solution
(``assignment_next``: the one-statement ``SKIP LOCKED`` claim on PostgreSQL), reads it
(``assignment_view``) and renders its workspace (Markdown + math placeholders for every step,
forms, partials). Its response *is* the next solution, so this is the whole wait between two
solutions, less the network.

How: Django's test client in this process, against PostgreSQL, with the full middleware stack
(sessions in the database, authentication, messages, htmx). It times the server's work only:
no HTTP parsing, no network and no client, which a real deployment adds on top (a fraction of a
millisecond for gunicorn on the same machine; ``bench/queue_claims.py`` measures the queue over real
HTTP under load). One annotator, so no lock waits: this is the latency floor of the page, not a
load test. Database connections are persistent (``--conn-max-age``), as in production; with 0
every request also pays a new connection.

Data: a campaign with ``--solutions`` open solutions (real Qwen2.5-Math solutions from
``demo/``, each made unique so no cache hides the Markdown rendering) and a history of submitted
assignments with labels by other annotators, so the planner sees full tables. Before each submit
the annotator rates every step over HTTP like the page (those requests are timed too).

    DATABASE_URL is not used: BENCH_DATABASE_URL (default below) is dropped and recreated.
    .venv/bin/python bench/label_next.py [--submits 500] [--solutions 5000]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/sw_bench_label_next"
SOURCE = ROOT / "demo" / "qwen25math_math_samples.jsonl"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submits", type=int, default=500, help="timed submits (default 500)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed submits first")
    parser.add_argument("--solutions", type=int, default=5000, help="open solutions")
    parser.add_argument("--history", type=int, default=5000, help="submitted by others")
    parser.add_argument("--conn-max-age", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile (CPU time) the timed submits only, into FILE (pstats)",
    )
    parser.add_argument(
        "--show-sql", action="store_true", help="print the statements of the last warm-up submit"
    )
    return parser.parse_args()


def real_solutions() -> list[tuple[str, str, list[str]]]:
    """(problem, ground truth, steps) from the Qwen2.5-Math extract: steps split on blank lines."""
    out = []
    for line in SOURCE.read_text().splitlines():
        row = json.loads(line)
        for response in row["response"]:
            steps = [s.strip() for s in response.split("\n\n") if s.strip()]
            out.append((row["question"], str(row["gt"]), steps))
    return out


def load(*, solutions: int, history: int, seed: int):
    """The campaign, its open solutions and a history of other annotators' submitted work."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from labeling.models import Assignment, Campaign, Membership, Problem, Solution, Step, StepLabel

    rng = random.Random(seed)
    source = real_solutions()
    campaign = Campaign.objects.create(slug="bench", name="Bench", overlap=1, qc_rate=0.0)
    User = get_user_model()
    others = User.objects.bulk_create(User(username=f"other{i}") for i in range(20))
    Membership.objects.bulk_create(Membership(user=u, campaign=campaign) for u in others)
    annotator = User.objects.create_user(username="bench-annotator", password="x")
    Membership.objects.create(user=annotator, campaign=campaign)

    total = solutions + history
    problems = Problem.objects.bulk_create(
        Problem(
            campaign=campaign,
            text=f"{source[i % len(source)][0]} (#{i})",
            ground_truth_answer=source[i % len(source)][1],
            content_hash=Problem.hash_text(f"{i}"),
        )
        for i in range(total)
    )
    sols = Solution.objects.bulk_create(
        Solution(
            campaign=campaign,
            problem=problems[i],
            generator="qwen2.5-math-instruct",
            priority=rng.random(),
            content_hash=Solution.hash_content(str(i), []),
            is_open=i < solutions,
            assignment_count=0 if i < solutions else 1,
        )
        for i in range(total)
    )
    steps = Step.objects.bulk_create(
        (
            Step(solution=s, index=j, text=f"{text} (#{i}.{j})")
            for i, s in enumerate(sols)
            for j, text in enumerate(source[i % len(source)][2])
        ),
        batch_size=5000,
    )
    by_solution: dict[int, list] = {}
    for step in steps:
        by_solution.setdefault(step.solution_id, []).append(step)
    now = timezone.now()
    done = Assignment.objects.bulk_create(
        Assignment(
            campaign=campaign,
            solution=s,
            annotator=others[i % len(others)],
            status="submitted",
            submitted_at=now,
            finish_reason="solution",
            submission_key=f"h{i}",
        )
        for i, s in enumerate(sols[solutions:])
    )
    StepLabel.objects.bulk_create(
        (
            StepLabel(assignment=a, step=st, rating=1, time_spent_ms=1000)
            for a in done
            for st in by_solution[a.solution_id]
        ),
        batch_size=5000,
    )
    return campaign, annotator, len(steps)


class Phases:
    """Wall and CPU time of the services a submit calls (wrapped here; behaviour unchanged)."""

    def __init__(self) -> None:
        self.current: dict[str, tuple[float, float]] = {}
        self.samples: dict[str, list[tuple[float, float]]] = {}
        self.on = False

    def wrap(self, module, name: str, label: str) -> None:
        inner = getattr(module, name)

        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                if self.on:
                    wall = (time.perf_counter() - wall) * 1000
                    cpu = (time.process_time() - cpu) * 1000
                    w, c = self.current.get(label, (0.0, 0.0))
                    self.current[label] = (w + wall, c + cpu)

        setattr(module, name, timed)

    def start(self) -> None:
        self.current = {}
        self.on = True

    def stop(self, total: tuple[float, float]) -> None:
        self.on = False
        rest = (
            total[0] - sum(w for w, _ in self.current.values()),
            total[1] - sum(c for _, c in self.current.values()),
        )
        for label, value in [*self.current.items(), ("middleware, session, auth, rest", rest)]:
            self.samples.setdefault(label, []).append(value)

    def report(self) -> None:
        for label, values in self.samples.items():
            wall = statistics.median(w for w, _ in values)
            cpu = statistics.median(c for _, c in values)
            print(f"    {label:34s} wall {wall:6.2f} ms   CPU {cpu:6.2f} ms")


def commit_probe(connection, table: str, pk: int, n: int = 50) -> float:
    """Median milliseconds of a one-row UPDATE and its durable COMMIT: the disk's mood now."""
    from django.db import transaction

    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET priority = priority WHERE id = %s", [pk])
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def percentiles(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100, method="inclusive")
    return (
        f"p50 {statistics.median(samples):6.2f} ms  p95 {q[94]:6.2f} ms  "
        f"p99 {q[98]:6.2f} ms  max {max(samples):6.2f} ms  (n={len(samples)})"
    )


def main() -> None:
    args = parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    os.environ["DATABASE_URL"] = url
    os.environ["DB_CONN_MAX_AGE"] = str(args.conn_max_age)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    os.environ["STEPWISE_FAST_HASHER"] = "true"
    print(f"database {url} (dropped and recreated)")
    from bench.fresh_db import fresh_database

    fresh_database(url)

    import django

    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from labeling.models import Assignment

    started = time.perf_counter()
    campaign, annotator, n_steps = load(
        solutions=args.solutions, history=args.history, seed=args.seed
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"loaded {args.solutions} open + {args.history} submitted solutions, {n_steps} steps "
        f"in {time.perf_counter() - started:.1f} s"
    )

    from labeling import queue, views
    from labeling.selectors import home, labelling

    phases = Phases()
    phases.wrap(labelling, "assignment_get", "read the assignment")
    phases.wrap(queue, "assignment_submit", "assignment_submit (1 commit)")
    phases.wrap(queue, "assignment_next", "assignment_next (1 commit)")
    phases.wrap(labelling, "assignment_view", "assignment_view")
    phases.wrap(views, "render", "render the workspace")
    # What the page says about where one is (issue 27: kept counts, never the campaign's).
    phases.wrap(home, "campaign_counts", "campaign counts (kept)")
    phases.wrap(home, "my_figures", "my figures (left, today, session)")
    phases.wrap(labelling, "my_recent_rejections", "my recent rejections")

    load_before = os.getloadavg()[0]
    commit_ms = commit_probe(connection, "labeling_solution", campaign.solutions.first().pk)
    client = Client(HTTP_HOST="localhost")
    client.force_login(annotator)
    hx = {"HTTP_HX_REQUEST": "true"}
    page = client.get(reverse("labeling:label", kwargs={"slug": campaign.slug}))
    assert page.status_code == 200
    assignment = Assignment.objects.get(annotator=annotator, status="leased")
    submit_ms: list[float] = []
    submit_cpu: list[float] = []
    rate_ms: list[float] = []
    rate_cpu: list[float] = []
    queries: list[int] = []
    # Profiling slows what it profiles: the figures of a --profile run are not the bench's.
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    for i in range(args.warmup + args.submits):
        timed = i >= args.warmup
        n = assignment.solution.steps.count()
        for index in range(n):
            url = reverse("labeling:rate", kwargs={"slug": campaign.slug, "pk": assignment.pk})
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.post(url, {"step_index": index, "rating": 1, "time_ms": 900}, **hx)
            if timed:
                rate_ms.append((time.perf_counter() - t0) * 1000)
                rate_cpu.append((time.process_time() - c0) * 1000)
            assert response.status_code == 200, response.content[:300]
        url = reverse("labeling:submit", kwargs={"slug": campaign.slug, "pk": assignment.pk})
        data = {"submission_key": f"web-{assignment.pk}", "total_time_ms": 9000}
        if timed:
            phases.start()
            if profiler is not None:
                profiler.enable()
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.post(url, data, **hx)
            submit_ms.append((time.perf_counter() - t0) * 1000)
            submit_cpu.append((time.process_time() - c0) * 1000)
            if profiler is not None:
                profiler.disable()
            phases.stop((submit_ms[-1], submit_cpu[-1]))
        else:
            # Counting queries wraps the cursor (slower): only in the untimed warm-up.
            with CaptureQueriesContext(connection) as captured:
                response = client.post(url, data, **hx)
            queries.append(len(captured.captured_queries))
            if args.show_sql and i == args.warmup - 1:
                for n_query, query in enumerate(captured.captured_queries, 1):
                    print(f"  {n_query:2d}. {query['sql'][:160]}")
        assert response.status_code == 200, response.content[:300]
        following = Assignment.objects.get(annotator=annotator, status="leased")
        assert f'data-assignment="{following.pk}"'.encode() in response.content
        assignment = following

    load_after = os.getloadavg()[0]
    if profiler is not None:
        profiler.dump_stats(args.profile)
        print(f"profile of the timed submits: {args.profile} (its timings include cProfile's cost)")
    print(
        f"\nmachine: {os.cpu_count()} CPUs, load average {load_before:.1f} before and "
        f"{load_after:.1f} after; one UPDATE + durable COMMIT: {commit_ms:.2f} ms (median)"
    )
    print(f"{args.submits} submits, each answered with the next solution ({args.warmup} warm-up):")
    print(f"  submit + next solution   wall {percentiles(submit_ms)}")
    print(f"                           CPU  {percentiles(submit_cpu)}")
    print(f"  rate one step            wall {percentiles(rate_ms)}")
    print(f"                           CPU  {percentiles(rate_cpu)}")
    print(f"  SQL queries per submit   {statistics.median(queries):.0f} (median of the warm-up)")
    print("  where a submit's time goes (medians):")
    phases.report()
    p95 = statistics.quantiles(submit_ms, n=100, method="inclusive")[94]
    print(f"\ntarget p95 < 50 ms: {'met' if p95 < 50 else 'NOT met'} ({p95:.2f} ms)")


if __name__ == "__main__":
    main()
