"""seed_demo: the demo campaign from demo/, its two accounts, and nothing twice."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from labeling.models import Assignment, Campaign, Membership, Problem, Solution, Step, StepLabel

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

MODELS = (Campaign, Problem, Solution, Step, Assignment, StepLabel, Membership, get_user_model())


def counts() -> list[int]:
    return [m.objects.count() for m in MODELS]


def test_it_seeds_a_demo_campaign_with_a_few_hundred_real_solutions(capsys):
    call_command("seed_demo")

    campaign = Campaign.objects.get(slug="demo")
    assert campaign.solutions.count() >= 400
    assert campaign.solutions.filter(is_open=True).count() >= 300  # work for the annotator
    assert campaign.solutions.filter(kind="qc").count() == 9  # ProcessBench, with gold ratings
    assert Step.objects.filter(solution__kind="qc", gold_rating__isnull=False).exists()
    assert Assignment.objects.filter(campaign=campaign, status="submitted").count() == 72
    assert campaign.solutions.exclude(answer_is_correct=None).count() >= 400
    out = capsys.readouterr().out
    assert "user demo-manager  password stepwise-demo" in out
    assert "user demo-annotator  password stepwise-demo" in out


def test_the_demo_accounts_log_in_with_their_roles(client):
    call_command("seed_demo")
    roles = dict(
        Membership.objects.filter(
            campaign__slug="demo", user__username__startswith="demo-"
        ).values_list("user__username", "role")
    )
    assert roles == {"demo-manager": "manager", "demo-annotator": "annotator"}
    assert client.login(username="demo-annotator", password="stepwise-demo")


def test_running_it_twice_duplicates_nothing():
    call_command("seed_demo")
    before = counts()
    call_command("seed_demo")
    assert counts() == before


def test_it_refuses_to_seed_production(settings):
    from django.core.management import CommandError

    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="production"):
        call_command("seed_demo")
    assert not Campaign.objects.exists()
