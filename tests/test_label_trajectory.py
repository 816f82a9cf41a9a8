"""The labelling page of an agent trajectory over HTTP: its task, tools, turns, folded results and
the final outcome's rating; and a math campaign's page as it always was."""

from __future__ import annotations

import pytest
from django.urls import reverse

from imports.pipeline import import_file
from labeling.label_page import ToolCallView
from labeling.models import Assignment, Campaign
from labeling.services import campaign_create
from labeling.traces import AGENT_INSTRUCTIONS, RESULT_LINES_SHOWN
from tests.conftest import FIXTURES
from tests.factories import make_campaign, make_member, make_user

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
OPENAI = FIXTURES / "agent_trajectories" / "openai_chat.jsonl"


@pytest.fixture
def campaign():
    campaign = make_campaign(slug="agents", trace_kind="agent", stop_at_first_error=False)
    import_file(OPENAI, campaign=campaign, fmt="agent-openai", grade=False)
    campaign.overlap = 2  # the imported labels hold one slot each
    campaign.save()
    return campaign


@pytest.fixture
def annotator(campaign, client):
    user = make_member(campaign=campaign).user
    client.force_login(user)
    return user


def url(name, assignment=None, slug="agents"):
    if assignment is None:
        return reverse(f"labeling:{name}", kwargs={"slug": slug})
    return reverse(f"labeling:{name}", kwargs={"slug": slug, "pk": assignment.pk})


def test_the_page_shows_the_task_tools_and_the_turn_with_its_call_and_result(client, annotator):
    page = client.get(url("label")).content.decode()
    assignment = Assignment.objects.get(annotator=annotator)
    problem = assignment.solution.problem.text
    assert ">Task</h2>" in page and problem in page
    assert "Tools (" in page
    first = assignment.solution.steps.get(index=0).content
    for call in first["tool_calls"]:
        assert f'<code class="tool-name">{call["name"]}</code>' in page
    assert "static/vendor/highlight/core.min.js" in page
    assert 'data-outcome="3"' not in page  # asked once every turn is rated


def test_the_outcome_is_stored_with_the_submission(client, annotator):
    client.get(url("label"))
    assignment = Assignment.objects.get(annotator=annotator)
    n = assignment.solution.steps.count()
    for index in range(n):
        client.post(url("rate", assignment), {"step_index": index, "rating": 1}, **HX)
    page = client.get(url("label")).content.decode()
    assert 'data-outcome="1"' in page and "Final outcome" in page
    key = f"web-{assignment.pk}-{assignment.solution_id}"
    client.post(url("submit", assignment), {"submission_key": key, "outcome_rating": "-1"}, **HX)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.outcome_rating == -1


def test_a_long_result_is_folded_after_a_few_lines():
    lines = [f"line {k}" for k in range(20)]
    view = ToolCallView.build(
        {"id": "c", "name": "bash", "arguments": {"command": "ls"}},
        {"tool_call_id": "c", "content": "\n".join(lines)},
    )
    assert view.folded and view.lines == 20
    assert view.head == "\n".join(lines[:RESULT_LINES_SHOWN])
    assert (view.arguments, view.language) == ("ls", "bash")
    short = ToolCallView.build({"name": "search", "arguments": {"query": "x", "k": 2}}, None)
    assert short.language == "json" and '"k": 2' in short.arguments and short.result is None


def test_a_new_agent_campaign_gets_agentprocessbench_meanings_as_instructions():
    campaign = campaign_create(creator=make_user(), slug="new-agents", name="A", trace_kind="agent")
    assert campaign.instructions == AGENT_INSTRUCTIONS
    assert "+1 (key 3)" in campaign.instructions and "wrong and harmful" in campaign.instructions
    math = campaign_create(creator=make_user(), slug="new-math", name="M")
    assert math.trace_kind == "math" and math.instructions == ""


def test_the_kind_cannot_change_once_the_campaign_has_problems(campaign):
    from django.forms.models import model_to_dict

    from labeling.forms import CampaignForm

    data = {**model_to_dict(campaign, fields=CampaignForm.Meta.fields), "trace_kind": "math"}
    form = CampaignForm(data, instance=Campaign.objects.get(pk=campaign.pk))
    assert not form.is_valid()
    assert "cannot change once it has problems" in str(form.errors["trace_kind"])
