"""The figures (stats), their snapshots, the dashboard's charts, and gold ratings from the UI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotators.models import CampaignSnapshot
from annotators.review.services import review_submit
from annotators.snapshots import snapshot_current, snapshot_request, snapshot_run
from annotators.stats import campaign_stats, qc_agreement
from common import charts
from labeling import queue
from labeling.gold.services import GoldError, solution_gold_set
from labeling.models import Solution, Step
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
    submit_ratings,
)

pytestmark = pytest.mark.django_db

DAY1 = datetime(2025, 3, 1, 10, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)


@pytest.fixture
def campaign():
    return make_campaign(overlap=2)


def test_progress_throughput_time_and_ratings(campaign):
    ann, bob = make_user(username="ann"), make_user(username="bob")
    s1, s2 = make_solution(campaign=campaign), make_solution(campaign=campaign)
    make_labelled(
        solution=s1, ratings=[1, 1, -1], annotator=ann, submitted_at=DAY1, total_time_ms=30_000
    )
    make_labelled(
        solution=s2, ratings=[1, 0, 1], annotator=ann, submitted_at=DAY2, total_time_ms=60_000
    )
    make_labelled(
        solution=s1,
        ratings=[0],
        annotator=bob,
        submitted_at=DAY2,
        total_time_ms=1_000,
        finish_reason="give_up",
    )
    Solution.objects.filter(pk=s1.pk).update(assignment_count=2)
    Solution.objects.filter(pk=s2.pk).update(assignment_count=1)

    stats = campaign_stats(campaign=campaign)

    assert stats["progress"] == [
        {"day": "2025-03-01", "assignments": 1, "labels": 3, "cum_assignments": 1, "cum_labels": 3},
        {"day": "2025-03-02", "assignments": 2, "labels": 4, "cum_assignments": 3, "cum_labels": 7},
    ]
    assert stats["ratings"] == {"negative": 1, "neutral": 2, "positive": 4, "flagged": 0}
    # Seconds per step by solution: 10, 20 (ann) and 1 (bob): median 10.
    assert stats["seconds_per_step"]["median"] == 10.0
    people = {r["username"]: r for r in stats["annotators"]}
    assert (people["ann"]["assignments"], people["ann"]["labels"]) == (2, 6)
    assert people["ann"]["median_seconds_per_step"] == 15.0
    assert people["ann"]["labels_per_hour"] == pytest.approx(6 / (90 / 3600), rel=1e-3)
    assert stats["totals"]["regular_done"] == 1 and stats["totals"]["regular"] == 2


def test_qc_agreement_follows_the_screening_rule_per_day_and_annotator(campaign):
    ann = make_user(username="ann")
    # Gold: +1, -1, then a step nobody rates (stop at first error): scored steps 0 and 1.
    qc = make_gold_solution(campaign=campaign, kind="qc", gold=[1, -1, 1])
    qc2 = make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1])
    make_labelled(solution=qc, ratings=[1, -1], annotator=ann, submitted_at=DAY1)
    make_labelled(solution=qc2, ratings=[1, -1], annotator=ann, submitted_at=DAY2)  # 1 of 2

    result = qc_agreement(campaign=campaign)

    assert (result["agree"], result["scored"]) == (3, 4)
    assert [(d["day"], d["agreement"]) for d in result["days"]] == [
        ("2025-03-01", 1.0),
        ("2025-03-02", 0.5),
    ]
    assert campaign_stats(campaign=campaign)["annotators"][0]["qc_agreement"] == 0.75


def test_queue_composition_counts_open_work_and_wrong_answers(campaign):
    for correct in (True, False, False, None):
        make_solution(campaign=campaign, answer_is_correct=correct)
    make_gold_solution(campaign=campaign, kind="qc", gold=[1])
    make_solution(campaign=campaign, is_open=False, answer_is_correct=False)

    q = campaign_stats(campaign=campaign)["queue"]

    assert q["by_kind"] == {"regular": 4, "qc": 1}
    assert (q["wrong"], q["correct"], q["ungraded"], q["wrong_share"]) == (2, 1, 1, 0.5)
    assert (q["head"], q["head_wrong"]) == (4, 2)


def test_a_stale_snapshot_is_shown_while_a_fresh_one_is_requested_once(campaign, settings):
    settings.STEPWISE_SNAPSHOT_MAX_AGE = 60
    old = snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    CampaignSnapshot.objects.filter(pk=old.pk).update(
        computed_at=timezone.now() - timedelta(minutes=5)
    )

    shown = snapshot_current(campaign=campaign)
    snapshot_current(campaign=campaign)

    assert shown.pk == old.pk
    assert CampaignSnapshot.objects.filter(status="pending").count() == 1


def test_the_dashboard_polls_until_new_figures_are_in_then_reloads(client, campaign):
    manager = make_member(campaign=campaign, role="manager").user
    client.force_login(manager)
    url = reverse("annotators:dashboard", kwargs={"slug": campaign.slug})

    first = client.get(url).content.decode()
    pending = CampaignSnapshot.objects.get()
    status_url = (
        reverse(
            "labeling:job-status",
            kwargs={"slug": campaign.slug, "kind": "snapshots", "pk": pending.pk},
        )
        + "?state=pending"
    )
    assert f'hx-get="{status_url}"' in first
    waiting = client.get(status_url, headers={"HX-Request": "true"})
    snapshot_run(snapshot=pending)
    ready = client.get(status_url, headers={"HX-Request": "true"})
    page = client.get(url).content.decode()

    assert "Computing fresh figures" in first and 'hx-trigger="every 2s"' in first
    assert waiting.status_code == 200 and "HX-Refresh" not in waiting.headers
    assert ready.headers["HX-Refresh"] == "true"
    assert "Figures as of" in page and "<svg" in page


def test_the_dashboard_writes_its_numbers_on_the_charts(client, campaign):
    ann = make_user(username="ann")
    for day, ratings in ((DAY1, [1, 1, -1]), (DAY2, [1, 0, 1])):
        make_labelled(
            solution=make_solution(campaign=campaign),
            ratings=ratings,
            annotator=ann,
            submitted_at=day,
            total_time_ms=9000,
        )
    work = make_labelled(
        solution=make_solution(campaign=campaign),
        ratings=[1],
        annotator=make_user(username="bob"),
        submitted_at=DAY2,
    )
    review_submit(assignment=work, reviewer=make_user(), decision="rejected", comment="no")
    manager = make_member(campaign=campaign, role="manager").user
    snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=campaign))
    client.force_login(manager)

    page = client.get(
        reverse("annotators:dashboard", kwargs={"slug": campaign.slug})
    ).content.decode()

    assert 'id="tile-labels"><span class="big">7</span>' in page
    assert 'id="tile-reviews"><span class="big">1</span>' in page
    assert ">+1 positive</text>" in page and ">5 (71%)</text>" in page  # ratings, on the bars
    assert ">03-01</text>" in page and ">03-02</text>" in page  # days on the progress chart
    assert ">3.0 s</span>" in page  # median time per step: 9 s over 3 steps
    assert "<title>Step labels per annotator (top 15)</title>" in page


def test_chart_text_is_escaped():
    svg = charts.bars_horizontal(title="<b>t</b>", bars=[charts.Bar("<script>", 1, "&")])
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&amp;" in svg
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in svg


def test_a_manager_marks_a_solution_as_screening_and_the_queue_serves_it_first(client):
    campaign = make_campaign(requires_screening=True, screening_threshold=0.5)
    manager = make_member(campaign=campaign, role="manager").user
    make_solution(campaign=campaign)
    candidate = make_solution(campaign=campaign, steps=["a", "b"])
    annotator = make_member(campaign=campaign).user
    client.force_login(manager)

    response = client.post(
        reverse("annotators:gold-edit", kwargs={"slug": campaign.slug, "pk": candidate.pk}),
        {"kind": "screening", "gold_0": "1", "gold_1": "-1"},
    )

    assert response.status_code == 302
    assert list(Step.objects.filter(solution=candidate).values_list("gold_rating", flat=True)) == [
        1,
        -1,
    ]
    served = queue.assignment_next(campaign=campaign, annotator=annotator)
    assert served.solution_id == candidate.pk
    result = submit_ratings(assignment=served, annotator=annotator, ratings=[1, -1])
    assert result.screening == "passed"


def test_gold_needs_a_rating_and_regular_clears_it(campaign):
    solution = make_gold_solution(campaign=campaign, kind="qc", gold=[1, 0])

    with pytest.raises(GoldError, match="at least one gold rating"):
        solution_gold_set(solution=solution, kind="qc", gold=[None, None])
    regular = solution_gold_set(solution=solution, kind="regular", gold=[1, 0])

    assert regular.kind == "regular"
    assert set(Step.objects.filter(solution=solution).values_list("gold_rating", flat=True)) == {
        None
    }


def test_a_refresh_is_not_requested_twice_while_one_is_pending(campaign):
    first = snapshot_request(campaign=campaign)
    second = snapshot_request(campaign=campaign)
    assert first.pk == second.pk
