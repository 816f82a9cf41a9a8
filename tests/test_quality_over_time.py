"""Quality over time: each annotator's QC score, agreement with the consensus and with
adjudication, seconds per step and flag rate, over blocks of their own work (exact values on a
campaign whose labels are known), as the snapshot stores them and the pages show them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotators.quality import block_size, quality_over_time, trend
from annotators.snapshots import snapshot_request, snapshot_run
from annotators.stats import agreement_labels, campaign_stats, qc_assignments, work_rows
from labeling.models import Adjudication, Assignment, Membership, Step, StepLabel
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db

DAY = datetime(2025, 3, 1, 10, tzinfo=UTC)


def day(n: int) -> datetime:
    return DAY + timedelta(days=n)


@pytest.fixture
def known():
    """Three annotators on four regular solutions (overlap 3), two adjudicated steps, and four
    QC questions answered by ann: two perfectly, then two with every step +1."""
    campaign = make_campaign(overlap=3)
    ann, bob, cat = (make_user(username=n) for n in ("ann", "bob", "cat"))
    for user in (ann, bob, cat):
        make_member(campaign=campaign, user=user)
    ratings = [
        # (ann, bob, cat), ann's total time
        (([1, 1, 1], [1, 1, 1], [1, 0, 1]), 30_000),
        (([1, -1], [1, -1], [1, 1, 1]), 20_000),
        (([1, 1, -1], [1, 0, 1], [1, 0, 1]), 60_000),
        (([0, 0, 0], [0, 0, 0], [1, 0, 1]), 90_000),
    ]
    solutions = []
    for n, ((a, b, c), ms) in enumerate(ratings):
        solution = make_solution(campaign=campaign)
        solutions.append(solution)
        mine = make_labelled(
            solution=solution, ratings=a, annotator=ann, submitted_at=day(n), total_time_ms=ms
        )
        make_labelled(solution=solution, ratings=b, annotator=bob, submitted_at=day(n))
        make_labelled(solution=solution, ratings=c, annotator=cat, submitted_at=day(n))
    StepLabel.objects.filter(assignment=mine, step__index__in=[0, 1]).update(flagged=True)
    for solution, index, rating in ((solutions[0], 1, 1), (solutions[2], 1, 0)):
        Adjudication.objects.create(
            campaign=campaign, step=Step.objects.get(solution=solution, index=index), rating=rating
        )
    for n, given in enumerate([[1, 1, -1], [1, 1, -1], [1, 1, 1], [1, 1, 1]]):
        qc = make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1, -1])
        make_labelled(solution=qc, ratings=given, annotator=ann, submitted_at=day(10 + n))
    return campaign, ann, bob, cat


def test_the_blocks_have_the_exact_figures(known):
    campaign, ann, bob, cat = known
    submitted = Assignment.objects.filter(campaign=campaign, status__in=Assignment.DONE_STATUSES)
    quality = quality_over_time(
        campaign=campaign,
        qc=qc_assignments(campaign=campaign),
        shared=agreement_labels(campaign=campaign),
        work=work_rows(submitted, campaign=campaign)["blocks_work"],
        qc_block=2,
        work_block=2,
    )
    mine = quality[ann.pk]
    assert [(b["from"], b["to"], b["questions"]) for b in mine["qc_blocks"]] == [
        ("2025-03-11", "2025-03-12", 2),
        ("2025-03-13", "2025-03-14", 2),
    ]
    # Perfect: kappa 1 and both first errors found; then +1 throughout: kappa 0, none found.
    assert [b["qc_score"] for b in mine["qc_blocks"]] == [pytest.approx(1.0), pytest.approx(0.0)]
    assert [(b["found"], b["errors"]) for b in mine["qc_blocks"]] == [(2, 2), (0, 2)]

    regular, qc = mine["work_blocks"][:2], mine["work_blocks"][2:]
    assert [b["solutions"] for b in mine["work_blocks"]] == [2, 2, 2, 2]
    # Consensus (a strict majority of the two others): 3 of 3, then 2 of 4.
    assert [(b["consensus"], b["consensus_steps"]) for b in regular] == [(1.0, 3), (0.5, 4)]
    # Adjudicated: the second step of the first solution (1: ann agrees) and of the third (0: ann
    # gave 1).
    assert [(b["adjudicated"], b["adjudicated_steps"]) for b in regular] == [(1.0, 1), (0.0, 1)]
    # Seconds per step: 30 s / 3 and 20 s / 2, then 60 s / 3 and 90 s / 3.
    assert [b["seconds_per_step"] for b in regular] == [10.0, 25.0]
    assert [b["flag_rate"] for b in regular] == [0.0, pytest.approx(2 / 6)]
    # QC questions are work too (rated only by ann: no consensus; untimed).
    assert [(b["consensus"], b["seconds_per_step"], b["flag_rate"]) for b in qc] == [
        (None, None, 0.0),
        (None, None, 0.0),
    ]

    trends = mine["trends"]
    assert trends["qc_score"] == {
        "latest": pytest.approx(0.0),
        "direction": "falling",
        "since": "2025-03-12",
        "blocks": 2,
    }
    assert trends["consensus"] == {
        "latest": 0.5,
        "direction": "falling",
        "since": "2025-03-02",
        "blocks": 2,
    }
    assert trends["seconds_per_step"]["direction"] == "rising"
    assert trends["flag_rate"]["direction"] == "steady"

    # Bob: ann and cat agree with each other only where he does (3 of 3, then 2 of 2).
    bobs = quality[bob.pk]
    assert [b["consensus"] for b in bobs["work_blocks"]] == [1.0, 1.0]
    assert bobs["trends"]["consensus"]["direction"] == "steady"
    assert [b["adjudicated"] for b in bobs["work_blocks"]] == [1.0, 1.0]
    assert [b["adjudicated"] for b in quality[cat.pk]["work_blocks"]] == [0.0, 1.0]


def test_a_trend_needs_two_blocks_and_leaves_out_a_small_last_one():
    blocks = [
        {"to": "d1", "questions": 10, "qc_score": 0.8},
        {"to": "d2", "questions": 10, "qc_score": 0.6},
        {"to": "d3", "questions": 10, "qc_score": 0.4},
        {"to": "d4", "questions": 2, "qc_score": 0.9},
    ]
    assert trend(blocks, "qc_score", size=10, size_key="questions") == {
        "latest": 0.4,
        "direction": "falling",
        "since": "d1",
        "blocks": 3,
    }
    assert trend(blocks[:1], "qc_score", size=10, size_key="questions")["direction"] is None
    steady = [{"to": "d1", "questions": 10, "qc_score": 0.5}, {**blocks[0], "qc_score": 0.51}]
    assert trend(steady, "qc_score", size=10, size_key="questions")["direction"] == "steady"


def test_the_snapshot_stores_them_per_annotator(known):
    campaign, ann, *_ = known
    data = campaign_stats(campaign=campaign)
    quality = data["quality_blocks"][f"u{ann.pk}"]
    # Default blocks: 10 QC questions, 25 solutions: one (partial) block each so far.
    assert [b["questions"] for b in quality["qc_blocks"]] == [4]
    # Kappa 4/7 over the 12 scored steps, first errors found 2 of 4: (4/7 + 1/2) / 2.
    assert quality["qc_blocks"][0]["qc_score"] == pytest.approx(15 / 28)
    assert [b["solutions"] for b in quality["work_blocks"]] == [8]
    assert quality["work_blocks"][0]["consensus"] == pytest.approx(5 / 7)
    # What lists draw, in the figures every page reads: the series and trends alone.
    summary = {r["id"]: r for r in data["annotators"]}[ann.pk]["quality"]
    assert summary["series"]["qc_score"] == [0.536]
    assert summary["series"]["consensus"] == [0.714]
    assert summary["trends"] == quality["trends"]


def _pages(client, campaign):
    members = client.get(reverse("annotators:members", kwargs={"slug": campaign.slug}))
    dashboard = client.get(reverse("annotators:dashboard", kwargs={"slug": campaign.slug}))
    return members, dashboard


def test_the_pages_show_the_latest_value_and_trend_with_bounded_queries(client, known):
    campaign, ann, *_ = known
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER)
    snapshot_run(snapshot=snapshot_request(campaign=campaign))
    client.force_login(manager.user)
    with CaptureQueriesContext(connection) as few:
        members, dashboard = _pages(client, campaign)
    assert members.status_code == dashboard.status_code == 200
    assert 'class="sparkline"' in members.content.decode()
    assert 'id="quality-over-time"' in dashboard.content.decode()
    member = Membership.objects.get(campaign=campaign, user=ann)
    url = reverse("annotators:member", kwargs={"slug": campaign.slug, "pk": member.pk})
    detail = client.get(url)
    html = detail.content.decode()
    assert 'id="quality-blocks"' in html and "2025-03-11" in html

    # Ten more annotators with work: the pages make the same number of queries.
    for _ in range(10):
        user = make_user()
        make_member(campaign=campaign, user=user)
        make_labelled(solution=make_solution(campaign=campaign), ratings=[1, 1], annotator=user)
    snapshot_run(snapshot=snapshot_request(campaign=campaign))
    with CaptureQueriesContext(connection) as many:
        _pages(client, campaign)
    assert len(many.captured_queries) == len(few.captured_queries)


def test_a_long_series_keeps_at_most_24_blocks_of_equal_size():
    assert block_size(100, 25) == 25
    assert block_size(24 * 25, 25) == 25
    assert block_size(2_638, 25) == 110  # 24 blocks (the last one smaller)
    assert block_size(2_638, 10) == 110
