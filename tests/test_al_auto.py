"""The ``auto`` strategy: uniform until a strategy's measured data-efficiency interval (the
control arm's estimate each run stores) lies above 1, then that strategy; uniform again when
none does (``learning.strategies.auto_choice``, ``AUTO_RULE``)."""

from __future__ import annotations

import pytest

from labeling.models import Solution
from learning.auto import AUTO_RULE, auto_choice, auto_shares
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored
from learning.placing import place, with_control
from learning.run import active_learning_run
from learning.strategies import strategy_order
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


def test_auto_tries_the_candidates_not_measured_below_1_while_it_orders_uniformly():
    candidates = ["convincing-wrong", "uncertainty", "ensemble"]
    history = [(9, estimate("uncertainty", 0.8, 1.3)), (8, estimate("convincing-wrong", 0.4, 0.9))]
    choice = auto_choice(history, candidates)
    assert choice.strategy == "uniform"
    # convincing-wrong lies wholly below 1: tried no more; ensemble is unmeasured
    assert choice.trials == ("uncertainty", "ensemble")
    assert choice.reason.endswith("It tries uncertainty, ensemble on 30% of the queue.")
    assert auto_choice([], candidates).trials == tuple(candidates)
    assert auto_choice(history).trials == ()  # no candidates given, nothing tried


def test_auto_tries_nothing_once_a_strategy_pays():
    choice = auto_choice([(7, estimate("uncertainty", 1.1, 1.9))], ["convincing-wrong"])
    assert choice.strategy == "uncertainty" and choice.trials == ()
    assert auto_shares(choice, control_share=0.2) == [("uncertainty", 1.0)]


def test_the_trials_take_their_share_of_the_queue_and_the_control_comes_first():
    choice = auto_choice([], ["convincing-wrong", "uncertainty"])
    assert auto_shares(choice, control_share=0.2) == [
        ("convincing-wrong", 0.15),
        ("uncertainty", 0.15),
        ("uniform", pytest.approx(0.5)),
    ]
    # a control arm of 80% leaves the trials the rest and the chosen strategy nothing
    assert auto_shares(choice, control_share=0.8) == [
        ("convincing-wrong", pytest.approx(0.1)),
        ("uncertainty", pytest.approx(0.1)),
        ("uniform", 0.0),
    ]
    items = [Scored(k, k / 400, k % 3 == 0, uncertainty=(k * 37 % 400) / 400) for k in range(400)]
    shares = auto_shares(choice, control_share=0.2)
    orders = [(name, strategy_order(name, items, seed=4)) for name, _ in shares]
    queue, placed_by = place(orders, [w for _, w in shares], control_share=0.2, seed=4)
    assert sorted(s.solution_id for s in queue) == list(range(400))
    for k in range(10, 400, 10):  # every prefix keeps each share, to within one
        prefix = placed_by[:k]
        for name, share in [*shares, ("control", 0.2)]:
            assert abs(prefix.count(name) - share * k) <= 1, (k, name)
    # the control arm is the one a single strategy would have drawn: drawn before any chooses
    single, arms = with_control(orders[1][1], strategy="uncertainty", share=0.2, seed=4)
    control = {s.solution_id for s, by in zip(queue, placed_by, strict=True) if by == "control"}
    assert control == {s.solution_id for s, a in zip(single, arms, strict=True) if a == "control"}
    # each strategy places its best not yet placed: its own picks come in its own order
    for name, order in orders:
        mine = [s.solution_id for s, by in zip(queue, placed_by, strict=True) if by == name]
        rank = {s.solution_id: r for r, s in enumerate(order)}
        assert mine == sorted(mine, key=rank.__getitem__)


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
    from learning import run_state, stages

    solutions = [make_solution(campaign=campaign, answer_is_correct=k % 3 == 0) for k in range(12)]
    scored = [
        Scored(s.pk, 0.05 * k, s.answer_is_correct, uncertainty=1 - 0.07 * k)
        for k, s in enumerate(solutions)
    ]
    model = PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v1")
    monkeypatch.setattr(run_state, "_is_checkpoint", lambda path: True)
    monkeypatch.setattr("prm.load", lambda path: object())
    monkeypatch.setattr(stages, "open_scored", lambda **kwargs: list(scored))
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
def test_a_run_under_auto_orders_uniformly_and_tries_the_others_when_no_strategy_pays(
    media, monkeypatch
):
    campaign = make_campaign(al_strategy="auto", al_control_share=0.25)
    _stored(campaign, estimate("uncertainty", 1.2, 1.8))
    _stored(campaign, estimate("uncertainty", 0.7, 1.4))  # newer: no longer above 1
    run, scored = _run_under_auto(campaign, monkeypatch)

    assert run.queue_head["strategy"] == "uniform"
    assert "no strategy's interval lies above 1" in run.queue_head["auto"]
    # Uncertainty's interval contains 1, convincing-wrong is unmeasured: both are tried (the
    # ensemble's members are not trained when a run reuses a model; no scoring endpoint).
    trials = ("convincing-wrong", "uncertainty")
    assert "It tries convincing-wrong, uncertainty on 30% of the queue." in run.queue_head["auto"]
    shares = [("convincing-wrong", 0.15), ("uncertainty", 0.15), ("uniform", 0.45)]
    assert auto_shares(auto_choice([], trials), control_share=0.25) == shares
    expected, placed_by = place(
        [(name, strategy_order(name, scored, seed=run.pk)) for name, _ in shares],
        [share for _, share in shares],
        control_share=0.25,
        seed=run.pk,
    )
    assert _open_order(campaign) == [s.solution_id for s in expected]
    stored = dict(Solution.objects.filter(campaign=campaign).values_list("pk", "al_placed_by"))
    arms = dict(Solution.objects.filter(campaign=campaign).values_list("pk", "al_arm"))
    for s, by in zip(expected, placed_by, strict=True):
        assert arms[s.solution_id] == ("control" if by == "control" else "strategy")
        assert stored[s.solution_id] == ("" if by == "control" else by)
    assert placed_by.count("control") == 3  # the control arm keeps its share of the 12
    assert set(placed_by) == {"control", "uniform", *trials}
    assert set(run.queue_head["trials"]) == set(trials)


@pytest.mark.django_db(transaction=True)
def test_a_run_under_auto_orders_all_uniformly_once_every_candidate_measured_below_1(
    media, monkeypatch
):
    campaign = make_campaign(al_strategy="auto", al_control_share=0.25)
    _stored(campaign, estimate("uncertainty", 0.3, 0.9))
    _stored(campaign, estimate("convincing-wrong", 0.4, 0.8))
    run, scored = _run_under_auto(campaign, monkeypatch)

    assert run.queue_head["strategy"] == "uniform" and "trials" not in run.queue_head
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
    assert "No run has chosen yet: the first orders uniformly and tries the others." in body
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


@pytest.mark.django_db(transaction=True)
def test_a_strategy_measured_to_pay_in_a_trial_is_the_one_auto_moves_to(media, monkeypatch):
    campaign = make_campaign(al_strategy="auto", al_control_share=0.25)
    _stored(
        campaign,
        {
            "status": "uniform",
            "trials": {
                "convincing-wrong": estimate("convincing-wrong", 0.6, 1.2),
                "uncertainty": estimate("uncertainty", 1.2, 1.8, 1.5),
            },
        },
    )
    run, _ = _run_under_auto(campaign, monkeypatch)
    assert run.queue_head["strategy"] == "uncertainty"
    assert "trials" not in run.queue_head
    placed = set(Solution.objects.filter(campaign=campaign).values_list("al_placed_by", flat=True))
    assert placed == {"", "uncertainty"}  # the control arm, and the strategy auto moved to


@pytest.mark.django_db
def test_the_page_shows_what_each_trial_measured(client):
    from django.urls import reverse

    from labeling.models import Membership
    from tests.factories import make_member

    campaign = make_campaign(al_strategy="auto")
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    trial = estimate("uncertainty", 0.8, 1.6) | {
        "sentence": "Unclear <yet>: 1.20x (0.80-1.60) contains 1.",
        "error_yield": {"status": "paying", "sentence": "Error yield: 2.10x (1.30-3.40)."},
    }
    ActiveLearningRun.objects.create(
        campaign=campaign,
        status="succeeded",
        strategy="auto",
        data_efficiency={
            "status": "uniform",
            "sentence": "Uniform.",
            "trials": {"uncertainty": trial},
        },
        queue_head={"size": 3, "strategy": "uniform", "trials": {"uncertainty": 15}},
    )
    body = client.get(reverse("learning:page", kwargs={"slug": campaign.slug})).content.decode()
    assert "What auto tried" in body
    assert "<li><code>uncertainty</code>: " in body
    assert "Unclear &lt;yet&gt;: 1.20x (0.80-1.60) contains 1." in body  # escaped
    assert "Error yield: 2.10x (1.30-3.40)." in body
    assert 'auto: uniform <span title="trying uncertainty">+&nbsp;1&nbsp;trial</span>' in body


# slow: a whole active-learning run on the demo's labels, training the ensemble's members (~8 s)
@pytest.mark.slow
@pytest.mark.django_db
def test_a_real_run_under_auto_places_its_trials_and_records_who_placed_each(media):
    from learning.triggers import active_learning_trigger
    from tests.al_data import demo_campaign

    campaign = demo_campaign(al_strategy="auto", al_control_share=0.2)
    run = active_learning_run(run=active_learning_trigger(campaign=campaign))
    assert run.status == "succeeded", run.error
    assert run.queue_head["strategy"] == "uniform"
    # bow: the ensemble is tried too (its members trained); no scoring endpoint: no served PRM
    assert set(run.queue_head["trials"]) == {"convincing-wrong", "uncertainty", "ensemble"}
    assert "ensemble" in run.timings
    open_ = Solution.objects.filter(campaign=campaign, kind="regular", is_open=True)
    placed = dict(open_.values_list("pk", "al_placed_by"))
    arms = dict(open_.values_list("pk", "al_arm"))
    assert {placed[pk] for pk in placed if arms[pk] == "control"} == {""}
    assert {placed[pk] for pk in placed if arms[pk] == "strategy"} == {
        "convincing-wrong",
        "uncertainty",
        "ensemble",
        "uniform",
    }
    counts = {name: list(placed.values()).count(name) for name in set(placed.values())}
    n = len(placed)
    assert abs(counts[""] - 0.2 * n) <= 1
    for name in ("convincing-wrong", "uncertainty", "ensemble"):
        assert abs(counts[name] - 0.1 * n) <= 2, (name, counts)
    # The demo's labels were imported, not placed by a run: nothing measured yet.
    assert run.data_efficiency["status"] == "uniform" and "trials" not in run.data_efficiency


# Migrates labeling back one migration and forward again (under a second on SQLite).
@pytest.mark.django_db(transaction=True)
def test_solutions_placed_before_the_field_get_the_strategy_their_runs_measured_them_for():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [
        ("labeling", "0024_al_strategy_machines_disagree"),
        ("learning", "0004_run_data_efficiency"),
    ]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    Campaign = apps.get_model("labeling", "Campaign")
    Problem = apps.get_model("labeling", "Problem")
    OldSolution = apps.get_model("labeling", "Solution")
    Run = apps.get_model("learning", "ActiveLearningRun")
    arms = {}
    for slug, strategy in [("fixed", "uncertainty"), ("auto", "auto"), ("auto-new", "auto")]:
        campaign = Campaign.objects.create(slug=slug, name=slug, al_strategy=strategy)
        problem = Problem.objects.create(campaign=campaign, text=slug, content_hash=slug)
        for arm in ("strategy", "control", ""):
            s = OldSolution.objects.create(
                campaign=campaign, problem=problem, al_arm=arm, content_hash=f"{slug}-{arm}"
            )
            arms[s.pk] = (slug, arm)
    auto = Campaign.objects.get(slug="auto")
    Run.objects.create(campaign=auto, status="succeeded", queue_head={"strategy": "uniform"})
    Run.objects.create(campaign=auto, status="succeeded", queue_head={"strategy": "ensemble"})
    Run.objects.create(campaign=auto, status="failed", queue_head={"strategy": "mixed"})

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    placed = dict(Solution.objects.values_list("pk", "al_placed_by"))
    expected = {"fixed": "uncertainty", "auto": "ensemble", "auto-new": "uniform"}
    for pk, (slug, arm) in arms.items():
        assert placed[pk] == (expected[slug] if arm == "strategy" else ""), (slug, arm)


@pytest.mark.django_db
def test_each_strategy_is_measured_on_the_labels_it_placed_and_the_control_arms():
    from learning.training_stages import campaign_efficiency
    from tests.factories import make_labelled

    campaign = make_campaign(al_strategy="auto", al_control_share=0.2)
    placed = {"control": 25, "convincing-wrong": 21, "uncertainty": 22, "uniform": 30}
    for by, n in placed.items():
        for k in range(n):
            solution = make_solution(
                campaign=campaign,
                al_arm="control" if by == "control" else "strategy",
                al_placed_by="" if by == "control" else by,
            )
            make_labelled(solution=solution, ratings=[1, -1] if k % 2 else [1, 1, 1])
    estimate = campaign_efficiency(campaign=campaign, strategy="uniform", seed=1)
    assert estimate["status"] == "uniform" and "Auto orders uniformly" in estimate["sentence"]
    # one estimate per strategy tried (not uniform, the order auto fell back on)
    assert set(estimate["trials"]) == {"convincing-wrong", "uncertainty"}
    for name in ("convincing-wrong", "uncertainty"):
        trial = estimate["trials"][name]
        assert trial["strategy"] == name
        assert trial["error_yield"]["strategy_solutions"] == placed[name]
        assert trial["error_yield"]["control_solutions"] == placed["control"]
    # a campaign with one strategy: that strategy's own labels, never another's
    campaign.al_strategy = "uncertainty"
    campaign.save()
    fixed = campaign_efficiency(campaign=campaign, strategy="uncertainty", seed=1)
    assert "trials" not in fixed
    assert fixed["error_yield"]["strategy_solutions"] == placed["uncertainty"]


# slow: trains the ensemble's four members twice on a handful of real paths (about 3 s)
@pytest.mark.slow
def test_every_ensemble_member_trains_when_a_resample_draws_only_held_out_problems(tmp_path):
    """A small campaign (auto tries the ensemble on any) whose labels cover one training problem
    and five held-out ones: a bootstrap resample often draws none of the training problem, which
    left a member nothing to train on and failed the run."""
    import json
    import random
    from pathlib import Path

    from labeling.backbones import backbone_spec
    from learning.training_stages import ensemble_members
    from prm import split_of

    fixture = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"
    by_problem: dict[str, list[str]] = {}
    for line in fixture.read_text().splitlines():
        by_problem.setdefault(json.loads(line)["prompt"], []).append(line)
    train = [p for p in sorted(by_problem) if split_of(p) == "train"][:1]
    held = [p for p in sorted(by_problem) if split_of(p) != "train"][:5]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(line + "\n" for p in train + held for line in by_problem[p]))
    problems = sorted(train + held)

    def misses(seed: int) -> bool:  # would a member's plain resample hold no training problem?
        for k in range(4):
            rng = random.Random(seed * 1000 + k)
            if train[0] not in [rng.choice(problems) for _ in problems]:
                return True
        return False

    seed = next(s for s in range(100) if misses(s))
    members = ensemble_members(
        path, workdir=tmp_path, spec=backbone_spec("bow"), overrides={}, seed=seed
    )
    assert len(members) == 4
    for k in range(4):
        drawn = {json.loads(line)["prompt"] for line in (tmp_path / f"resample-{k}.jsonl").open()}
        assert train[0] in drawn


@pytest.mark.django_db(transaction=True)
def test_auto_tries_the_served_prm_once_it_has_scored_the_campaigns_solutions(
    media, monkeypatch, settings
):
    from machines.models import ServedScore

    settings.STEPWISE_ENDPOINTS = [
        {"name": "prm", "kind": "pooling", "base_url": "http://127.0.0.1:9", "models": ["m"]}
    ]
    campaign = make_campaign(al_strategy="auto", al_scoring_endpoint="prm")
    run, scored = _run_under_auto(campaign, monkeypatch)
    # declared but nothing scored yet: its order would not be the served PRM's
    assert set(run.queue_head["trials"]) == {"convincing-wrong", "uncertainty"}

    for k, s in enumerate(scored):
        ServedScore.objects.create(
            campaign=campaign, solution_id=s.solution_id, endpoint="prm", model="m", score=k / 12
        )
    again = active_learning_run(
        run=ActiveLearningRun.objects.create(campaign=campaign, model=run.model)
    )
    assert set(again.queue_head["trials"]) == {"convincing-wrong", "uncertainty", "served-prm"}
    placed = set(Solution.objects.filter(campaign=campaign).values_list("al_placed_by", flat=True))
    assert "served-prm" in placed
