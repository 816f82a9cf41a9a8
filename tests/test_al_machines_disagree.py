"""The ``machines-disagree`` strategy (issue 29): human labels where the machines disagree.

On each step, the spread of what the campaign's PRM, the rollouts from the step and the judge say
of it (``learning.strategies.machine_conflict``); a run gathers the evidence of its open
solutions (``learning.machine_evidence``) and puts the widest disagreement first. The run test
uses a real ``bow`` PRM trained on the repository's PRM800K fixture and the run's real scoring.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import prm
from labeling.models import Solution
from learning.machine_evidence import machine_conflict, machine_conflicts, machine_words
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored
from learning.placing import with_control
from learning.run import active_learning_run
from learning.strategies import MACHINES_DISAGREE, NAMES, strategy_order
from tests.factories import make_campaign, make_evidence, make_solution

SMALL = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


def test_the_prm_alone_is_no_disagreement():
    assert machine_conflict([0.9, 0.2], {}) is None
    assert machine_conflict([0.9, 0.2], {1: []}) is None
    assert MACHINES_DISAGREE in NAMES


def test_the_widest_spread_on_any_step_counts():
    # step 0: PRM 0.9, rollouts 0.75 -> 0.15; step 1: PRM 0.8, judge says first error -> 0.8
    assert machine_conflict([0.9, 0.8, 0.7], {0: [0.75], 1: [0.0]}) == pytest.approx(0.8)
    # two machines on one step, the PRM between them: their own spread
    assert machine_conflict([0.5], {0: [1.0, 0.125]}) == pytest.approx(0.875)
    # agreement is 0, not None
    assert machine_conflict([1.0], {0: [1.0]}) == 0.0


def test_a_step_the_prm_has_no_score_for_still_compares_the_other_machines():
    # index 5 beyond the PRM's steps (an edited solution): the machines' own spread
    assert machine_conflict([0.9], {5: [0.25, 1.0]}) == pytest.approx(0.75)
    assert machine_conflict([0.9], {5: [0.25]}) == 0.0


def test_the_widest_disagreement_first_then_the_prms_entropy():
    items = [
        Scored(1, 0.9, True, uncertainty=0.9),  # no evidence, very unsure
        Scored(2, 0.9, True, uncertainty=0.1, machine_conflict=0.2),
        Scored(3, 0.9, False, uncertainty=0.2, machine_conflict=0.95),
        Scored(4, 0.9, True, uncertainty=0.3),  # no evidence, less unsure
        Scored(5, 0.9, True, uncertainty=0.4, machine_conflict=0.2),  # tie: the older first
    ]
    order = [s.solution_id for s in strategy_order(MACHINES_DISAGREE, items)]
    assert order == [3, 2, 5, 1, 4]


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


STEPS = ["We add 2 and 3 to get 5.", "Then 5 times 4 is 20.", "# Answer\n\n20"]


@pytest.mark.django_db
def test_machine_conflicts_read_the_evidence_of_open_solutions_with_the_prms_step_scores(media):
    prm.train(SMALL, media / "prm" / "x" / "v1", backbone="bow", epochs=1, progress=False)
    scorer = prm.load(media / "prm" / "x" / "v1")
    campaign = make_campaign()
    judged = make_solution(campaign=campaign, steps=STEPS)
    rolled = make_solution(campaign=campaign, steps=[*STEPS[:2], "# Answer\n\n21"])
    silent = make_solution(campaign=campaign, steps=STEPS)
    closed = make_solution(campaign=campaign, steps=STEPS, is_open=False)
    other = make_solution(campaign=make_campaign(), steps=STEPS)
    make_evidence(judged, 0, "judge", 1.0, samples=1)
    make_evidence(judged, 1, "judge", 0.0, samples=1)
    make_evidence(rolled, 1, "rollout", 0.25, samples=8)
    make_evidence(rolled, 2, "rollout", 0.0, samples=8)
    make_evidence(closed, 0, "judge", 0.0, samples=1)
    make_evidence(other, 0, "judge", 0.0, samples=1)

    words = machine_words(campaign=campaign)
    assert words == {judged.pk: {0: [1.0], 1: [0.0]}, rolled.pk: {1: [0.25], 2: [0.0]}}

    conflicts = machine_conflicts(campaign=campaign, scorer=scorer)
    assert set(conflicts) == {judged.pk, rolled.pk}  # silent, closed, other: not there
    for solution in (judged, rolled):
        steps = list(solution.steps.order_by("index").values_list("text", flat=True))
        prm_word = scorer.score([(solution.problem.text, steps)])[0]
        assert conflicts[solution.pk] == pytest.approx(
            machine_conflict(prm_word, words[solution.pk])
        )
    assert silent.pk not in conflicts


@pytest.mark.django_db(transaction=True)
def test_a_run_puts_where_the_machines_disagree_first(media):
    prm.train(SMALL, media / "prm" / "x" / "v1", backbone="bow", epochs=1, progress=False)
    campaign = make_campaign(al_strategy=MACHINES_DISAGREE, al_control_share=0.0)
    solutions = [make_solution(campaign=campaign, steps=STEPS) for _ in range(6)]
    # two solutions with evidence, four without (those follow, by the PRM's entropy)
    make_evidence(solutions[4], 1, "judge", 0.0, samples=1)  # the judge names step 1
    make_evidence(solutions[2], 0, "rollout", 1.0, samples=8)  # every rollout reaches the answer
    model = PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v1")
    run = active_learning_run(run=ActiveLearningRun.objects.create(campaign=campaign, model=model))

    assert run.status == "succeeded", run.error
    assert run.queue_head["strategy"] == MACHINES_DISAGREE
    assert run.timings["solutions_with_machine_evidence"] == 2
    scorer = prm.load(media / "prm" / "x" / "v1")

    def prm_word(solution) -> list[float]:
        return scorer.score([(solution.problem.text, STEPS)])[0]

    judged = prm_word(solutions[4])[1] - 0.0  # the judge's 0 against the PRM's P(correct)
    rolled = 1.0 - prm_word(solutions[2])[0]  # every rollout's 1 against it
    wide, narrow = solutions[4].pk, solutions[2].pk
    if rolled > judged:
        wide, narrow = narrow, wide
    served = list(
        Solution.objects.filter(campaign=campaign, is_open=True)
        .order_by("-priority", "pk")
        .values_list("pk", flat=True)
    )
    assert served[:2] == [wide, narrow]
    assert set(served[2:]) == {s.pk for s in solutions} - {wide, narrow}


def test_the_control_arm_keeps_its_share_under_this_strategy():
    items = [Scored(k, 0.5, True, uncertainty=0.5, machine_conflict=k / 10) for k in range(10)]
    order, arms = with_control(
        strategy_order(MACHINES_DISAGREE, items), strategy=MACHINES_DISAGREE, share=0.2, seed=3
    )
    assert sorted(s.solution_id for s in order) == list(range(10))
    assert arms.count("control") == 2


@pytest.mark.django_db
def test_the_served_prms_step_scores_are_one_more_machine(settings, monkeypatch):
    monkeypatch.setenv("SERVED_PRM_KEY", "k")
    settings.STEPWISE_ENDPOINTS = [
        {
            "name": "prm",
            "kind": "pooling",
            "base_url": "http://127.0.0.1:9/v1",
            "models": ["Qwen/Qwen2.5-Math-PRM-7B"],
            "key_env": "SERVED_PRM_KEY",
        }
    ]
    from machines.models import ServedScore

    campaign = make_campaign(al_scoring_endpoint="prm")
    scored, gone = (make_solution(campaign=campaign, steps=STEPS) for _ in range(2))
    for solution in (scored, gone):
        ServedScore.objects.create(
            campaign=campaign,
            solution=solution,
            endpoint="prm",
            model="Qwen/Qwen2.5-Math-PRM-7B",
            step_scores=[0.9, 0.2, 0.1],
            score=0.018,
        )
    make_evidence(scored, 1, "judge", 0.0, samples=1)
    Solution.objects.filter(pk=gone.pk).update(is_open=False)  # labelled since: not in the queue

    assert machine_words(campaign=campaign) == {scored.pk: {0: [0.9], 1: [0.0, 0.2], 2: [0.1]}}
