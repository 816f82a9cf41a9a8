"""The gold pages warn when the gold set cannot tell good annotators from bad ones, and the member
page shows the QC and screening scores with what they mean."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import make_campaign, make_gold_solution, make_member, submit_ratings

pytestmark = pytest.mark.django_db


def manager_client(campaign) -> Client:
    client = Client()
    client.force_login(make_member(campaign=campaign, role="manager").user)
    return client


def gold_page(campaign) -> str:
    response = manager_client(campaign).get(f"/campaigns/{campaign.slug}/gold/")
    assert response.status_code == 200
    return response.content.decode()


def test_gold_without_an_error_is_flagged():
    campaign = make_campaign()
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, 1, 0, 1])
    page = gold_page(campaign)
    assert 'id="gold-warnings"' in page
    assert "No screening solution has a gold error" in page


def test_gold_with_few_negative_steps_is_flagged_per_kind():
    campaign = make_campaign()
    # 1 negative of 8 scored QC steps (12%); the screening set is fine (2 of 4).
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1, 1, 1, 1, 1, 1, -1])
    make_gold_solution(campaign=campaign, kind="screening", gold=[1, -1])
    make_gold_solution(campaign=campaign, kind="screening", gold=[-1, 1])
    page = gold_page(campaign)
    assert "Only 1 of 8 scored quality-control gold steps (12%) are negative" in page
    assert "screening" not in page.split('id="gold-warnings"')[1].split("</section>")[0]


def test_gold_that_can_tell_good_from_bad_has_no_warning():
    campaign = make_campaign()
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, 0, -1])
    make_gold_solution(campaign=campaign, kind="qc", gold=[-1])
    assert 'id="gold-warnings"' not in gold_page(campaign)


def test_the_gold_edit_page_warns_too():
    campaign = make_campaign()
    solution = make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1])
    response = manager_client(campaign).get(f"/campaigns/{campaign.slug}/gold/{solution.pk}/")
    assert "No quality-control solution has a gold error" in response.content.decode()


def test_the_member_page_shows_the_qc_score_and_its_parts():
    from labeling import queue

    campaign = make_campaign(qc_rate=1.0)
    make_gold_solution(campaign=campaign, kind="qc", gold=[1, 1, -1])
    member = make_member(campaign=campaign)
    assignment = queue.assignment_next(campaign=campaign, annotator=member.user)
    submit_ratings(assignment=assignment, annotator=member.user, ratings=[1, 1, 1])
    response = manager_client(campaign).get(f"/campaigns/{campaign.slug}/members/{member.pk}/")
    page = response.content.decode()
    # Gold 1, 1, -1 against 1, 1, 1: kappa 0 (a constant rater), first error missed.
    assert "QC score <strong>0.00</strong>" in page
    assert "(0 of 1)" in page
    assert "What the score means" in page
    assert "2 of 3 scored steps rated exactly as gold (67%)" in page
