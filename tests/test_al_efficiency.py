"""Is active learning paying here: the estimate of the strategy's labels against the control
arm's (``learning.efficiency``), on real PRM800K phase 1 labels (``tests/fixtures/prm``), and its
place on the active-learning page."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from learning.efficiency import FRACTIONS, ArmLabels, budget_ratio, data_efficiency, error_yield

FIXTURE = Path(__file__).parent / "fixtures" / "prm" / "phase1_trl_small.jsonl"


def _paths() -> list[tuple[str, tuple[str, ...], tuple[bool, ...]]]:
    rows = [json.loads(line) for line in FIXTURE.open()]
    return [(r["prompt"], tuple(r["completions"]), tuple(map(bool, r["labels"]))) for r in rows]


def _random_selector(seed: int) -> list[ArmLabels]:
    """A campaign replaying real ratings whose strategy picks at random: each arm labels paths
    drawn uniformly."""
    rng = random.Random(seed)
    paths = _paths()
    control = [ArmLabels(*p, arm="control") for p in paths if rng.random() < 0.6]
    chosen = [ArmLabels(*p, arm="strategy") for p in paths if rng.random() < 0.6]
    return control + chosen


def _simulated_campaign(
    selector: str, *, seed: int, labelled: int = 120, share: float = 0.4
) -> tuple[list[ArmLabels], float]:
    """A campaign whose queue is the fixture's 258 real paths, ordered by ``uncertainty`` over a
    planted selector with a control arm (``with_control``, the run's own code); simulated
    annotators label the first ``labelled`` of the queue by replaying the paths' real PRM800K
    ratings. The selector is ``strong`` (knows whether a path holds a negative step, blurred by
    Gaussian noise: step-error AUROC about 0.9) or ``random``. Returns the labels and the
    selector's AUROC at finding the paths with an error."""
    from sklearn.metrics import roc_auc_score

    from learning.ordering import Scored
    from learning.placing import with_control
    from learning.strategies import UNCERTAINTY, strategy_order

    rng = random.Random(seed)
    paths = _paths()
    has_error = [not all(labels) for _, _, labels in paths]
    planted = [
        (float(e) + rng.gauss(0, 0.5)) if selector == "strong" else rng.random() for e in has_error
    ]
    pool = [
        Scored(solution_id=k, score=0.5, answer_is_correct=not e, uncertainty=u)
        for k, (e, u) in enumerate(zip(has_error, planted, strict=True))
    ]
    queue, arms = with_control(
        strategy_order(UNCERTAINTY, pool, wrong_share=0.8),
        strategy=UNCERTAINTY,
        share=share,
        seed=seed,
    )
    rows = [
        ArmLabels(*paths[s.solution_id], arm=arm)
        for s, arm in zip(queue[:labelled], arms[:labelled], strict=True)
    ]
    return rows, float(roc_auc_score(has_error, planted))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_planted_strong_selector_yields_more_errors_with_an_interval_above_one(seed):
    rows, auroc = _simulated_campaign("strong", seed=seed)
    assert auroc > 0.85
    result = error_yield(rows, resamples=1000, seed=seed)
    assert result["status"] == "paying", result
    assert result["ratio_ci95"][0] > 1, result
    assert result["strategy_rate"] > result["control_rate"]
    assert "above 1" in result["sentence"]
    assert result["control_solutions"] == 48 and result["strategy_solutions"] == 72


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_random_selector_yields_an_interval_that_contains_one(seed):
    rows, auroc = _simulated_campaign("random", seed=seed)
    assert 0.35 < auroc < 0.65
    result = error_yield(rows, resamples=1000, seed=seed)
    lo, hi = result["ratio_ci95"]
    assert lo <= 1 <= hi, result
    assert result["status"] == "unclear"
    assert "contains 1" in result["sentence"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_under_auto_each_tried_strategy_is_measured_on_the_labels_it_placed(seed):
    """Auto's trials on the fixture's real paths: ``uncertainty`` by a planted strong selector,
    ``convincing-wrong`` by a random one (ungraded answers, random scores); the queue placed as a
    run under auto places it, simulated annotators label its first 200 by replaying the real
    ratings. Each strategy's own labels against the control's: the strong one's error yield
    lies above 1, the random one's interval contains 1, and lumping the arm would hide it."""
    from learning.auto import auto_choice, auto_shares
    from learning.efficiency import strategy_rows
    from learning.ordering import Scored
    from learning.placing import place
    from learning.strategies import strategy_order

    rng = random.Random(seed)
    paths = _paths()
    has_error = [not all(labels) for _, _, labels in paths]
    pool = [
        Scored(k, rng.random(), None, uncertainty=float(e) + rng.gauss(0, 0.5))
        for k, e in enumerate(has_error)
    ]
    shares = auto_shares(auto_choice([], ["convincing-wrong", "uncertainty"]), control_share=0.2)
    queue, placed_by = place(
        [(name, strategy_order(name, pool, seed=seed)) for name, _ in shares],
        [share for _, share in shares],
        control_share=0.2,
        seed=seed,
    )
    rows = [
        ArmLabels(
            *paths[s.solution_id],
            arm="control" if by == "control" else "strategy",
            placed_by="" if by == "control" else by,
        )
        for s, by in zip(queue[:200], placed_by[:200], strict=True)
    ]
    strong = error_yield(strategy_rows(rows, "uncertainty"), resamples=1000, seed=seed)
    weak = error_yield(strategy_rows(rows, "convincing-wrong"), resamples=1000, seed=seed)
    assert strong["status"] == "paying" and strong["ratio_ci95"][0] > 1, strong
    assert weak["ratio_ci95"][0] <= 1 <= weak["ratio_ci95"][1], weak
    assert strong["strategy_solutions"] == weak["strategy_solutions"] == 30
    assert strong["control_solutions"] == weak["control_solutions"] == 40
    lumped = error_yield(rows, resamples=1000, seed=seed)  # the trials and uniform as one arm
    assert lumped["strategy_rate"] < strong["strategy_rate"]


def test_the_error_yield_waits_for_enough_control_solutions():
    rows = [ArmLabels(*p, arm="strategy") for p in _paths()]
    rows += [ArmLabels(*p, arm="control") for p in _paths()[:5]]
    result = error_yield(rows)
    assert result["status"] == "needs-labels"
    assert "needs about 15 more labelled solutions" in result["sentence"]


def test_the_ratio_is_interpolated_on_log_budget_and_censored_at_the_curves_ends():
    curve = list(zip(FRACTIONS, [0.55, 0.60, 0.65, 0.70], strict=True))
    assert budget_ratio(0.65, curve) == pytest.approx(1.0)
    assert budget_ratio(0.625, curve) == pytest.approx(2**-0.5)  # halfway between 0.5 and 1 in log
    assert budget_ratio(0.50, curve) == FRACTIONS[0]
    assert budget_ratio(0.90, curve) == FRACTIONS[-1]
    # a curve that dips is read as its running best
    assert (
        budget_ratio(0.60, list(zip(FRACTIONS, [0.6, 0.5, 0.7, 0.7], strict=True))) == FRACTIONS[0]
    )


def test_too_few_control_labels_says_how_many_more_it_needs():
    rows = [ArmLabels(*p, arm="strategy") for p in _paths()]
    rows += [ArmLabels(*p, arm="control") for p in _paths()[:5]]
    result = data_efficiency(rows, control_share=0.2, resamples=5)
    assert result["status"] == "needs-labels"
    needed = result["needed_control_labels"]
    assert needed > 0
    assert f"needs about {needed:,} more step labels" in result["sentence"]
    assert f"about {-(-needed * 5):,} labels in all at a 20% control share" in result["sentence"]


def test_a_random_selector_on_real_labels_has_an_interval_that_contains_one():
    result = data_efficiency(_random_selector(0), resamples=30, seed=0)
    assert result["status"] in ("unclear", "paying", "not-paying"), result
    lo, hi = result["ratio_ci95"]
    assert lo <= 1 <= hi, result
    assert result["status"] == "unclear"
    assert "contains 1" in result["sentence"]
    assert result["held_out_steps"] >= 50 and result["control_labels"] >= 200


# slow: a whole active-learning run with its control arm and estimate (about 6 s)
@pytest.mark.slow
@pytest.mark.django_db
def test_a_run_stores_the_estimate_and_the_page_answers_the_question(client, tmp_path, settings):
    from labeling.models import Membership, Solution
    from learning.models import ActiveLearningRun
    from learning.run import active_learning_run
    from learning.triggers import active_learning_trigger
    from tests.al_data import demo_campaign
    from tests.factories import make_member

    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = demo_campaign(al_strategy="convincing-wrong", al_control_share=0.2)
    run = active_learning_run(run=active_learning_trigger(campaign=campaign))
    assert run.status == "succeeded", run.error
    # The demo's labels were imported, not placed by a run: nothing to compare yet.
    assert run.data_efficiency["status"] == "needs-labels"
    assert run.data_efficiency["control_labels"] == 0
    assert run.data_efficiency["error_yield"]["status"] == "needs-labels"
    assert run.data_efficiency["error_yield"]["control_solutions"] == 0
    assert "efficiency" in run.timings
    arms = set(Solution.objects.filter(campaign=campaign, is_open=True).values_list("al_arm"))
    assert arms == {("strategy",), ("control",)}
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    client.force_login(manager)
    html = client.get(f"/campaigns/{campaign.slug}/active-learning/").content.decode()
    assert "Is active learning paying here?" in html
    assert "the control arm needs about" in html
    assert "Error yield: the control arm needs about 20 more labelled solutions" in html
    assert ActiveLearningRun.objects.get(pk=run.pk).data_efficiency == run.data_efficiency


# slow: a whole active-learning run training every member of an ensemble (about 6 s)
@pytest.mark.slow
@pytest.mark.django_db
def test_an_ensemble_run_orders_the_queue_by_the_members_disagreement(tmp_path, settings):
    import prm
    from labeling.models import Solution
    from learning.run import active_learning_run
    from learning.scoring import open_scored
    from learning.strategies import ENSEMBLE_MEMBERS
    from learning.triggers import active_learning_trigger
    from tests.al_data import demo_campaign

    settings.MEDIA_ROOT = tmp_path / "media"
    campaign = demo_campaign(al_strategy="ensemble")
    run = active_learning_run(run=active_learning_trigger(campaign=campaign))
    assert run.status == "succeeded", run.error
    assert "ensemble" in run.timings
    folder = settings.MEDIA_ROOT / "prm" / campaign.slug / f"run-{run.pk}"
    members = [prm.load(folder / f"member-{k}") for k in range(ENSEMBLE_MEMBERS)]
    scorer = prm.load(settings.MEDIA_ROOT / run.model.path)
    scored = open_scored(campaign=campaign, scorer=scorer, beat=lambda: None, members=members)
    spread = {s.solution_id: s.disagreement for s in scored}
    assert len({round(v, 6) for v in spread.values()}) > 10  # the members do disagree
    open_ = Solution.objects.filter(campaign=campaign, kind="regular", is_open=True)
    arms = dict(open_.values_list("pk", "al_arm"))
    queue = list(open_.order_by("-priority", "pk").values_list("pk", flat=True))
    strategy_arm = [pk for pk in queue if arms[pk] == "strategy"]
    assert [spread[pk] for pk in strategy_arm] == sorted(
        (spread[pk] for pk in strategy_arm), reverse=True
    )
    # one model twice disagrees with itself nowhere
    same = list(
        open_scored(campaign=campaign, scorer=scorer, beat=lambda: None, members=[scorer] * 2)
    )
    assert {s.disagreement for s in same} == {0.0}
