"""Phase 1 mode's live candidates: sampled from the campaign's declared chat endpoint (a scripted
HTTP server in a thread: ``tests.generation_servers``) for a prefix the tree has none for, with
that prefix, by a job the page queues and polls (run here in the test's process, as a worker
would), stored once per prefix; a failing endpoint leaves the annotator writing."""

from __future__ import annotations

import pytest

from labeling import queue
from labeling.forms import CampaignForm
from labeling.models import StepCandidate
from machines.phase1_sampling import first_step, phase1_sampling_run
from tests.factories import make_campaign, make_member, make_problem, make_solution
from tests.generation_servers import Script, StubServer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _declared(settings):
    settings.STEPWISE_ENDPOINTS = []
    settings.STEPWISE_GENERATION_BACKOFF_MS = 1


def declare(settings, base_url: str) -> None:
    settings.STEPWISE_ENDPOINTS = [
        {"name": "sampler", "kind": "chat", "base_url": base_url, "models": ["stub"]}
    ]


def reply(body: dict) -> str:
    """One choice per request; a continuation says which prefix it continued."""
    messages = body["messages"]
    if body.get("continue_final_message"):
        assert messages[-1]["role"] == "assistant" and body["add_generation_prompt"] is False
        return "So $x = 2$.\n\n# Answer\n\n2\n\nAnd more after it."
    return f"Let $x = {len(messages)}$ first.\n\nThen the rest."


def page(assignment):
    """The page's phase 1 view, after the sampling job it queued (if any) has run."""
    view = queue.phase1_page(assignment=assignment)
    if view is not None and view.sampling is not None:
        phase1_sampling_run(job=view.sampling)
        view = queue.phase1_page(assignment=assignment)
        assert view.sampling is None
    return view


def serve(campaign):
    annotator = make_member(campaign=campaign).user
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    assignment.campaign = campaign
    return assignment, annotator


def test_a_prefix_the_tree_lacks_is_sampled_with_that_prefix(settings):
    campaign = make_campaign(phase1_mode=True, phase1_endpoint="sampler", phase1_samples=3)
    problem = make_problem(campaign=campaign, text="Find $x$ if $x + 1 = 3$.")
    make_solution(campaign=campaign, problem=problem, steps=["We subtract 1.", "So x = 2."])
    with StubServer(Script(reply=reply)) as server:
        declare(settings, server.base_url)
        assignment, annotator = serve(campaign)
        view = page(assignment)
        # Step 1 comes from the solution itself: nothing is asked.
        assert [c.text for c in view.candidates] == ["We subtract 1."]
        assert server.script.requests == []
        queue.candidate_rate(
            assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id, rating=0
        )
        queue.candidate_rate(
            assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id, rating=1
        )
        queue.step_write(assignment=assignment, annotator=annotator, position=0, text="Mine.")

        view = page(assignment)
        asked = list(server.script.requests)
        again = page(assignment)

    # Three candidates asked for (the stub answers one choice a request), with the prefix.
    assert len(asked) == 3 and [r["n"] for r in asked] == [3, 2, 1]
    assert asked[0]["messages"][-1] == {"role": "assistant", "content": "Mine.\n\n"}
    assert "Find $x$ if $x + 1 = 3$." in asked[0]["messages"][0]["content"]
    # One step each, with its answer section; duplicates stored once.
    assert [c.text for c in view.candidates] == ["So $x = 2$.\n\n# Answer\n\n2"]
    stored = StepCandidate.objects.filter(source="sampled")
    assert [(c.position, c.model) for c in stored] == [(1, "stub")]
    # Stored once per prefix: shown again without asking again.
    assert [c.id for c in again.candidates] == [c.id for c in view.candidates]


def test_a_failing_endpoint_says_so_and_the_annotator_writes(settings):
    campaign = make_campaign(phase1_mode=True, phase1_endpoint="sampler")
    make_solution(campaign=campaign, steps=["One."])
    with StubServer(Script(statuses=[500] * 10, retry_after=None)) as server:
        declare(settings, server.base_url)
        assignment, annotator = serve(campaign)
        view = page(assignment)
        queue.candidate_rate(
            assignment=assignment, annotator=annotator, candidate_id=view.candidates[0].id, rating=1
        )
        queue.step_write(assignment=assignment, annotator=annotator, position=0, text="Mine.")
        view = page(assignment)

    assert view.candidates == []
    assert "could not be sampled" in view.sampling_error
    assert "127.0.0.1" not in view.sampling_error and "http" not in view.sampling_error
    assert not StepCandidate.objects.filter(source="sampled").exists()


def test_the_first_step_of_a_completion_keeps_its_answer_section():
    assert first_step("A.\n\nB.") == "A."
    assert first_step("So 2.\n\n# Answer\n\n2\n\nextra") == "So 2.\n\n# Answer\n\n2"
    assert first_step("# Answer\n\n2\n\nextra") == "# Answer\n\n2"
    assert first_step("  \n\n") == ""


def test_the_settings_form_takes_only_a_declared_chat_endpoint(settings):
    settings.STEPWISE_ENDPOINTS = [
        {"name": "sampler", "kind": "chat", "base_url": "http://gpu:8000/v1", "models": ["m1"]}
    ]
    campaign = make_campaign()
    base = {
        "name": campaign.name,
        "overlap": 1,
        "lease_seconds": 1800,
        "qc_rate": 0,
        "screening_threshold": 0.35,
        "bad_problem_limit": 2,
        "al_wrong_answer_share": 0.8,
        "al_retrain_every": 500,
        "al_backbone": "bow",
        "phase1_mode": "on",
    }
    form = CampaignForm({**base, "phase1_endpoint": "sampler"}, instance=campaign)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["phase1_model"] == "m1" and form.cleaned_data["phase1_samples"] == 4
    form = CampaignForm({**base, "phase1_endpoint": "http://evil/"}, instance=campaign)
    assert not form.is_valid() and "phase1_endpoint" in form.errors
    form = CampaignForm(
        {**base, "phase1_endpoint": "sampler", "phase1_model": "other"}, instance=campaign
    )
    assert not form.is_valid() and "phase1_model" in form.errors
