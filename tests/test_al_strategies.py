"""The selection strategies' orders on small hand-built fixtures (``learning.strategies``)."""

from __future__ import annotations

import math

import pytest

from labeling.models import Campaign
from learning.ordering import Scored, interleave, queue_order
from learning.strategies import NAMES, STRATEGIES, strategy_order
from prm.metrics import step_entropy

# id, PRM score, answer correct, uncertainty, verifier score
FIXTURE = [
    Scored(1, 0.90, False, uncertainty=0.10, verifier_score=0.2),
    Scored(2, 0.20, False, uncertainty=0.95, verifier_score=0.9),
    Scored(3, 0.80, True, uncertainty=0.30, verifier_score=None),
    Scored(4, 0.50, None, uncertainty=0.70, verifier_score=0.5),
    Scored(5, 0.60, False, uncertainty=0.50, verifier_score=None),
    Scored(6, 0.10, True, uncertainty=0.99, verifier_score=0.1),
]


def ids(order):
    return [s.solution_id for s in order]


def test_every_campaign_choice_has_a_strategy_and_the_default_is_one():
    assert set(NAMES) == set(STRATEGIES) == set(Campaign.Strategy.values)
    # the one the ablation measured best on real labels (docs/active-learning.md)
    assert Campaign._meta.get_field("al_strategy").default == "uniform"


@pytest.mark.django_db
def test_a_new_campaign_orders_uniformly():
    from tests.factories import make_campaign

    assert make_campaign().al_strategy == "uniform"


# Migrates the schema back to before the setting and forward again: about 4 s.
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_campaigns_that_existed_before_the_setting_keep_prm800ks_rule():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("labeling", "0010_bulkaction_heartbeat_attempts")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("labeling", "Campaign")
    old.objects.create(slug="old", name="Old")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert Campaign.objects.get(slug="old").al_strategy == "convincing-wrong"


def test_convincing_wrong_is_prm800ks_rule():
    order = strategy_order("convincing-wrong", FIXTURE, wrong_share=0.5)
    assert order == queue_order(FIXTURE, wrong_share=0.5)
    # wrong answers by decreasing PRM score (1, 5, 2) alternate with the rest (3, 4, 6)
    assert ids(order) == [1, 3, 5, 4, 2, 6]


def test_uncertainty_puts_the_least_sure_first():
    order = strategy_order("uncertainty", FIXTURE)
    assert ids(order) == [6, 2, 4, 5, 3, 1]


def test_uncertainty_puts_unknown_uncertainty_last_and_breaks_ties_by_age():
    items = [Scored(3, 0.5, None), Scored(2, 0.5, None, uncertainty=0.4), Scored(1, 0.5, None)]
    items.append(Scored(4, 0.5, None, uncertainty=0.4))
    assert ids(strategy_order("uncertainty", items)) == [2, 4, 1, 3]


def test_verifier_orders_by_the_imported_score_and_keeps_the_prm_score():
    order = strategy_order("verifier", FIXTURE, wrong_share=0.5)
    # wrong answers by verifier score: 2 (0.9), 1 (0.2), 5 (none: last); the rest: 4, 6, 3
    assert ids(order) == [2, 4, 1, 6, 5, 3]
    assert {s.solution_id: s.score for s in order} == {s.solution_id: s.score for s in FIXTURE}


def test_uniform_is_a_seeded_shuffle_that_ignores_the_input_order():
    a = strategy_order("uniform", FIXTURE, seed=7)
    b = strategy_order("uniform", list(reversed(FIXTURE)), seed=7)
    assert ids(a) == ids(b) and sorted(ids(a)) == [1, 2, 3, 4, 5, 6]
    orders = {tuple(ids(strategy_order("uniform", FIXTURE, seed=s))) for s in range(20)}
    assert len(orders) > 10


def test_mixed_alternates_uncertainty_and_convincing_wrong_without_repeats():
    order = strategy_order("mixed", FIXTURE, wrong_share=0.5)
    # uncertainty: 6 2 4 5 3 1; convincing-wrong: 1 3 5 4 2 6
    assert ids(order) == [6, 1, 2, 3, 4, 5]
    assert sorted(ids(order)) == [1, 2, 3, 4, 5, 6]


def test_interleave_keeps_each_share_of_every_prefix():
    a = [Scored(i, 0.0, None) for i in range(1, 11)]
    b = [Scored(i, 0.0, None) for i in range(11, 21)]
    order = interleave([a, b], [0.75, 0.25])
    for k in range(1, 9):
        from_a = sum(1 for s in order[:k] if s.solution_id <= 10)
        assert abs(from_a - 0.75 * k) <= 1
    assert len(order) == 20


def test_every_strategy_returns_each_item_once():
    for name in NAMES:
        assert sorted(ids(strategy_order(name, FIXTURE))) == [1, 2, 3, 4, 5, 6], name
        assert strategy_order(name, []) == []


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown selection strategy"):
        strategy_order("greedy", FIXTURE)


def test_step_entropy_is_one_bit_for_coin_tosses_and_zero_for_certainty():
    assert step_entropy([0.5, 0.5]) == pytest.approx(1.0)
    assert step_entropy([1.0, 0.0]) == pytest.approx(0.0, abs=1e-9)
    assert step_entropy([]) == 0.0
    p = 0.9
    assert step_entropy([p]) == pytest.approx(-(p * math.log2(p) + (1 - p) * math.log2(1 - p)))


def _many(n: int) -> list[Scored]:
    return [Scored(i, 1 - i / n, i % 2 == 0) for i in range(1, n + 1)]


def test_the_control_arm_takes_its_share_of_every_prefix_uniformly_at_random():
    from learning.placing import CONTROL_ARM, with_control

    items = _many(400)
    order = strategy_order("convincing-wrong", items)
    placed, arms = with_control(order, strategy="convincing-wrong", share=0.2, seed=3)
    assert sorted(ids(placed)) == list(range(1, 401))
    for k in range(1, 401):
        assert abs(arms[:k].count(CONTROL_ARM) - 0.2 * k) <= 1, k
    control = [s.solution_id for s, a in zip(placed, arms, strict=True) if a == CONTROL_ARM]
    # not the strategy's order: drawn from the whole queue (its scores, ids spread evenly)
    assert sorted(control) != control
    assert min(control) < 100 and max(control) > 300
    strategy = [s.solution_id for s, a in zip(placed, arms, strict=True) if a != CONTROL_ARM]
    assert strategy == [s.solution_id for s in order if s.solution_id not in set(control)]


def test_the_control_arm_is_drawn_before_the_strategy_chooses():
    """The control is the same uniform subset whatever the strategy's order: a control drawn
    from what the strategy left would be short of what the strategy looks for."""
    from learning.placing import CONTROL_ARM, with_control

    items = _many(200)
    controls = []
    for name in ("convincing-wrong", "uncertainty", "mixed"):
        placed, arms = with_control(strategy_order(name, items), strategy=name, share=0.25, seed=5)
        controls.append(
            {s.solution_id for s, a in zip(placed, arms, strict=True) if a == CONTROL_ARM}
        )
    assert controls[0] == controls[1] == controls[2]
    assert len(controls[0]) == 50


def test_a_uniform_strategy_is_all_control_and_share_zero_none():
    from learning.placing import with_control

    items = _many(10)
    assert set(with_control(items, strategy="uniform", share=0.2, seed=1)[1]) == {"control"}
    order, arms = with_control(items, strategy="uncertainty", share=0.0, seed=1)
    assert order == items and set(arms) == {"strategy"}


def test_ensemble_puts_the_widest_disagreement_first_and_falls_back_to_entropy():
    items = [
        Scored(1, 0.5, False, uncertainty=0.9, disagreement=0.05),
        Scored(2, 0.5, True, uncertainty=0.1, disagreement=0.30),
        Scored(3, 0.5, None, uncertainty=0.99, disagreement=None),
        Scored(4, 0.5, None, uncertainty=0.2, disagreement=0.10),
        Scored(5, 0.5, None, uncertainty=0.5, disagreement=None),
    ]
    assert ids(strategy_order("ensemble", items)) == [2, 4, 1, 3, 5]
