"""The queue's raw SQL held to the ORM rules it copies: which solutions a claim may lease
(``claim_candidates`` / ``CANDIDATES_SQL``), whether a solution is open (``open_expression`` /
``is_open_value`` / the claim's UPDATE / the import's COPY), and that the claim reads the partial
index it is built on. The PostgreSQL-only tests are the raw statements' (SQLite claims with the
ORM); the slot arithmetic is checked on both.
"""

from __future__ import annotations

import itertools
import json

import pytest
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from imports.pipeline import import_file
from labeling import queue
from labeling.models import Assignment, Solution, is_open_value, open_expression
from labeling.queue.claim import CANDIDATES_SQL, claim_candidates, claim_params
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)
from tests.test_import_prm800k import fixture_lines, write_lines

pytestmark = pytest.mark.django_db

S = Assignment.Status


def _rule(solutions):
    """``open_expression`` evaluated by the database for each solution (its stored counters)."""
    room = Q(assignment_count__lt=F("campaign__overlap") + F("extra_labels"))
    not_bad = Q(bad_problem_reports__lt=F("campaign__bad_problem_limit"))
    return dict(solutions.annotate(rule=open_expression(room, not_bad)).values_list("pk", "rule"))


def test_the_python_open_rule_is_the_sql_one():
    campaign = make_campaign(overlap=2, bad_problem_limit=2)
    problem = make_solution(campaign=campaign).problem
    values = {}
    grid = itertools.product(Solution.Kind.values, range(4), range(3), range(2), (False, True))
    for n, (kind, slots, reports, extra, archived) in enumerate(grid):
        s = Solution.objects.create(
            campaign=campaign,
            problem=problem,
            kind=kind,
            assignment_count=slots,
            bad_problem_reports=reports,
            extra_labels=extra,
            archived=archived,
            content_hash=f"grid-{n}",
        )
        values[s.pk] = is_open_value(
            campaign, kind=kind, slots=slots, reports=reports, extra_labels=extra, archived=archived
        )
    rule = _rule(Solution.objects.filter(pk__in=values))
    assert rule == values


def test_an_import_writes_is_open_by_the_rule_for_every_kind(tmp_path):
    """A labelled quality-control solution stays open (gold is served to everyone); a regular
    one closes at the overlap. ``refresh_queue_state``, the ORM rule, changes nothing."""
    line = fixture_lines()[3]
    qc = json.loads(json.dumps(line)) | {"is_quality_control_question": True}
    qc["question"]["problem"] += " (asked again)"
    campaign = make_campaign(overlap=1)
    import_file(write_lines(tmp_path, [line, qc]), campaign=campaign, fmt="prm800k", grade=False)

    written = dict(Solution.objects.filter(campaign=campaign).values_list("kind", "is_open"))
    assert written == {"regular": False, "qc": True}
    Solution.objects.filter(campaign=campaign).refresh_queue_state()
    assert dict(Solution.objects.filter(campaign=campaign).values_list("kind", "is_open")) == (
        written
    )


@pytest.mark.postgres
@pytest.mark.parametrize("relabel", [False, True])
@pytest.mark.parametrize("kind", ["regular", "qc"])
def test_the_claims_sql_selects_the_orm_candidates_in_the_same_order(relabel, kind):
    campaign = make_campaign(overlap=2, relabel_by_same_annotator=relabel)
    me = make_member(campaign=campaign).user
    other_campaign = make_campaign()
    make_solution(campaign=other_campaign, priority=9)

    def solution(priority: float, **fields):
        if kind == "regular" and not fields.get("kind"):
            return make_solution(campaign=campaign, priority=priority, **fields)
        return make_gold_solution(
            campaign=campaign, kind=fields.pop("kind", kind), gold=[1, 1], priority=priority,
            **fields,
        )  # fmt: skip

    solution(0.5)
    solution(0.5)  # a tie: oldest first
    solution(0.9)
    solution(0.7, is_open=False)
    solution(0.8, archived=True, is_open=False)
    # Written around the rules (open and archived): the claim must still leave it out.
    Solution.objects.filter(pk=solution(0.95, archived=True).pk).update(is_open=True)
    solution(0.6, kind="screening" if kind == "regular" else "regular")
    for status in (S.SUBMITTED, S.SKIPPED, S.LEASED, S.EXPIRED, S.SUPERSEDED, S.REJECTED):
        make_labelled(solution=solution(0.3), ratings=[1], annotator=me, status=status)
    make_labelled(solution=solution(0.4), ratings=[1], status=S.SUBMITTED)  # someone else's

    orm = list(claim_candidates(campaign=campaign, annotator=me, kind=kind).values_list("pk"))
    params = claim_params(campaign=campaign, annotator_id=me.pk, kind=kind, now=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute("SELECT s.id" + CANDIDATES_SQL, params)
        raw = cursor.fetchall()
    assert raw == orm
    assert len(orm) >= 5


@pytest.mark.postgres
def test_the_claim_reads_the_partial_index_solution_queue():
    """Its conditions imply the index's (``is_open AND NOT archived``), so PostgreSQL can read
    it: with a campaign of mostly finished solutions, as a running one is, it does. (A claim that
    lacks one of them cannot use the index at all, and walks the finished solutions instead.)"""
    campaign = make_campaign()
    me = make_member(campaign=campaign).user
    problem = make_solution(campaign=campaign).problem
    Solution.objects.bulk_create(
        Solution(campaign=campaign, problem=problem, is_open=n % 1000 == 0, content_hash=f"h{n}")
        for n in range(3000)
    )
    params = claim_params(campaign=campaign, annotator_id=me.pk, kind="regular", now=timezone.now())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE labeling_solution")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT s.id"
            + CANDIDATES_SQL
            + " LIMIT 1 FOR NO KEY UPDATE OF s",
            params,
        )
        plan = json.dumps(cursor.fetchone()[0])
    assert '"Index Name": "solution_queue"' in plan


def test_the_claims_slot_arithmetic_is_the_rule():
    """After claims on solutions near every bound (overlap, extra labels, gold, bad problem
    reports), ``is_open`` and ``assignment_count`` are what a recount by the ORM rule says."""
    campaign = make_campaign(overlap=2, bad_problem_limit=2)
    make_solution(campaign=campaign, priority=5)
    make_solution(campaign=campaign, priority=4, extra_labels=1)
    reported = make_solution(campaign=campaign, priority=3)
    make_labelled(solution=reported, ratings=[1], status=S.SUBMITTED, finish_reason="bad_problem")
    Solution.objects.filter(pk=reported.pk).refresh_queue_state()
    make_gold_solution(campaign=campaign, kind="qc", gold=[1], priority=2)
    campaign.qc_rate = 0.5
    campaign.save()
    for _ in range(6):
        user = make_user()
        make_member(campaign=campaign, user=user)
        assignment = queue.assignment_next(campaign=campaign, annotator=user)
        assert assignment is not None
        stored = dict(Solution.objects.values_list("pk", "is_open"))
        counts = dict(Solution.objects.values_list("pk", "assignment_count"))
        assert stored == _rule(Solution.objects.all())
        Solution.objects.all().refresh_queue_state()
        assert dict(Solution.objects.values_list("pk", "assignment_count")) == counts
        assert dict(Solution.objects.values_list("pk", "is_open")) == stored
