"""Sending solutions to people from the data browser: the bulk actions ``adjudicate`` (their
steps join the adjudication queue) and ``review`` (their submissions join the review queue's
"sent for review"), durable jobs recorded in each solution's history, for managers only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotators.review.selectors import adjudication_queue, review_queue
from annotators.review.services import adjudication_decide, review_submit
from labeling.curation.actions import bulk_action_create, bulk_action_run
from labeling.curation.filters import SolutionFilter
from labeling.curation.history import solution_history
from labeling.models import (
    AdjudicationRequest,
    Membership,
    ReviewRequest,
    SolutionBulkAction,
    SolutionEvent,
    StepEvidence,
)
from tests.factories import (
    make_campaign,
    make_labelled,
    make_member,
    make_problem,
    make_review,
    make_solution,
    make_user,
)

pytestmark = pytest.mark.django_db

STEPS = ["We have $1 + 1 = 2$.", "Doubling gives $2 \\cdot 2 = 5$.", "# Answer\n\n5"]


@pytest.fixture
def campaign():
    return make_campaign(slug="routing")


@pytest.fixture
def manager(campaign):
    return make_member(campaign=campaign, role=Membership.Role.MANAGER).user


def _solution(campaign, n: int, *, ratings, reached: int | None = None):
    """A solution rated ``ratings``; with ``reached``, 8 rollouts from its second step of which
    that many reach the answer (0 with a positive rating: a conflict)."""
    problem = make_problem(campaign=campaign, text=f"Problem {n}", ground_truth_answer="4")
    solution = make_solution(campaign=campaign, problem=problem, steps=STEPS, answer="5")
    if ratings:
        make_labelled(solution=solution, ratings=ratings)
    if reached is not None:
        StepEvidence.objects.create(
            solution=solution,
            step=solution.steps.get(index=1),
            kind=StepEvidence.Kind.ROLLOUT,
            model="stub",
            value=reached / 8,
            samples=8,
            correct=reached,
        )
    return solution


def _send(campaign, manager, action: str, params: dict):
    return bulk_action_create(
        campaign=campaign,
        action=action,
        solution_filter=SolutionFilter.from_params(params),
        created_by=manager,
    )


def _queue(campaign, state="open"):
    rows, _ = adjudication_queue(campaign=campaign, state=state)
    return [(r["solution_id"], r["index"], r["requested"]) for r in rows]


def test_the_conflicting_steps_go_to_the_adjudication_queue(campaign, manager):
    conflict = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    agreed = _solution(campaign, 2, ratings=[1, 1, 1], reached=6)
    assert _queue(campaign) == []  # nobody disagrees: the queue is empty

    job = _send(campaign, manager, "adjudicate", {"evidence": ["conflict"]})

    assert (job.status, job.total, job.changed) == ("done", 1, 1)
    step = conflict.steps.get(index=1)
    assert list(AdjudicationRequest.objects.values_list("step_id", "requested_by")) == [
        (step.pk, manager.pk)
    ]
    assert _queue(campaign) == [(conflict.pk, 1, True)]
    rows, _ = adjudication_queue(campaign=campaign)
    assert (rows[0]["n"], rows[0]["low"], rows[0]["high"]) == (1, 1, 1)
    event = SolutionEvent.objects.get()
    assert (event.solution, event.action, event.detail) == (
        conflict,
        "sent_to_adjudication",
        {"steps": "2"},
    )
    assert not AdjudicationRequest.objects.filter(solution=agreed).exists()

    # A reviewer decides it although the annotators agree: it was sent.
    adjudication_decide(campaign=campaign, step=step, decided_by=make_user(), rating=-1)
    assert _queue(campaign) == []
    assert _queue(campaign, "decided") == [(conflict.pk, 1, True)]
    assert _queue(campaign, "all") == [(conflict.pk, 1, True)]


def test_a_solution_without_a_conflict_sends_every_step_someone_rated(campaign, manager):
    rated = _solution(campaign, 1, ratings=[1, -1])
    unrated = _solution(campaign, 2, ratings=[])
    job = _send(campaign, manager, "adjudicate", {"id": [str(rated.pk), str(unrated.pk)]})
    assert (job.total, job.changed) == (2, 1)
    assert _queue(campaign) == [(rated.pk, 0, True), (rated.pk, 1, True)]
    assert SolutionEvent.objects.get().detail == {"steps": "1, 2"}


def test_a_disputed_step_that_was_sent_is_listed_once_beside_the_others(campaign, manager):
    disputed = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    make_labelled(solution=disputed, ratings=[1, -1])  # a second annotator disagrees on step 2
    other = _solution(campaign, 2, ratings=[1, 1])
    make_labelled(solution=other, ratings=[-1])  # disputed on step 1, never sent
    _send(campaign, manager, "adjudicate", {"id": [str(disputed.pk)]})
    assert _queue(campaign) == [(disputed.pk, 1, True), (other.pk, 0, False)]
    # Sending again renews the request; nothing is listed twice.
    _send(campaign, manager, "adjudicate", {"id": [str(disputed.pk)]})
    assert AdjudicationRequest.objects.count() == 1
    assert _queue(campaign) == [(disputed.pk, 1, True), (other.pk, 0, False)]
    # Pages still cut the combined list where they should.
    first, more = adjudication_queue(campaign=campaign, per_page=1)
    second, last = adjudication_queue(campaign=campaign, page=2, per_page=1)
    assert [r["solution_id"] for r in first + second] == [disputed.pk, other.pk]
    assert (more, last) == (True, False)


def test_the_adjudication_queue_page_marks_what_was_sent(client, campaign, manager):
    conflict = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    _send(campaign, manager, "adjudicate", {"evidence": ["conflict"]})
    reviewer = make_member(campaign=campaign, role=Membership.Role.REVIEWER).user
    client.force_login(reviewer)
    page = client.get(reverse("annotators:adjudications", kwargs={"slug": campaign.slug}))
    html = page.content.decode()
    step = conflict.steps.get(index=1)
    assert f'id="disputed-step-{step.pk}"' in html and ">sent</span>" in html
    detail = reverse("annotators:adjudication", kwargs={"slug": campaign.slug, "pk": step.pk})
    assert client.post(detail, {"rating": "-1", "note": "no rollout reaches 4"}).status_code == 302
    assert step.adjudications.get().rating == -1


def test_send_for_review_brings_reviewed_work_back_until_someone_reviews_it(campaign, manager):
    accepted = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    assignment = accepted.assignments.get()
    make_review(assignment=assignment, decision="accepted")
    untouched = _solution(campaign, 2, ratings=[1, 1])
    _solution(campaign, 3, ratings=[])  # nothing submitted: nothing to send
    assert review_queue(campaign=campaign, state="sent") == ([], False)

    job = _send(campaign, manager, "review", {"evidence": ["any"]})
    assert (job.total, job.changed) == (1, 1)
    rows, _ = review_queue(campaign=campaign, state="sent")
    assert [r["id"] for r in rows] == [assignment.pk]
    assert ReviewRequest.objects.get().solution == accepted
    assert SolutionEvent.objects.get().action == "sent_to_review"

    review_submit(assignment=assignment, reviewer=make_user(), decision="accepted")
    assert review_queue(campaign=campaign, state="sent") == ([], False)
    # Sent again: back in the list; an unsent solution's work never is.
    _send(campaign, manager, "review", {"id": [str(accepted.pk), str(untouched.pk)]})
    rows, _ = review_queue(campaign=campaign, state="sent")
    assert sorted(r["solution_id"] for r in rows) == sorted([accepted.pk, untouched.pk])


def test_the_review_list_filters_what_was_sent(client, campaign, manager):
    solution = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    _send(campaign, manager, "review", {"id": [str(solution.pk)]})
    reviewer = make_member(campaign=campaign, role=Membership.Role.REVIEWER).user
    client.force_login(reviewer)
    url = reverse("annotators:reviews", kwargs={"slug": campaign.slug})
    page = client.get(url, {"state": "sent"})
    assert page.status_code == 200
    assert [r["solution_id"] for r in page.context["rows"]] == [solution.pk]


def test_the_sending_is_in_the_solutions_history(campaign, manager):
    solution = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    _send(campaign, manager, "adjudicate", {"id": [str(solution.pk)]})
    _send(campaign, manager, "review", {"id": [str(solution.pk)]})
    entries = [(e.what, e.who, e.detail) for e in solution_history(solution=solution)]
    assert ("sent to adjudication", manager.username, "steps: 2") in entries
    assert ("sent for review", manager.username, "submissions: 1") in entries


@pytest.mark.parametrize("action", ["adjudicate", "review"])
@pytest.mark.parametrize("who", ["annotator", "reviewer", "other_manager", "stranger"])
def test_only_the_campaigns_managers_may_send(client, campaign, action, who):
    solution = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    if who == "other_manager":
        user = make_member(campaign=make_campaign(slug="other"), role=Membership.Role.MANAGER).user
    elif who == "stranger":
        user = make_user()
    else:
        user = make_member(campaign=campaign, role=who).user
    client.force_login(user)
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    response = client.post(url, {"action": action, "scope": "selected", "id": [solution.pk]})
    assert response.status_code in (403, 404)
    assert not SolutionBulkAction.objects.exists()
    assert not AdjudicationRequest.objects.exists() and not ReviewRequest.objects.exists()


def test_a_manager_sends_from_the_browser(client, campaign, manager):
    solution = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    client.force_login(manager)
    url = reverse("labeling:browser-action", kwargs={"slug": campaign.slug})
    response = client.post(
        url, {"action": "adjudicate", "scope": "all", "query": "evidence=conflict"}
    )
    assert response.status_code == 302
    job = SolutionBulkAction.objects.get()
    assert (job.action, job.status, job.changed) == ("adjudicate", "done", 1)
    assert AdjudicationRequest.objects.get().solution == solution
    page = client.get(response["Location"]).content.decode()
    queue = reverse("annotators:adjudications", kwargs={"slug": campaign.slug})
    assert f'href="{queue}">The adjudication queue</a>' in page


@pytest.mark.parametrize("action", ["adjudicate", "review"])
def test_a_send_that_loses_its_job_to_another_attempt_writes_nothing(
    monkeypatch, campaign, manager, action
):
    solution = _solution(campaign, 1, ratings=[1, 1, 1], reached=0)
    job = SolutionBulkAction.objects.create(
        campaign=campaign,
        action=action,
        selection={"id": [str(solution.pk)]},
        total=1,
        created_by=manager,
    )

    def take_over(stage: str) -> None:  # what the sweep and a second worker do
        SolutionBulkAction.objects.filter(pk=job.pk).update(attempts=2)

    monkeypatch.setattr("labeling.curation.actions.stage_pause", take_over)
    bulk_action_run(job=job)
    job.refresh_from_db()
    assert job.status == "running" and job.changed == 0
    assert not AdjudicationRequest.objects.exists() and not ReviewRequest.objects.exists()
    assert not SolutionEvent.objects.exists()  # all or nothing
