"""The SQL the queue benchmark runs beside the app: the app's own one-statement claim run straight
from psycopg (the ceiling the app's claims/s are compared with), the invariants checked over every
row afterwards, and the claim's candidate SELECT timed and planned with EXPLAIN ANALYZE.

The claim is the app's (``labeling.queue.claim.CLAIM_SKIP_LOCKED`` with ``claim_params``), not a
copy: a ceiling that leaves out a condition of the app's (it once lacked ``NOT archived``, so
PostgreSQL could not read the partial index ``solution_queue`` and the "ceiling" was a tenth of
what the statement makes) measures something else. The invariants are the rules themselves
(``Assignment.holds_slot_q``, ``open_expression``, ``Assignment.live_lease_q``) where the
models have them.

Used by ``bench/queue_claims.py``, which sets Django up on the benchmark's database first.
"""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime

import psycopg


def claim_statement(campaign_id: int, annotators: list[int]) -> tuple[str, list[dict]]:
    """The app's SKIP LOCKED claim and each annotator's parameters for it (regular solutions)."""
    from labeling.models import Campaign, Solution
    from labeling.queue.claim import CLAIM_SKIP_LOCKED, claim_params

    campaign = Campaign.objects.get(pk=campaign_id)
    now = datetime.now(UTC)
    params = []
    for a in annotators:
        p = claim_params(campaign=campaign, annotator_id=a, kind=Solution.Kind.REGULAR, now=now)
        # Plain strings for psycopg in the worker processes (the model's choices are enums).
        p["kind"], p["serve_again"] = str(p["kind"]), [str(s) for s in p["serve_again"]]
        params.append(p)
    return CLAIM_SKIP_LOCKED, params


def _raw_worker(url: str, sql: str, clients: list[dict], seconds: float) -> tuple[int, list]:
    done, latencies, lock = [0], [], threading.Lock()
    start_at = time.time() + 1.0  # every process starts together

    def client(params: dict) -> None:
        lease = params["expires"] - params["now"]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql, params, prepare=True).fetchall()
            time.sleep(max(0.0, start_at - time.time()))
            end = time.perf_counter() + seconds
            n, lat = 0, []
            while (t := time.perf_counter()) < end:
                params["now"] = datetime.now(UTC)
                params["expires"] = params["now"] + lease
                if conn.execute(sql, params, prepare=True).fetchone():
                    n += 1
                lat.append(time.perf_counter() - t)
            with lock:
                done[0] += n
                latencies.extend(lat)

    threads = [threading.Thread(target=client, args=(p,)) for p in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0], latencies


def raw_sql(url: str, campaign: int, annotators: list[int], seconds: float, procs: int = 4):
    """Claims per second of the app's claim statement alone, one connection per annotator."""
    from django.db import connections

    sql, params = claim_statement(campaign, annotators)
    connections.close_all()  # the worker processes are forked: they must not share it
    procs = max(1, min(procs, len(params)))
    chunks = [params[i::procs] for i in range(procs)]
    with ProcessPoolExecutor(procs) as pool:
        results = list(
            pool.map(_raw_worker, [url] * procs, [sql] * procs, chunks, [seconds] * procs)
        )
    claims = sum(n for n, _ in results)
    latencies = [x for _, lat in results for x in lat]
    return claims / seconds, latencies


# Checks with no rule of their own in the models, in plain SQL.
PLAIN_INVARIANTS = {
    "an annotator with two assignments on one solution": """
        SELECT count(*) FROM (SELECT 1 FROM labeling_assignment
        GROUP BY annotator_id, solution_id HAVING count(*) > 1) x""",
    "labels after the first negative step (stop at first error)": """
        SELECT count(*) FROM labeling_steplabel l JOIN labeling_step st ON st.id = l.step_id
        WHERE EXISTS (SELECT 1 FROM labeling_steplabel l2
                      JOIN labeling_step st2 ON st2.id = l2.step_id
                      WHERE l2.assignment_id = l.assignment_id AND l2.rating = -1
                        AND st2.index < st.index)""",
    "submitted 'solution' assignments missing a step label": """
        SELECT count(*) FROM labeling_assignment a WHERE a.status = 'submitted'
        AND a.finish_reason = 'solution'
        AND (SELECT count(*) FROM labeling_steplabel l WHERE l.assignment_id = a.id)
          <> (SELECT count(*) FROM labeling_step st WHERE st.solution_id = a.solution_id)""",
}


def invariants(url: str) -> dict[str, int]:
    """Every invariant's number of violating rows (all must be 0)."""
    from django.db.models import Count, F, OuterRef, Q, Subquery
    from django.db.models.functions import Coalesce

    from labeling.models import Assignment, Solution, open_expression

    held = Coalesce(
        Subquery(
            Assignment.objects.filter(Assignment.holds_slot_q(), solution=OuterRef("pk"))
            .order_by()
            .values("solution")
            .annotate(n=Count("pk"))
            .values("n")
        ),
        0,
    )
    solutions = Solution.objects.annotate(held=held)
    rule = open_expression(
        Q(assignment_count__lt=F("campaign__overlap") + F("extra_labels")),
        Q(bad_problem_reports__lt=F("campaign__bad_problem_limit")),
    )
    out = {
        "regular solutions holding more slots than they want": solutions.filter(
            kind=Solution.Kind.REGULAR, held__gt=F("campaign__overlap") + F("extra_labels")
        ).count(),
        "assignment_count different from a recount": solutions.exclude(
            assignment_count=F("held")
        ).count(),
        "is_open different from the rule": Solution.objects.annotate(rule=rule)
        .exclude(is_open=F("rule"))
        .count(),
        "annotators holding two live leases in a campaign (raw SQL clients only claim: left out)": (
            Assignment.objects.live_leases()
            .exclude(annotator__username__startswith="raw")
            .values("campaign_id", "annotator_id")
            .annotate(n=Count("pk"))
            .filter(n__gt=1)
            .count()
        ),
    }
    with psycopg.connect(url) as conn:
        for name, sql in PLAIN_INVARIANTS.items():
            out[name] = conn.execute(sql).fetchone()[0]
    return out


def explain_claim(url: str, campaign: int, annotator: int) -> tuple[float, str]:
    """The app's claim SELECT as PostgreSQL plans it (rolled back): the median execution time
    (ms) of 20 runs and the index its scan reads (``solution_queue`` is the partial index the
    claim is built on)."""
    from labeling.queue.claim import CANDIDATES_SQL

    _, (params,) = claim_statement(campaign, [annotator])
    explain = (
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT s.id"
        + CANDIDATES_SQL
        + " LIMIT 1 FOR NO KEY UPDATE OF s SKIP LOCKED"
    )
    with psycopg.connect(url) as conn:
        plans = [conn.execute(explain, params).fetchone()[0][0] for _ in range(20)]
        conn.rollback()
    return statistics.median(p["Execution Time"] for p in plans), _index_of(plans[-1]["Plan"])


def _index_of(plan: dict) -> str:
    """The first index a plan node (or one under it) scans on the solution table."""
    if plan.get("Relation Name") == "labeling_solution" and plan.get("Index Name"):
        return plan["Index Name"]
    if plan.get("Relation Name") == "labeling_solution":
        return plan.get("Node Type", "?")
    for child in plan.get("Plans", []):
        found = _index_of(child)
        if found:
            return found
    return ""
