"""Kinds of trace, declared once (labeling.traces): every name a kind gives resolves in the layer
that owns it, and what differs by kind reaches the data browser's search and the judge."""

from __future__ import annotations

import pytest
from django.template.loader import get_template

from exports.formats import FORMATS
from imports.pipeline import FORMATS as IMPORT_FORMATS
from imports.pipeline import import_file
from labeling.curation.filters import search_q
from labeling.models import Campaign, Solution
from labeling.traces import DEFAULT_KIND, MATH, TRACE_KINDS, trace_kind
from machines.evidence import JUDGE, EvidenceClient, Unit
from machines.prompts import JUDGE_PROMPTS
from tests.conftest import FIXTURES
from tests.factories import make_campaign

OPENAI = FIXTURES / "agent_trajectories" / "openai_chat.jsonl"


def test_every_name_a_kind_declares_exists_where_it_lives():
    claimed: set[str] = set()
    for kind in TRACE_KINDS.values():
        assert set(kind.import_formats) <= set(IMPORT_FORMATS), kind.name
        assert not claimed & set(kind.import_formats), "a format belongs to one kind"
        claimed |= set(kind.import_formats)
        assert set(kind.exports_refused) <= set(FORMATS), kind.name
        assert kind.judge_prompt in JUDGE_PROMPTS, kind.name
        get_template(kind.context_template)
        get_template(kind.step_template)
        JUDGE_PROMPTS[kind.judge_prompt].format(problem="p", steps="s")
    assert claimed == set(IMPORT_FORMATS), "every import format belongs to a kind"


def test_the_campaign_field_offers_every_kind_and_defaults_to_math():
    field = Campaign._meta.get_field("trace_kind")
    assert [value for value, _ in field.choices] == list(TRACE_KINDS)
    assert field.default == DEFAULT_KIND == MATH.name
    assert trace_kind("no-such-kind") is MATH


@pytest.mark.django_db
def test_the_data_browser_searches_inside_tool_calls_and_results():
    campaign = make_campaign(trace_kind="agent")
    import_file(OPENAI, campaign=campaign, fmt="agent-openai", grade=False)
    found = lambda text: set(  # noqa: E731
        Solution.objects.filter(campaign=campaign)
        .filter(search_q(text))
        .values_list("source_ref", flat=True)
    )
    assert found('"Danube length km"') == {"oa-rivers"}  # a call's arguments
    assert found('"flows through ten countries"') == {"oa-rivers"}  # a tool's result
    assert found("print") == {"oa-rivers", "oa-miles"}  # the code a tool ran


@pytest.mark.django_db
def test_the_judge_asks_about_a_trajectory_with_the_trajectory_prompt():
    campaign = make_campaign(trace_kind="agent")
    import_file(OPENAI, campaign=campaign, fmt="agent-openai", grade=False)
    solution = Solution.objects.get(source_ref="oa-rivers")
    steps = list(solution.steps.order_by("index"))
    client = object.__new__(EvidenceClient)  # judge_values reads only the unit
    asked = client.judge_values(Unit(solution=solution, index=JUDGE, steps=steps, want=1))
    prompt = asked["messages"][0]["content"]
    assert prompt.startswith("The following is a task given to an AI agent")
    assert "<step_0>\nI will look up the Danube's length first." in prompt
    assert "Tool call: search" in prompt


@pytest.mark.django_db
def test_the_new_campaign_page_offers_the_kinds(client):
    from django.urls import reverse

    from tests.factories import make_user

    manager = make_user()
    manager.is_staff = True
    manager.save()
    client.force_login(manager)
    html = client.get(reverse("labeling:campaign-create")).content.decode()
    assert "What it labels" in html
    for kind in TRACE_KINDS.values():
        assert f'value="{kind.name}"' in html and kind.title in html
