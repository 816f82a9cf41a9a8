"""Manager pages benchmark: a campaign with ~100,000 solutions and 1,000,000 step labels.

Builds the campaign once (later runs reuse it) in PostgreSQL: 800,000 labels of synthetic PRM800K
phase 2 lines loaded with COPY by ``bench/export.py``'s loader, then, in SQL, a second annotator
on every fourth solution (ratings copied with 15% changed: 200,000 more labels, so agreement has
overlapping steps), overlap 2, every fiftieth solution made a quality-control one with gold
ratings, 5% of the work reviewed, queue priorities, and memberships for the 50 annotators,
a manager and a reviewer. Then it computes the figures snapshot (the Celery task's work, timed)
and times every manager and reviewer page through Django's test client (the whole request:
middleware, views, templates), printing median, p90 and max milliseconds and the number of SQL
queries per page. Target: every page under 300 ms.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sw_manage .venv/bin/python bench/dashboard.py
    ... bench/dashboard.py --runs 20 --rebuild
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

from common.columns import USER  # noqa: E402  (after the sys.path fix)
from labeling.columns import ASSIGNMENT, MEMBERSHIP, REVIEW, STEP_LABEL  # noqa: E402

SLUG = "bench-dashboard"
BASE_LABELS = 800_000
MARKER = "bench/dashboard.py v2"

# The columns the INSERTs below name, checked against the tables' declarations
# (``common.columns``) at import: the database fills the others.
USER_COLUMNS = USER.sql(
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
MEMBERSHIP_COLUMNS = MEMBERSHIP.sql(
    "user_id", "campaign_id", "role", "status", "screening", "screening_score", "joined_at"
)
ASSIGNMENT_COLUMNS = ASSIGNMENT.sql(
    "id",
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
LABEL_COLUMNS = STEP_LABEL.sql(
    "assignment_id",
    "step_id",
    "rating",
    "flagged",
    "time_spent_ms",
    "completion_index",
    "alternatives",
    "human_completion",
    "chosen_completion",
    "created_at",
)
REVIEW_COLUMNS = REVIEW.sql(
    "assignment_id", "reviewer_id", "decision", "comment", "corrections", "created_at"
)


def build(*, rebuild: bool):
    """The benchmark campaign, built if missing (or with ``rebuild``)."""
    from django.db import connection, transaction

    from bench.export import build_campaign
    from labeling.models import Campaign, Solution

    existing = Campaign.objects.filter(slug=SLUG).first()
    if existing is not None and existing.instructions == MARKER and not rebuild:
        print(f"reusing campaign {SLUG}", flush=True)
        return existing
    if existing is not None:
        existing.delete()
    started = time.monotonic()
    campaign = build_campaign(BASE_LABELS)
    Campaign.objects.filter(pk=campaign.pk).update(
        slug=SLUG,
        name="Dashboard benchmark",
        overlap=2,
        qc_rate=0.02,
        instructions="building",
    )
    campaign = Campaign.objects.get(pk=campaign.pk)
    print("augmenting: overlap, gold, reviews, memberships", flush=True)
    c = campaign.pk
    with transaction.atomic(), connection.cursor() as cur:
        # The 50 synthetic labelers, numbered, and the accounts of the bench's manager/reviewer.
        cur.execute(
            """
            CREATE TEMP TABLE labelers ON COMMIT DROP AS
            SELECT annotator_id AS id, (row_number() OVER (ORDER BY annotator_id)) - 1 AS n
            FROM (SELECT DISTINCT annotator_id FROM labeling_assignment WHERE campaign_id = %s) u
            """,
            [c],
        )
        cur.execute("SELECT count(*) FROM labelers")
        (n_labelers,) = cur.fetchone()
        for name in ("bench-manager", "bench-reviewer"):
            cur.execute(
                f"""
                INSERT INTO auth_user ({USER_COLUMNS})
                VALUES ('!', false, %s, '', '', '', false, true, now())
                ON CONFLICT (username) DO NOTHING
                """,
                [name],
            )
        cur.execute(
            f"""
            INSERT INTO annotators_membership ({MEMBERSHIP_COLUMNS})
            SELECT id, %s, 'annotator', 'active', 'passed', 0.9, now() FROM labelers
            UNION ALL
            SELECT id, %s, CASE username WHEN 'bench-manager' THEN 'manager' ELSE 'reviewer' END,
                   'active', 'passed', NULL, now()
            FROM auth_user WHERE username IN ('bench-manager', 'bench-reviewer')
            """,
            [c, c],
        )
        # A second annotator (the next labeler) on every fourth solution, 15% of ratings changed.
        cur.execute(
            """
            CREATE TEMP TABLE copies ON COMMIT DROP AS
            SELECT a.id AS old_id, nextval(pg_get_serial_sequence('labeling_assignment', 'id'))
                   AS new_id, a.solution_id, nxt.id AS annotator_id,
                   a.submitted_at + interval '3 hours' AS submitted_at, a.total_time_ms,
                   a.finish_reason
            FROM labeling_assignment a
            JOIN labelers me ON me.id = a.annotator_id
            JOIN labelers nxt ON nxt.n = (me.n + 1) %% %s
            WHERE a.campaign_id = %s AND a.solution_id %% 4 = 0
            """,
            [n_labelers, c],
        )
        cur.execute(
            f"""
            INSERT INTO labeling_assignment ({ASSIGNMENT_COLUMNS})
            SELECT new_id, %s, solution_id, annotator_id, 'submitted', submitted_at, NULL,
                   submitted_at, finish_reason, total_time_ms, NULL, 'synthetic'
            FROM copies
            """,
            [c],
        )
        cur.execute(
            f"""
            INSERT INTO labeling_steplabel ({LABEL_COLUMNS})
            SELECT m.new_id, l.step_id,
                   CASE WHEN random() < 0.15 THEN (floor(random() * 3) - 1)::int ELSE l.rating END,
                   random() < 0.02, l.time_spent_ms, 0, '[]', NULL, l.chosen_completion,
                   l.created_at
            FROM labeling_steplabel l JOIN copies m ON m.old_id = l.assignment_id
            """
        )
        # Overlap 2: solutions with one annotator are open, with two they are done.
        cur.execute(
            """
            UPDATE labeling_solution s SET
                assignment_count = CASE WHEN s.id %% 4 = 0 THEN 2 ELSE 1 END,
                is_open = s.id %% 4 <> 0, priority = random()
            WHERE s.campaign_id = %s
            """,
            [c],
        )
        # Every fiftieth solution is a quality-control one (half of them with two annotators); its
        # gold is the first label, so the first annotator agrees fully and the second as often
        # as the copy kept the rating.
        cur.execute(
            """
            UPDATE labeling_solution SET kind = 'qc', is_open = true
            WHERE campaign_id = %s AND id %% 50 = 0
            """,
            [c],
        )
        cur.execute(
            """
            UPDATE labeling_step st SET gold_rating = l.rating
            FROM labeling_solution s, labeling_assignment a, labeling_steplabel l
            WHERE s.campaign_id = %s AND s.kind = 'qc' AND st.solution_id = s.id
              AND a.solution_id = s.id AND a.source = 'synthetic' AND a.id NOT IN
                  (SELECT new_id FROM copies)
              AND l.assignment_id = a.id AND l.step_id = st.id
            """,
            [c],
        )
        # 5% of the work reviewed: most accepted, some with a correction, some rejected.
        cur.execute(
            f"""
            INSERT INTO labeling_review ({REVIEW_COLUMNS})
            SELECT a.id, (SELECT id FROM auth_user WHERE username = 'bench-reviewer'),
                   CASE WHEN a.id %% 100 < 15 THEN 'rejected' ELSE 'accepted' END,
                   CASE WHEN a.id %% 100 < 15 THEN 'Step 2 is wrong.' ELSE '' END,
                   CASE WHEN a.id %% 100 BETWEEN 15 AND 30 THEN '{{"0": -1}}' ELSE '{{}}'
                   END::jsonb,
                   a.submitted_at + interval '1 day'
            FROM labeling_assignment a
            WHERE a.campaign_id = %s AND a.id %% 20 = 0
            """,
            [c],
        )
    # What an import does once the labels are in: each solution's disagreements, by the app.
    Solution.objects.filter(campaign_id=c).disputes_recount()
    with connection.cursor() as cur:
        for table in (
            "labeling_solution",
            "labeling_step",
            "labeling_assignment",
            "labeling_steplabel",
            "labeling_review",
            "annotators_membership",
        ):
            cur.execute(f"ANALYZE {table}")
    Campaign.objects.filter(pk=c).update(instructions=MARKER)
    print(f"built {SLUG} in {time.monotonic() - started:.0f} s", flush=True)
    return Campaign.objects.get(pk=c)


def counts(campaign) -> str:
    from labeling.models import Assignment, Solution, StepLabel

    solutions = Solution.objects.filter(campaign=campaign).count()
    assignments = Assignment.objects.filter(campaign=campaign).count()
    labels = StepLabel.objects.filter(assignment__campaign=campaign).count()
    return f"{solutions:,} solutions, {assignments:,} submitted assignments, {labels:,} step labels"


def time_pages(campaign, runs: int) -> list[tuple[str, list[float], int, int]]:
    """Each page ``runs`` times (after two warm-ups) as the manager, reviewer or an annotator."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from labeling.models import Assignment, Membership

    User = get_user_model()
    manager = User.objects.get(username="bench-manager")
    reviewer = User.objects.get(username="bench-reviewer")
    member = Membership.objects.filter(campaign=campaign, role="annotator").order_by("pk").first()
    annotator = member.user
    overlapped = (
        Assignment.objects.filter(campaign=campaign, solution_id__in=[4, 8, 12])
        .order_by("pk")
        .first()
        or Assignment.objects.filter(campaign=campaign, solution__kind="regular")
        .order_by("-pk")
        .first()
    )
    qc_solution = campaign.solutions.filter(kind="qc").order_by("pk").first()
    s = campaign.slug

    def url(name: str, **kwargs) -> str:
        return reverse(f"annotators:{name}", kwargs={"slug": s, **kwargs})

    pages = [
        ("dashboard", manager, url("dashboard")),
        ("dashboard, table page 2 by kappa", manager, url("dashboard") + "?a_sort=kappa&a_page=2"),
        ("members", manager, url("members")),
        ("members by QC agreement", manager, url("members") + "?sort=-qc_agreement"),
        ("member detail (QC over time, live)", manager, url("member", pk=member.pk)),
        ("agreement", manager, url("agreement")),
        ("agreement, pairs page 3", manager, url("agreement") + "?p_page=3&p_sort=kappa"),
        ("review list", reviewer, url("reviews")),
        ("review list, all, oldest, page 5", reviewer, url("reviews") + "?state=all&sort=submitted"
         "&page=5"),
        ("review list, one annotator", reviewer, url("reviews") + f"?annotator={annotator.pk}"),
        ("review list, disagreement", reviewer, url("reviews") + "?disagreement=on"),
        ("review list, low QC agreement", reviewer, url("reviews") + "?low_qc=on&state=all"),
        ("review list, rejected", reviewer, url("reviews") + "?state=rejected"),
        ("review detail (2 annotators)", reviewer, url("review", pk=overlapped.pk)),
        ("my reviews (annotator)", annotator, url("my-reviews")),
        ("campaign overview", manager, reverse("labeling:campaign", kwargs={"slug": s})),
        ("settings", manager, reverse("labeling:campaign-settings", kwargs={"slug": s})),
        ("imports", manager, reverse("imports:list", kwargs={"slug": s})),
        ("invitations", manager, url("invitations")),
        ("gold list", manager, url("gold")),
        ("gold edit", manager, url("gold-edit", pk=qc_solution.pk)),
        ("campaign list", manager, reverse("labeling:campaigns")),
    ]  # fmt: skip
    figures = campaign.snapshots.filter(status="done").order_by("-computed_at").first()
    if figures is not None:  # what an open page polls (htmx), the one job status view
        status = reverse(
            "labeling:job-status", kwargs={"slug": s, "kind": "snapshots", "pk": figures.pk}
        )
        pages.append(("figures status poll (htmx)", manager, status + "?state=done"))
    clients = {}
    results = []
    for label, user, path in pages:
        client = clients.get(user.pk)
        if client is None:
            client = clients[user.pk] = Client(HTTP_HOST="localhost")
            client.force_login(user)
        headers = {"HX-Request": "true"} if "(htmx)" in label else {}
        for _ in range(2):
            response = client.get(path, headers=headers)
        status = response.status_code
        samples = []
        queries = 0
        for _ in range(runs):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                client.get(path, headers=headers)
                samples.append((time.perf_counter() - started) * 1000)
            queries = len(captured)
        results.append((label, samples, queries, status))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed requests per page")
    parser.add_argument("--rebuild", action="store_true", help="build the campaign again")
    args = parser.parse_args(argv)
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit("bench/dashboard.py measures PostgreSQL: set DATABASE_URL=postgres://...")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    # The bench computes the figures itself, once: pages must not ask a worker for fresh ones.
    os.environ["STEPWISE_SNAPSHOT_MAX_AGE"] = str(10**9)

    import django

    django.setup()
    from django.core.management import call_command

    from annotators.models import CampaignSnapshot
    from annotators.snapshots import snapshot_run

    call_command("migrate", verbosity=0)
    campaign = build(rebuild=args.rebuild)
    print(counts(campaign), flush=True)

    started = time.monotonic()
    snapshot = snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    print(
        f"figures snapshot (the Celery task's work): {time.monotonic() - started:.1f} s, "
        f"{len(str(snapshot.data)) / 1e3:.0f} kB of JSON; alpha nominal "
        f"{snapshot.data['agreement']['alpha_nominal']:.3f} over "
        f"{snapshot.data['agreement']['units']:,} shared steps",
        flush=True,
    )

    print(f"\n{'page':<42}{'status':>7}{'median ms':>11}{'p90 ms':>9}{'max ms':>9}{'queries':>9}")
    slowest = 0.0
    for label, samples, queries, status in time_pages(campaign, args.runs):
        samples.sort()
        p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
        slowest = max(slowest, p90)
        print(
            f"{label:<42}{status:>7}{statistics.median(samples):>11.1f}{p90:>9.1f}"
            f"{samples[-1]:>9.1f}{queries:>9}",
            flush=True,
        )
    print(
        f"\nslowest page p90: {slowest:.0f} ms (target < 300 ms); Django test client in this "
        f"process, PostgreSQL on the same machine; load average {os.getloadavg()[0]:.1f} "
        "(2 cores shared)"
    )


if __name__ == "__main__":
    main()
