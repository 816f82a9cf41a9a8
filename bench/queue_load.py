"""Loading the queue benchmark's database: 100,000 open solutions with their history (users,
problems, steps, assignments, step labels) written with COPY, or found again with ``--no-load``.

Used by ``bench/queue_claims.py``; nothing here runs on its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import uuid
from datetime import UTC, datetime, timedelta

import psycopg

from annotators.columns import API_TOKEN
from bench.synthetic import records
from common.columns import USER
from labeling.columns import ASSIGNMENT, CAMPAIGN, MEMBERSHIP, PROBLEM, SOLUTION, STEP, STEP_LABEL

OVERLAP = 3


NOW = datetime.now(UTC)


class Loader:
    """Writes rows with COPY, handing out ids itself (the database is fresh)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.ids: dict[str, int] = {}
        self.rows: dict[str, list[tuple]] = {}
        self.columns: dict[str, tuple[str, ...]] = {}

    def add(self, table: str, columns: tuple[str, ...], row: tuple) -> int:
        self.columns.setdefault(table, columns)
        pk = self.ids.get(table, 0) + 1
        self.ids[table] = pk
        self.rows.setdefault(table, []).append((pk, *row))
        if len(self.rows[table]) >= 50_000:
            self.flush(table)
        return pk

    def flush(self, table: str | None = None) -> None:
        for name in [table] if table else list(self.rows):
            rows = self.rows.get(name)
            if not rows:
                continue
            cols = ", ".join(("id", *self.columns[name]))
            with self.conn.cursor() as cur, cur.copy(f"COPY {name} ({cols}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            self.rows[name] = []

    def finish(self) -> None:
        self.flush()
        for table, last in self.ids.items():
            self.conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), {last})")
        self.conn.commit()


# The columns each COPY below fills, checked against the tables' declarations
# (``common.columns``): the database fills the others, and a column it cannot fill fails here,
# at import, and in tests/test_rules_columns.py, not half-way through a load.
USER_COLS = USER.insert(
    "password",
    "is_superuser",
    "username",
    "first_name",
    "last_name",
    "email",
    "is_staff",
    "is_active",
    "date_joined",
)
TOKEN_COLS = API_TOKEN.insert("user_id", "name", "key_hash", "key_hint", "created_at")
MEMBERSHIP_COLS = MEMBERSHIP.insert(
    "user_id", "campaign_id", "role", "status", "screening", "joined_at"
)
CAMPAIGN_COLS = CAMPAIGN.insert(
    "slug",
    "name",
    "instructions",
    "overlap",
    "lease_seconds",
    "stop_at_first_error",
    "qc_rate",
    "requires_screening",
    "screening_threshold",
    "bad_problem_limit",
    "active_learning",
    "al_wrong_answer_share",
    "al_retrain_every",
    "al_backbone",
    "is_paused",
    "created_at",
)
PROBLEM_COLS = PROBLEM.insert(
    "campaign_id",
    "text",
    "ground_truth_answer",
    "subject",
    "level",
    "unique_id",
    "content_hash",
    "created_at",
)
SOLUTION_COLS = SOLUTION.insert(
    "campaign_id",
    "problem_id",
    "generator",
    "generation",
    "kind",
    "pre_generated",
    "answer",
    "verifier_score",
    "priority",
    "is_open",
    "assignment_count",
    "bad_problem_reports",
    "source",
    "source_ref",
    "content_hash",
    "created_at",
)
STEP_COLS = STEP.insert("solution_id", "index", "text")
ASSIGNMENT_COLS = ASSIGNMENT.insert(
    "campaign_id",
    "solution_id",
    "annotator_id",
    "status",
    "leased_at",
    "lease_expires_at",
    "submitted_at",
    "finish_reason",
    "total_time_ms",
    "submission_key",
    "source",
)
LABEL_COLS = STEP_LABEL.insert(
    "assignment_id",
    "step_id",
    "rating",
    "flagged",
    "completion_index",
    "alternatives",
    "chosen_completion",
    "created_at",
)


def load(url: str, args: argparse.Namespace) -> dict:
    """Fill the database; returns the campaigns' ids and the annotators' tokens by role."""
    rng = random.Random(7)
    with psycopg.connect(url) as conn:
        loader = Loader(conn)

        def campaign(slug: str) -> int:
            return conn.execute(
                f"INSERT INTO labeling_campaign ({', '.join(CAMPAIGN_COLS)}) VALUES (%s, %s, '',"
                " %s, 1800, true, 0, false, 0.75, 2, false, 0.8, 500, 'bow', false, now())"
                " RETURNING id",
                (slug, slug, OVERLAP),
            ).fetchone()[0]

        big, small = campaign("bench-big"), campaign("bench-small")

        def users(prefix: str, n: int, campaigns: list[int]) -> list[tuple[int, str]]:
            out = []
            for i in range(n):
                pk = loader.add(
                    "auth_user",
                    USER_COLS,
                    ("!", False, f"{prefix}{i}", "", "", "", False, True, NOW),
                )
                key = bench_key(f"{prefix}{i}")
                tokens.append((key, pk))
                for cid in campaigns:
                    memberships.append((pk, cid))
                out.append((pk, key))
            return out

        tokens: list[tuple[str, int]] = []
        memberships: list[tuple[int, int]] = []
        roles = {
            "open": users("open", args.open_annotators, [big]),
            "closed": users("closed", args.closed_annotators, [big]),
            "scale_big": users("scalebig", args.scale_annotators, [big]),
            "scale_small": users("scalesmall", args.scale_annotators, [small]),
            "raw": users("raw", args.raw_clients, [big]),
            "history": users("history", 50, [big, small]),
        }
        loader.flush("auth_user")
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY annotators_apitoken ({', '.join(TOKEN_COLS)}) FROM STDIN") as copy,
        ):
            for key, pk in tokens:
                copy.write_row(
                    (pk, "bench", hashlib.sha256(key.encode()).hexdigest(), key[:10], NOW)
                )
        with (
            conn.cursor() as cur,
            cur.copy(
                f"COPY annotators_membership ({', '.join(MEMBERSHIP_COLS)}) FROM STDIN"
            ) as copy,
        ):
            for pk, cid in memberships:
                copy.write_row((pk, cid, "annotator", "active", "pending", NOW))

        history = [pk for pk, _ in roles["history"]]
        counts = {"open": 0, "closed": 0, "assignments": 0, "labels": 0}

        def solutions(cid: int, n: int, *, closed: bool, seed: int) -> None:
            problem_id, last_problem = None, None
            for rec in records(n, seed=seed, labelled=True):
                q = rec["question"]
                if q["problem"] != last_problem:
                    last_problem = q["problem"]
                    problem_id = loader.add(
                        "labeling_problem",
                        PROBLEM_COLS,
                        (
                            cid,
                            q["problem"],
                            q["ground_truth_answer"],
                            "",
                            "",
                            "",
                            _hash(q["problem"]),
                            NOW,
                        ),
                    )
                steps = q["pre_generated_steps"]
                done = OVERLAP if closed else rng.choices([0, 1, 2], weights=[6, 3, 1])[0]
                sid = loader.add(
                    "labeling_solution",
                    SOLUTION_COLS,
                    (
                        cid,
                        problem_id,
                        "synthetic",
                        6,
                        "regular",
                        True,
                        q["pre_generated_answer"],
                        q["pre_generated_verifier_score"],
                        rng.random(),
                        not closed,
                        done,
                        0,
                        "bench",
                        "",
                        _hash(json.dumps([q["problem"], steps, rec["timestamp"]])),
                        NOW,
                    ),
                )
                step_ids = [
                    loader.add("labeling_step", STEP_COLS, (sid, i, text))
                    for i, text in enumerate(steps)
                ]
                labelers = rng.sample(history, done + 2)
                for labeler in labelers[:done]:
                    aid = loader.add(
                        "labeling_assignment",
                        ASSIGNMENT_COLS,
                        (
                            cid,
                            sid,
                            labeler,
                            "submitted",
                            NOW - timedelta(days=3),
                            NOW - timedelta(days=3) + timedelta(minutes=30),
                            NOW - timedelta(days=2),
                            rec["label"]["finish_reason"],
                            rec["label"]["total_time"],
                            uuid.uuid4().hex,
                            "",
                        ),
                    )
                    counts["assignments"] += 1
                    for i, step in enumerate(rec["label"]["steps"]):
                        rating = step["completions"][0]["rating"]
                        loader.add(
                            "labeling_steplabel",
                            LABEL_COLS,
                            (
                                aid,
                                step_ids[i],
                                rating,
                                None,
                                0,
                                "[]",
                                None if rating < 0 else 0,
                                NOW,
                            ),
                        )
                        counts["labels"] += 1
                # Some abandoned work too: a skipped and an expired assignment now and then.
                for labeler, status, share in zip(
                    labelers[done:], ("skipped", "expired"), (0.02, 0.05), strict=True
                ):
                    if rng.random() < share:
                        loader.add(
                            "labeling_assignment",
                            ASSIGNMENT_COLS,
                            (
                                cid,
                                sid,
                                labeler,
                                status,
                                NOW - timedelta(days=1),
                                NOW - timedelta(hours=23),
                                None,
                                "",
                                None,
                                None,
                                "",
                            ),
                        )
                        counts["assignments"] += 1
                counts["closed" if closed else "open"] += 1

        solutions(big, args.history, closed=True, seed=1)
        solutions(big, args.open, closed=False, seed=2)
        solutions(small, args.small, closed=False, seed=3)
        loader.finish()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return {"big": big, "small": small, "roles": roles, "counts": counts}


def bench_key(username: str) -> str:
    """The bench user's API key: derived from the name, so ``--no-load`` can rebuild it (only
    its sha256 is in the database)."""
    return f"sw_bench-{username}"


def loaded(url: str) -> dict:
    """What ``load`` returned, read back from a database it filled (for ``--no-load``)."""
    prefixes = {
        "open": "open",
        "closed": "closed",
        "scale_big": "scalebig",
        "scale_small": "scalesmall",
        "raw": "raw",
        "history": "history",
    }
    with psycopg.connect(url) as conn:
        ids = dict(conn.execute("SELECT slug, id FROM labeling_campaign").fetchall())
        roles = {}
        for role, prefix in prefixes.items():
            rows = conn.execute(
                "SELECT u.id, u.username, u.username FROM auth_user u WHERE u.username ~ %s",
                (f"^{prefix}[0-9]+$",),
            ).fetchall()
            rows.sort(key=lambda row: int(row[2][len(prefix) :]))
            roles[role] = [(pk, bench_key(name)) for pk, name, _ in rows]
    counts = {"open": "?", "closed": "?", "assignments": "?", "labels": "?"}
    return {"big": ids["bench-big"], "small": ids["bench-small"], "roles": roles, "counts": counts}


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
