"""My work (own history, read-only solution, amendments) and the adjudication pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.review.services import review_submit
from labeling import queue
from labeling.models import Adjudication, Assignment
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_member,
    make_solution,
    make_user,
    submit_ratings,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign():
    return make_campaign(slug="mine", overlap=2)


@pytest.fixture
def people(campaign):
    return {
        name: make_member(campaign=campaign, user=make_user(username=name), role=role).user
        for name, role in [("rev", "reviewer"), ("ann", "annotator"), ("bob", "annotator")]
    }


def labelled_by(campaign, annotator, ratings):
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    submit_ratings(assignment=assignment, annotator=annotator, ratings=ratings)
    assignment.refresh_from_db()
    return assignment


def item_url(assignment):
    return reverse(
        "labeling:my-work-item", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}
    )


def test_my_work_lists_my_ratings_the_outcome_and_the_comment(client, campaign, people):
    make_solution(campaign=campaign, steps=["$x=1$", "so $x+1=2$"])
    mine = labelled_by(campaign, people["ann"], [1, -1])
    labelled_by(campaign, people["bob"], [0, 0])
    review_submit(
        assignment=mine, reviewer=people["rev"], decision="rejected", comment="Step 2 is <right>."
    )
    client.force_login(people["ann"])

    page = client.get(reverse("labeling:my-work", kwargs={"slug": campaign.slug}))

    html = page.content.decode()
    assert [row["id"] for row in page.context["rows"]] == [mine.pk]
    assert "Step 2 is &lt;right&gt;." in html and "rejected" in html
    assert item_url(mine) in html
    assert "rev" not in page.context["rows"][0].values()


def test_the_solution_as_i_rated_it_shows_no_one_elses_labels_nor_gold(client, campaign, people):
    gold = make_gold_solution(campaign=campaign, kind="qc", gold=[-1, -1], steps=["$a^2$", "b"])
    campaign.qc_rate = 1.0
    campaign.save()
    mine = labelled_by(campaign, people["ann"], [1, 1])
    assert mine.solution_id == gold.pk
    theirs = labelled_by(campaign, people["bob"], [-1])
    assert theirs.solution_id == gold.pk
    client.force_login(people["ann"])

    page = client.get(item_url(mine))

    html = page.content.decode()
    assert page.status_code == 200
    assert 'class="math' in html  # formulas go to KaTeX, as on the labelling page
    assert html.count("+1") >= 2 and "−1" not in html.split("Your ratings")[1].split("Amend")[0]
    assert "quality" not in html.lower() and "gold" not in html.lower()
    assert "bob" not in html
    # Bob's work is not hers to open.
    assert client.get(item_url(theirs)).status_code == 404


def test_i_amend_before_review_and_the_page_shows_both_versions(client, campaign, people):
    make_solution(campaign=campaign, steps=["a", "b"])
    mine = labelled_by(campaign, people["ann"], [1, 1])
    client.force_login(people["ann"])

    response = client.post(item_url(mine), {"step_0": "1", "step_1": "-1", "flag_1": "on"})

    amended = Assignment.objects.get(supersedes=mine)
    assert response.status_code == 302 and response.url == item_url(amended)
    page = client.get(item_url(amended)).content.decode()
    assert item_url(mine) in page and "superseded" in page
    assert client.get(item_url(mine)).status_code == 200  # the earlier version stays readable


def test_reviewed_work_cannot_be_amended_from_the_page(client, campaign, people):
    make_solution(campaign=campaign, steps=["a"])
    mine = labelled_by(campaign, people["ann"], [1])
    review_submit(assignment=mine, reviewer=people["rev"], decision="accepted")
    client.force_login(people["ann"])

    assert 'id="amend"' not in client.get(item_url(mine)).content.decode()
    response = client.post(item_url(mine), {"step_0": "-1"})

    assert response.status_code == 400
    assert not Assignment.objects.filter(supersedes=mine).exists()


def test_my_reviews_links_to_the_solution(client, campaign, people):
    make_solution(campaign=campaign, steps=["a"])
    mine = labelled_by(campaign, people["ann"], [1])
    review_submit(assignment=mine, reviewer=people["rev"], decision="accepted")
    client.force_login(people["ann"])

    page = client.get(reverse("annotators:my-reviews", kwargs={"slug": campaign.slug}))

    assert item_url(mine) in page.content.decode()


def test_a_reviewer_sees_the_ratings_side_by_side_and_decides(client, campaign, people):
    solution = make_solution(campaign=campaign, steps=["a", "b"])
    labelled_by(campaign, people["ann"], [1, 1])
    labelled_by(campaign, people["bob"], [1, -1])
    step = solution.steps.get(index=1)
    client.force_login(people["rev"])
    queue_url = reverse("annotators:adjudications", kwargs={"slug": campaign.slug})
    url = reverse("annotators:adjudication", kwargs={"slug": campaign.slug, "pk": step.pk})

    listed = client.get(queue_url)
    page = client.get(url).content.decode()
    response = client.post(url, {"rating": "0", "note": "neutral, really"})

    assert [row["step_id"] for row in listed.context["rows"]] == [step.pk]
    assert "ann" in page and "bob" in page
    assert response.status_code == 302
    decision = Adjudication.objects.get(step=step)
    assert (decision.rating, decision.note, decision.decided_by) == (
        0,
        "neutral, really",
        people["rev"],
    )
    assert client.get(queue_url).context["rows"] == []
    assert [r["step_id"] for r in client.get(queue_url + "?state=decided").context["rows"]] == [
        step.pk
    ]


def test_an_amendment_is_confirmed_on_the_page_it_leads_to(client, campaign, people):
    make_solution(campaign=campaign, steps=["a", "b"])
    mine = labelled_by(campaign, people["ann"], [1, 1])
    client.force_login(people["ann"])
    page = client.post(item_url(mine), {"step_0": "1", "step_1": "-1"}, follow=True)
    assert "Amended: your earlier version is kept." in page.content.decode()
