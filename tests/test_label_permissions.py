"""Who sees what on the labelling page: own campaigns, own assignments, own labels, never gold."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Assignment, Membership, StepLabel
from tests.factories import (
    make_campaign,
    make_gold_solution,
    make_labelled,
    make_member,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
ACTIONS = [
    ("rate", {"step_index": 0, "rating": -1}),
    ("undo", {"step_index": 0}),
    ("flag", {"step_index": 0, "flagged": "1"}),
    ("submit", {"submission_key": "stolen", "finish_reason": "give_up"}),
    ("skip", {}),
]


def label_url(campaign):
    return reverse("labeling:label", kwargs={"slug": campaign.slug})


def action_url(name, assignment, slug=None):
    slug = slug or assignment.campaign.slug
    return reverse(f"labeling:{name}", kwargs={"slug": slug, "pk": assignment.pk})


def leased_with_one_rating():
    """Someone else's assignment with step 0 rated +1."""
    campaign = make_campaign()
    make_solution(campaign=campaign, steps=["a", "b"])
    owner = make_member(campaign=campaign).user
    from labeling import queue

    assignment = queue.assignment_next(campaign=campaign, annotator=owner)
    queue.step_label_set(assignment=assignment, annotator=owner, step_index=0, rating=1)
    return assignment


def test_the_pages_need_a_login(client):
    assignment = leased_with_one_rating()
    response = client.get(label_url(assignment.campaign))
    assert response.status_code == 302 and "/login/" in response.url
    assert client.get(reverse("home")).status_code == 302
    for name, data in ACTIONS:
        response = client.post(action_url(name, assignment), data)
        assert response.status_code == 302 and "/login/" in response.url


def test_an_outsider_gets_404_for_the_campaign(client):
    campaign = make_campaign()
    make_solution(campaign=campaign)
    client.force_login(make_user())
    assert client.get(label_url(campaign)).status_code == 404
    assert not Assignment.objects.exists()


@pytest.mark.parametrize(("name", "data"), ACTIONS)
def test_another_annotators_assignment_is_404_and_untouched(client, name, data):
    assignment = leased_with_one_rating()
    intruder = make_member(campaign=assignment.campaign).user
    client.force_login(intruder)
    assert client.post(action_url(name, assignment), data, **HX).status_code == 404
    assert client.post(action_url(name, assignment), data).status_code == 404
    assignment.refresh_from_db()
    assert assignment.status == "leased"
    assert list(assignment.labels.values_list("rating", "flagged")) == [(1, False)]


def test_an_assignment_is_404_under_another_campaigns_address(client):
    assignment = leased_with_one_rating()
    other = make_campaign()
    make_member(campaign=other, user=assignment.annotator)
    client.force_login(assignment.annotator)
    url = action_url("rate", assignment, slug=other.slug)
    assert client.post(url, {"step_index": 1, "rating": 1}).status_code == 404
    assert assignment.labels.count() == 1


def test_a_removed_member_can_no_longer_label(client):
    assignment = leased_with_one_rating()
    Membership.objects.filter(user=assignment.annotator).update(status="removed")
    client.force_login(assignment.annotator)
    assert client.get(label_url(assignment.campaign)).status_code == 404
    response = client.post(action_url("rate", assignment), {"step_index": 1, "rating": 1})
    assert response.status_code == 403
    assert assignment.labels.count() == 1


def test_a_site_admin_outside_the_campaign_is_told_to_join_it(client):
    campaign = make_campaign()
    make_solution(campaign=campaign)
    client.force_login(make_user(is_superuser=True))
    response = client.get(label_url(campaign))
    assert "not a member" in response.content.decode()
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("kind", ["qc", "screening"])
def test_gold_ratings_are_never_shown_before_or_after_submitting(client, kind):
    campaign = make_campaign(requires_screening=kind == "screening", qc_rate=1.0)
    gold = make_gold_solution(
        campaign=campaign,
        kind=kind,
        gold=[1, -1, 0],
        steps=["gold step one", "gold step two", "gold step three"],
    )
    make_solution(campaign=campaign, steps=["regular"])
    user = make_member(campaign=campaign).user
    client.force_login(user)
    html = client.get(label_url(campaign)).content.decode()
    assert "gold step one" in html
    assignment = Assignment.objects.get(solution=gold)
    steps = client.post(action_url("rate", assignment), {"step_index": 0, "rating": 1}, **HX)
    pages = [html, steps.content.decode()]
    response = client.post(
        action_url("submit", assignment), {"submission_key": "g", "finish_reason": "give_up"}, **HX
    )
    pages.append(response.content.decode())
    pages.append(client.get(label_url(campaign)).content.decode())
    for page in pages:
        lowered = page.lower()
        assert "gold" not in lowered.replace("gold step", "")
        assert "quality" not in lowered
        # The only rating ever shown is the annotator's own +1 on step 1.
        assert 'class="rating r-1"' not in page and 'class="rating r0"' not in page
    assert 'class="rating r1"' in pages[1]


def test_other_annotators_labels_are_never_shown(client):
    campaign = make_campaign(overlap=2)
    solution = make_solution(campaign=campaign, steps=["shared one", "shared two"])
    other = make_member(campaign=campaign).user
    theirs = make_labelled(
        solution=solution,
        annotator=other,
        ratings=[-1],
        human_completions={0: "THEIR-SECRET-CORRECTION"},
        status="leased",
        finish_reason="",
    )
    StepLabel.objects.filter(assignment=theirs).update(flagged=True)
    me = make_member(campaign=campaign).user
    client.force_login(me)
    html = client.get(label_url(campaign)).content.decode()
    assert "shared one" in html
    assert "THEIR-SECRET-CORRECTION" not in html
    assert "0 of 2 steps rated" in html
    assert 'class="rating' not in html and "unsure</span>" not in html


def test_user_text_is_escaped_everywhere(client):
    payload = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    campaign = make_campaign(instructions=payload)
    make_solution(campaign=campaign, steps=[payload, "two"])
    campaign.problems.update(text=payload, ground_truth_answer=payload)
    user = make_member(campaign=campaign).user
    client.force_login(user)
    html = client.get(label_url(campaign)).content.decode()
    # Problem, ground-truth answer, instructions and step: four times, always as text.
    assert "<script>alert" not in html and "<img src=x" not in html
    assert html.count("&lt;script&gt;") == 4
    assignment = Assignment.objects.get()
    steps = client.post(action_url("rate", assignment), {"step_index": 0, "rating": 1}, **HX)
    assert "<script>alert" not in steps.content.decode()


def test_a_correction_with_markup_comes_back_escaped(client):
    campaign = make_campaign()
    make_solution(campaign=campaign, steps=["a", "b"])
    user = make_member(campaign=campaign).user
    client.force_login(user)
    client.get(label_url(campaign))
    assignment = Assignment.objects.get()
    from labeling import queue

    queue.step_label_set(assignment=assignment, annotator=user, step_index=0, rating=-1)
    queue.step_label_human_completion(
        assignment=assignment, annotator=user, step_index=0, text="</textarea><img src=x>"
    )
    html = client.get(label_url(campaign)).content.decode()
    assert "&lt;/textarea&gt;&lt;img src=x&gt;" in html
    assert "<img src=x>" not in html
