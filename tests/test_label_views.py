"""The labelling page over HTTP: the flow with and without htmx, retries, times, refusals."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labeling.forms import STEP_TIME_MAX_MS, TOTAL_TIME_MAX_MS
from labeling.models import Assignment, StepLabel
from tests.factories import make_campaign, make_member, make_solution

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign():
    return make_campaign(slug="algebra", instructions="Rate *every* step.")


@pytest.fixture
def annotator(campaign, client):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def label_url(campaign):
    return reverse("labeling:label", kwargs={"slug": campaign.slug})


def action_url(name, assignment):
    return reverse(
        f"labeling:{name}", kwargs={"slug": assignment.campaign.slug, "pk": assignment.pk}
    )


def serve(client, campaign) -> Assignment:
    response = client.get(label_url(campaign))
    assert response.status_code == 200
    return Assignment.objects.get(annotator=response.wsgi_request.user, status="leased")


def ratings(assignment):
    return list(
        StepLabel.objects.filter(assignment=assignment)
        .order_by("step__index")
        .values_list("step__index", "rating", "flagged")
    )


def rate(client, assignment, index, rating, **extra):
    """Rate a step the way htmx does."""
    data = {"step_index": index, "rating": rating, **extra}
    return client.post(action_url("rate", assignment), data, **HX)


# --- The page --------------------------------------------------------------------------------


def test_it_shows_the_problem_the_boxed_answer_the_instructions_and_only_the_first_step(
    client, campaign, annotator
):
    make_solution(campaign=campaign, steps=["First $x_1$.", "Second.", "Third."])
    html = client.get(label_url(campaign)).content.decode()
    assert "\\(\\boxed{1}\\)" in html
    assert "<em>every</em>" in html
    assert '<span class="math">$x_1$</span>' in html
    assert "Step 1 of 3" in html
    assert "Second." not in html


def test_a_reload_resumes_the_same_solution_with_the_drafts(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["x", "y"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    html = client.get(label_url(campaign)).content.decode()
    assert serve(client, campaign) == assignment
    assert "+1 positive" in html
    assert "Step 2 of 3" in html


def test_the_page_has_no_inline_script_or_event_handler_attribute(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, -1)
    html = client.get(label_url(campaign)).content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)
    assert not re.search(r"\son[a-z]+\s*=", html)


def test_it_says_when_nothing_is_left(client, campaign, annotator):
    response = client.get(label_url(campaign))
    assert "All done here" in response.content.decode()


def test_a_paused_campaign_says_so(client, campaign, annotator):
    make_solution(campaign=campaign)
    campaign.is_paused = True
    campaign.save()
    assert "paused" in client.get(label_url(campaign)).content.decode()
    assert not Assignment.objects.exists()


# --- htmx: partials ----------------------------------------------------------------------------


def test_a_rating_returns_only_the_steps_partial_with_the_next_step(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    response = rate(client, assignment, 0, 0, time_ms="1500")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="steps"')
    assert "<html" not in html
    assert "0 neutral" in html and "Step 2 of 2" in html
    assert ratings(assignment) == [(0, 0, False)]
    assert StepLabel.objects.get().time_spent_ms == 1500


def test_the_submit_response_carries_the_next_solution(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["only step"])
    make_solution(campaign=campaign, steps=["step of the next solution"])
    first = serve(client, campaign)
    rate(client, first, 0, 1)
    response = client.post(
        action_url("submit", first),
        {"submission_key": f"web-{first.pk}-{first.solution_id}", "total_time_ms": "4200"},
        **HX,
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="workspace"')
    assert "step of the next solution" in html
    first.refresh_from_db()
    assert (first.status, first.finish_reason, first.total_time_ms) == (
        "submitted",
        "solution",
        4200,
    )
    second = Assignment.objects.get(status="leased")
    assert f'data-assignment="{second.pk}"' in html


# --- Without JavaScript: forms post and redirect -------------------------------------------------


def test_the_whole_flow_works_with_plain_forms(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["next"])
    assignment = serve(client, campaign)
    page = label_url(campaign)
    for index, rating in enumerate([1, 1, 0]):
        response = client.post(
            action_url("rate", assignment), {"step_index": index, "rating": rating}
        )
        assert response.status_code == 302 and response.url == page
    assert client.post(action_url("undo", assignment), {"step_index": 2}).url == page
    client.post(action_url("rate", assignment), {"step_index": 2, "rating": 1, "flagged": "1"})
    client.post(action_url("flag", assignment), {"step_index": 0, "flagged": "1"})
    html = client.get(page).content.decode()
    assert "All 3 steps rated." in html
    response = client.post(
        action_url("submit", assignment), {"submission_key": f"web-{assignment.pk}-x"}, follow=True
    )
    assert response.redirect_chain == [(page, 302)]
    assert "Submitted." in response.content.decode()
    assert ">next<" in response.content.decode().replace("<p>", ">").replace("</p>", "<")
    assert ratings(assignment) == [(0, 1, True), (1, 1, False), (2, 1, True)]
    assignment.refresh_from_db()
    assert assignment.finish_reason == "solution"
    # Without client-measured times the server estimates them (and never stores nonsense).
    assert assignment.total_time_ms is not None and 0 <= assignment.total_time_ms < 60_000
    assert all(ms is not None for ms in assignment.labels.values_list("time_spent_ms", flat=True))


def test_a_refused_plain_form_comes_back_with_the_reason(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    response = client.post(
        action_url("rate", assignment), {"step_index": 1, "rating": 1}, follow=True
    )
    assert "Rate step 1 first." in response.content.decode()
    assert not StepLabel.objects.exists()


# --- Stop at first error, corrections, exits -----------------------------------------------------


def test_a_negative_step_ends_the_solution_and_offers_a_correction(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b", "c", "d"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    html = rate(client, assignment, 1, -1).content.decode()
    assert "Step 2 is wrong" in html
    assert 'name="human_completion"' in html
    assert "Step 3" not in html  # nothing after the error is revealed
    client.post(
        action_url("submit", assignment),
        {"submission_key": "k1", "human_completion": "  b should be 4.  "},
        **HX,
    )
    assignment.refresh_from_db()
    assert assignment.finish_reason == "found_error"
    label = assignment.labels.get(step__index=1)
    assert label.human_completion["text"] == "b should be 4."


def test_without_stop_at_first_error_a_negative_step_does_not_end_it(client, annotator):
    campaign = make_campaign(slug="all-steps", stop_at_first_error=False)
    make_member(campaign=campaign, user=annotator)
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    html = rate(client, assignment, 0, -1).content.decode()
    assert "Step 2 of 2" in html and "human_completion" not in html


@pytest.mark.parametrize("reason", ["give_up", "bad_problem"])
def test_give_up_and_bad_problem_keep_the_ratings_and_serve_the_next(
    client, campaign, annotator, reason
):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    make_solution(campaign=campaign, steps=["the next one"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    response = client.post(
        action_url("submit", assignment),
        {"submission_key": "k-exit", "finish_reason": reason},
        **HX,
    )
    assert "the next one" in response.content.decode()
    assignment.refresh_from_db()
    assert (assignment.status, assignment.finish_reason) == ("submitted", reason)
    assert ratings(assignment) == [(0, 1, False)]


def test_skip_hands_it_back_and_serves_the_next(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["skipped one"])
    make_solution(campaign=campaign, steps=["the next one"])
    assignment = serve(client, campaign)
    response = client.post(action_url("skip", assignment), **HX)
    assert "the next one" in response.content.decode()
    assert "Skipped." in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == "skipped"


def test_a_screening_question_offers_no_skip(client, annotator):
    campaign = make_campaign(slug="screened", requires_screening=True)
    make_member(campaign=campaign, user=annotator)
    make_solution(campaign=campaign, kind="screening", steps=["a"], gold=[1])
    html = client.get(label_url(campaign)).content.decode()
    assert "screening question" in html
    assert "data-key-skip" not in html


def test_submitting_before_the_end_says_what_is_missing(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    response = client.post(action_url("submit", assignment), {"submission_key": "early"}, **HX)
    assert response.status_code == 400
    assert "1 of 2 steps are rated" in response.content.decode()
    assert Assignment.objects.get().status == "leased"


# --- Retries never double anything ---------------------------------------------------------------


def test_a_retried_rating_sets_the_same_label_again(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    rate(client, assignment, 0, 1)
    assert ratings(assignment) == [(0, 1, False)]


def test_a_retried_undo_removes_one_rating_only(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b", "c"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    rate(client, assignment, 1, 0)
    for _ in range(2):
        client.post(action_url("undo", assignment), {"step_index": 1}, **HX)
    assert ratings(assignment) == [(0, 1, False)]


def test_a_retried_submission_is_replayed_and_still_gets_the_next_solution(
    client, campaign, annotator
):
    make_solution(campaign=campaign, steps=["a"])
    make_solution(campaign=campaign, steps=["b"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    data = {"submission_key": f"web-{assignment.pk}-{assignment.solution_id}"}
    first = client.post(action_url("submit", assignment), data, **HX)
    again = client.post(action_url("submit", assignment), data, **HX)
    assert first.status_code == again.status_code == 200
    assert StepLabel.objects.filter(assignment=assignment).count() == 1
    assert Assignment.objects.filter(status="submitted").count() == 1
    assert Assignment.objects.filter(status="leased").count() == 1


def test_acting_on_a_submitted_assignment_moves_on_to_the_next(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a"])
    make_solution(campaign=campaign, steps=["the next one"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    client.post(action_url("submit", assignment), {"submission_key": "once"}, **HX)
    response = rate(client, assignment, 0, -1)
    assert response.status_code == 409
    assert response["HX-Retarget"] == "#workspace"
    assert "the next one" in response.content.decode()
    assert ratings(assignment) == [(0, 1, False)]


# --- Times: client-measured, clamped -------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "stored"),
    [("2500", 2500), ("-40", 0), (str(10**12), STEP_TIME_MAX_MS), ("1e3", 1000)],
)
def test_step_times_are_clamped_to_sane_values(client, campaign, annotator, sent, stored):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1, time_ms=sent)
    assert StepLabel.objects.get().time_spent_ms == stored


def test_an_unreadable_time_never_costs_the_rating(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a", "b"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1, time_ms="NaN")
    label = StepLabel.objects.get()
    assert label.rating == 1 and 0 <= label.time_spent_ms < 60_000


def test_the_total_time_is_clamped(client, campaign, annotator):
    make_solution(campaign=campaign, steps=["a"])
    assignment = serve(client, campaign)
    rate(client, assignment, 0, 1)
    client.post(
        action_url("submit", assignment),
        {"submission_key": "t", "total_time_ms": str(10**15)},
        **HX,
    )
    assignment.refresh_from_db()
    assert assignment.total_time_ms == TOTAL_TIME_MAX_MS
