"""The ``auto`` strategy: uniform until a strategy's measured data-efficiency interval (the
control arm's estimate each run stores) lies above 1, then that strategy; uniform again when
none does (``learning.strategies.auto_choice``, ``AUTO_RULE``)."""

from __future__ import annotations

import pytest

from labeling.models import Solution
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored
from learning.run import active_learning_run
from learning.strategies import AUTO_RULE, auto_choice, strategy_order, with_control
from tests.factories import make_campaign, make_solution


def estimate(strategy: str, lo: float, hi: float, ratio: float | None = None) -> dict:
    status = "paying" if lo > 1 else "not-paying" if hi < 1 else "unclear"
    return {
        "strategy": strategy,
        "status": status,
        "ratio": ratio if ratio is not None else (lo + hi) / 2,
        "ratio_ci95": [lo, hi],
    }


NEEDS_LABELS = {"strategy": "uncertainty", "status": "needs-labels", "needed_control_labels": 80}


def test_auto_starts_uniform_with_nothing_measured():
    assert auto_choice([]).strategy == "uniform"
    assert auto_choice([(3, NEEDS_LABELS), (2, {"status": "uniform"})]).strategy == "uniform"
    assert "no strategy has been measured" in auto_choice([]).reason


def test_auto_moves_to_the_strategy_whose_interval_lies_above_1():
    choice = auto_choice([(7, estimate("uncertainty", 1.1, 1.9, 1.4))])
    assert choice.strategy == "uncertainty"
    assert choice.reason == (
        "Auto orders by uncertainty: its interval lies above 1 "
        "(uncertainty 1.40x (1.10-1.90) in run 7)."
    )


def test_auto_stays_uniform_when_no_interval_lies_above_1():
    choice = auto_choice(
        [(9, estimate("uncertainty", 0.8, 1.3)), (8, estimate("convincing-wrong", 0.4, 0.9))]
    )
    assert choice.strategy == "uniform"
    assert "no strategy's interval lies above 1" in choice.reason
    assert "convincing-wrong" in choice.reason and "run 9" in choice.reason


def test_auto_goes_back_to_uniform_when_the_latest_measurement_no_longer_pays():
    # newest first: the interval that lay above 1 was measured before the one that contains 1
    history = [(12, estimate("uncertainty", 0.9, 1.2)), (10, estimate("uncertainty", 1.1, 1.6))]
    assert auto_choice(history).strategy == "uniform"
    assert auto_choice(list(reversed(history))).strategy == "uncertainty"


def test_a_run_short_of_labels_does_not_undo_an_earlier_measurement():
    history = [(12, NEEDS_LABELS), (10, estimate("uncertainty", 1.1, 1.6))]
    assert auto_choice(history).strategy == "uncertainty"


def test_of_several_strategies_that_pay_auto_takes_the_highest_lower_end():
    history = [
        (5, estimate("uncertainty", 1.05, 2.0)),
        (4, estimate("ensemble", 1.3, 1.7)),
        (3, estimate("convincing-wrong", 1.2, 3.0)),
    ]
    assert auto_choice(history).strategy == "ensemble"


def test_the_rule_is_said_in_words():
    assert "lies above 1" in AUTO_RULE and "uniformly again" in AUTO_RULE


# --- a run under auto ---------------------------------------------------------------------------


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


def _open_order(campaign) -> list[int]:
    return list(
        Solution.objects.filter(campaign=campaign, is_open=True, kind="regular")
        .order_by("-priority", "pk")
        .values_list("pk", flat=True)
    )


def _run_under_auto(campaign, monkeypatch) -> tuple[ActiveLearningRun, list[Scored]]:
    """A run of an auto campaign with a registered model and scoring stubbed (as
    tests/test_active_learning.py does): it orders by what auto chooses."""
    from learning import run as run_module

    solutions = [make_solution(campaign=campaign, answer_is_correct=k % 3 == 0) for k in range(12)]
    scored = [
        Scored(s.pk, 0.05 * k, s.answer_is_correct, uncertainty=1 - 0.07 * k)
        for k, s in enumerate(solutions)
    ]
    model = PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v1")
    monkeypatch.setattr(run_module, "_is_checkpoint", lambda path: True)
    monkeypatch.setattr("prm.load", lambda path: object())
    monkeypatch.setattr(run_module, "_score_open", lambda **kwargs: iter(scored))
    run = ActiveLearningRun.objects.create(campaign=campaign, model=model)
    return active_learning_run(run=run), scored


def _stored(campaign, data_efficiency: dict) -> None:
    ActiveLearningRun.objects.create(
        campaign=campaign, status="succeeded", data_efficiency=data_efficiency
    )


@pytest.mark.django_db(transaction=True)
def test_a_run_under_auto_orders_by_the_strategy_measured_to_pay(media, monkeypatch):
    campaign = make_campaign(al_strategy="auto", al_control_share=0.25)
    _stored(campaign, estimate("convincing-wrong", 0.5, 1.1))
    _stored(campaign, estimate("uncertainty", 1.2, 1.8, 1.5))
    run, scored = _run_under_auto(campaign, monkeypatch)

    assert run.status == "succeeded" and run.strategy == "auto"
    assert run.queue_head["strategy"] == "uncertainty"
    assert run.queue_head["auto"].startswith("Auto orders by uncertainty")
    expected, arms = with_control(
        strategy_order("uncertainty", scored, seed=run.pk),
        strategy="uncertainty",
        share=0.25,
        seed=run.pk,
    )
    assert _open_order(campaign) == [s.solution_id for s in expected]
    assert arms.count("control") == 3  # the control arm keeps its share under auto


@pytest.mark.django_db(transaction=True)
def test_a_run_under_auto_orders_uniformly_when_no_strategy_pays(media, monkeypatch):
    campaign = make_campaign(al_strategy="auto", al_control_share=0.25)
    _stored(campaign, estimate("uncertainty", 1.2, 1.8))
    _stored(campaign, estimate("uncertainty", 0.7, 1.4))  # newer: no longer above 1
    run, scored = _run_under_auto(campaign, monkeypatch)

    assert run.queue_head["strategy"] == "uniform"
    assert "no strategy's interval lies above 1" in run.queue_head["auto"]
    expected = strategy_order("uniform", scored, seed=run.pk)
    assert _open_order(campaign) == [s.solution_id for s in expected]
    assert set(Solution.objects.filter(campaign=campaign).values_list("al_arm", flat=True)) == {
        "control"
    }


@pytest.mark.django_db
def test_the_page_states_the_rule_and_what_auto_chose(client):
    from django.urls import reverse

    from labeling.models import Membership
    from tests.factories import make_member

    campaign = make_campaign(al_strategy="auto")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    url = reverse("learning:page", kwargs={"slug": campaign.slug})
    body = client.get(url).content.decode()
    assert "No run has chosen yet: the first orders uniformly." in body
    assert "lies above 1, the next run orders by it" in body  # AUTO_RULE, in words
    reason = "Auto orders by uncertainty: its interval lies above 1 (uncertainty 1.50x)."
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        strategy="auto",
        queue_head={"size": 3, "wrong": 1, "strategy": "uncertainty", "auto": reason},
    )
    body = client.get(url).content.decode()
    assert reason in body
    assert "auto: uncertainty" in body  # the runs table says what auto ordered by
