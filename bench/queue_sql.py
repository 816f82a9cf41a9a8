"""The SQL the queue benchmark runs beside the app: the raw one-statement claim (the baseline the
app's claims/s are compared with), the invariants checked over every row afterwards, and the
claim's own time from EXPLAIN ANALYZE.

Used by ``bench/queue_claims.py``.
"""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import psycopg

from bench.queue_load import OVERLAP

RAW_CLAIM = """
WITH cand AS (
    SELECT s.id FROM labeling_solution s
    WHERE s.campaign_id = %(campaign)s AND s.kind = 'regular' AND s.is_open
      AND NOT EXISTS (SELECT 1 FROM labeling_assignment a
                      WHERE a.solution_id = s.id AND a.annotator_id = %(annotator)s)
    ORDER BY s.priority DESC, s.id
    LIMIT 1
    FOR NO KEY UPDATE SKIP LOCKED
), upd AS (
    UPDATE labeling_solution s
    SET assignment_count = s.assignment_count + 1, is_open = s.assignment_count + 1 < %(overlap)s
    FROM cand WHERE s.id = cand.id
    RETURNING s.id
)
INSERT INTO labeling_assignment (campaign_id, solution_id, annotator_id, status, leased_at,
                                 lease_expires_at, finish_reason, source)
SELECT %(campaign)s, upd.id, %(annotator)s, 'leased', now(), now() + interval '30 minutes', '', ''
FROM upd
RETURNING id
"""


def _raw_worker(url: str, campaign: int, annotators: list[int], seconds: float) -> tuple[int, list]:
    done, latencies, lock = [0], [], threading.Lock()
    start_at = time.time() + 1.0  # every process starts together

    def client(annotator):
        with psycopg.connect(url, autocommit=True) as conn:
            params = {"campaign": campaign, "annotator": annotator, "overlap": OVERLAP}
            conn.execute(RAW_CLAIM, params, prepare=True)
            time.sleep(max(0.0, start_at - time.time()))
            end = time.perf_counter() + seconds
            n, lat = 0, []
            while (t := time.perf_counter()) < end:
                if conn.execute(RAW_CLAIM, params, prepare=True).fetchone():
                    n += 1
                lat.append(time.perf_counter() - t)
            with lock:
                done[0] += n
                latencies.extend(lat)

    threads = [threading.Thread(target=client, args=(a,)) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0], latencies


def raw_sql(url: str, campaign: int, annotators: list[int], seconds: float, procs: int = 4):
    chunks = [annotators[i::procs] for i in range(procs)]
    with ProcessPoolExecutor(procs) as pool:
        results = list(
            pool.map(_raw_worker, [url] * procs, [campaign] * procs, chunks, [seconds] * procs)
        )
    claims = sum(n for n, _ in results)
    latencies = [x for _, lat in results for x in lat]
    return claims / seconds, latencies


HELD = (
    "(a.status = 'leased'"
    " OR (a.status = 'submitted' AND a.finish_reason NOT IN ('give_up', 'bad_problem')))"
)


INVARIANTS = {
    "an annotator with two assignments on one solution": """
        SELECT count(*) FROM (SELECT 1 FROM labeling_assignment
        GROUP BY annotator_id, solution_id HAVING count(*) > 1) x""",
    "regular solutions holding more slots than the overlap": f"""
        SELECT count(*) FROM (SELECT s.id FROM labeling_solution s
        JOIN labeling_campaign c ON c.id = s.campaign_id
        JOIN labeling_assignment a ON a.solution_id = s.id AND {HELD}
        WHERE s.kind = 'regular' GROUP BY s.id, c.overlap HAVING count(*) > c.overlap) x""",
    "assignment_count different from a recount": f"""
        SELECT count(*) FROM labeling_solution s WHERE s.assignment_count <>
        (SELECT count(*) FROM labeling_assignment a WHERE a.solution_id = s.id AND {HELD})""",
    "is_open different from the rule": """
        SELECT count(*) FROM labeling_solution s JOIN labeling_campaign c ON c.id = s.campaign_id
        WHERE s.kind = 'regular' AND s.is_open <>
              (s.assignment_count < c.overlap AND s.bad_problem_reports < c.bad_problem_limit)""",
    "annotators holding two live leases in a campaign (raw SQL clients only claim: left out)": """
        SELECT count(*) FROM (SELECT 1 FROM labeling_assignment
        WHERE status = 'leased' AND lease_expires_at > now()
          AND annotator_id NOT IN (SELECT id FROM auth_user WHERE username LIKE 'raw%')
        GROUP BY campaign_id, annotator_id HAVING count(*) > 1) x""",
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
    with psycopg.connect(url) as conn:
        return {name: conn.execute(sql).fetchone()[0] for name, sql in INVARIANTS.items()}


def explain_claim(url: str, campaign: int, annotator: int) -> float:
    """Execution time (ms) of the app's claim SELECT as PostgreSQL plans it (rolled back)."""
    sql = """EXPLAIN (ANALYZE, FORMAT JSON)
        SELECT s.id FROM labeling_solution s
        WHERE s.campaign_id = %s AND s.kind = 'regular' AND s.is_open
          AND NOT EXISTS (SELECT 1 FROM labeling_assignment a WHERE a.solution_id = s.id
                          AND a.annotator_id = %s AND NOT a.status = 'expired')
        ORDER BY s.priority DESC, s.id LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED"""
    with psycopg.connect(url) as conn:
        times = [
            conn.execute(sql, (campaign, annotator)).fetchone()[0][0]["Execution Time"]
            for _ in range(20)
        ]
        conn.rollback()
    return statistics.median(times)
