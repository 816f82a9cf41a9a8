"""An active-learning run's stages, declared once, in the order they run (``STAGES``).

A run (``learning.run.active_learning_work``) walks ``STAGES``: each stage is a name (its timing
on the run, and what the page says it is doing), its work and when it applies. They share one
``RunState``. The stages call down: ``prm`` computes (training, evaluation, scoring), ``exports``
writes the labels the PRM trains on, ``labeling`` writes the queue (``queue_reorder``), and the
strategies (``learning.strategies``) say which signals the run must gather besides its own PRM.
Nothing below calls back.

- training (``export`` ... ``register``), when the run has no model of an earlier attempt to
  reuse: the campaign's labels as a ``trl`` file, a PRM trained on them (its features kept
  between runs), evaluated on held-out problems, its best-of-N curve, the control arm's
  estimate of whether the strategy pays, what ``auto`` chooses (``plan``), the ensemble's members
  when a strategy of the run orders by their disagreement, and the model registered inactive;
- ``reuse``: an earlier attempt trained and registered the model, then died: score with it;
- ``score``: every open solution scored by the run's PRM (``learning.scoring``);
- ``served`` and ``evidence``: the signals the run's strategies declare (``Strategy.signals``);
- ``order`` and ``write``: the strategies' orders placed with the control arm, then, in one
  transaction, the new model active and the queue reordered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from django.db import OperationalError, transaction

from common.jobs import DONE
from labeling.models import Campaign
from labeling.queue.order import queue_reorder
from learning.auto import AutoChoice, auto_candidates, auto_choice, auto_shares
from learning.models import PRMModel
from learning.ordering import head_summary
from learning.placing import CONTROL_ARM, arm_of, place
from learning.run_state import RunState, Stage
from learning.scoring import open_scored
from learning.strategies import (
    AUTO,
    ENSEMBLE_SPREAD,
    EVIDENCE,
    PRM,
    SERVED,
    VERIFIER,
    strategy_get,
    strategy_order,
)
from learning.training_stages import (
    best_of_n,
    efficiency,
    ensemble,
    evaluate,
    export,
    exports_labels,
    register,
    reuse,
    train,
    trains,
)

# -- what orders the queue -----------------------------------------------------------------------


def plan(state: RunState) -> None:
    """The strategy this run orders by and, under ``auto``, what it tries beside it and why
    (``learning.auto``, over the estimates the campaign's runs stored, this run's included, and
    the candidates whose signals the campaign has), the strategies that place the strategy arm
    with their shares, and what orders the queue: the campaign's own PRM once it has one, before
    that the served PRM standing in for it. A strategy whose signals the campaign does not have
    yet leaves the queue as it is (``unordered``)."""
    from prm import feature_cache

    campaign = state.campaign
    served_by = _served_by(campaign)
    if state.scorer is not None or served_by:
        state.available.add(PRM)
    if served_by:
        state.available.add(SERVED)
    # The ensemble's members are not kept between attempts: a reused model does not try it.
    if state.trains and feature_cache.supports(getattr(state.scorer, "backbone", None)):
        state.available.add(ENSEMBLE_SPREAD)
    state.available.add(EVIDENCE)  # what the machines said of the steps: none is a normal state
    if campaign.al_strategy != AUTO:
        state.choice = AutoChoice(campaign.al_strategy, "")
    else:
        from learning.selectors import strategy_estimates

        estimates = strategy_estimates(campaign=campaign, including=state.run.pk)
        state.choice = auto_choice(estimates, auto_candidates(state.available))
    state.shares = auto_shares(state.choice, control_share=campaign.al_control_share)
    main = strategy_get(state.choice.strategy)
    missing = sorted(main.needs - state.available)
    if missing:
        state.unordered = _unordered_sentence(main.name, missing)
        state.ordered_by = {"kind": "none", "name": "nothing yet"}
    elif SERVED in main.signals or (PRM in main.signals and state.scorer is None):
        state.ordered_by = {"kind": "served", "name": f"the served PRM {served_by}"}
    elif PRM in main.signals:
        version = f" v{state.model.version}" if state.model is not None else ""
        state.ordered_by = {"kind": "own", "name": f"the campaign's own PRM{version}"}
    elif main.name == VERIFIER:
        state.ordered_by = {"kind": "verifier", "name": "the imported verifier score"}
    else:
        state.ordered_by = {"kind": "uniform", "name": "a uniform random order (no model)"}


def _unordered_sentence(strategy: str, missing: Sequence[str]) -> str:
    words = {
        PRM: "a PRM (no labels to train the campaign's own on yet, and no served PRM has scored "
        "its solutions)",
        SERVED: "the served PRM's scores (none stored yet: choose a scoring endpoint and score)",
        ENSEMBLE_SPREAD: "an ensemble (it needs labels and the bow backbone)",
    }
    lacking = "; ".join(words.get(m, m) for m in missing)
    return (
        f"The queue keeps its order: {strategy} orders by {lacking}. The first run that has it "
        "orders the queue."
    )


def score(state: RunState) -> None:
    """Every open regular solution with the run's PRM's score and uncertainty: the campaign's
    own PRM's (with members, the ensemble's disagreement too), before it has one the served
    PRM's, standing in; with neither (a strategy that needs no PRM) they carry no score."""
    counts: dict = {}
    state.scored = open_scored(
        campaign=state.campaign,
        scorer=state.scorer,
        beat=state.attempt.beat,
        stats=counts,
        members=state.members,
        stand_in=PRM in state.available,
    )
    state.timings.update({f"solutions_{k}": v for k, v in counts.items()})


def served(state: RunState) -> None:
    """The served PRM's score of each open solution it scored (``served_score``)."""
    from machines.served import served_scores

    scores = dict(served_scores(campaign=state.campaign).values_list("solution_id", "score"))
    open_ids = {s.solution_id for s in state.scored}
    for sid, value in scores.items():
        if sid in open_ids:
            state.signals.setdefault(sid, {})["served_score"] = value
    state.timings["solutions_served_scores"] = sum(1 for sid in scores if sid in open_ids)


def evidence(state: RunState) -> None:
    """What the machines say of the steps, beside the PRM (``machine_conflict``)."""
    from learning.machine_evidence import machine_conflicts

    conflicts = machine_conflicts(campaign=state.campaign, scorer=state.scorer)  # None: no PRM
    for sid, value in conflicts.items():
        state.signals.setdefault(sid, {})["machine_conflict"] = value
    state.timings["solutions_with_machine_evidence"] = len(conflicts)


def order(state: RunState) -> None:
    """Each strategy's order of the scored solutions (with the signals gathered), placed with a
    control arm: a share placed uniformly at random, what each estimate compares with."""
    campaign, choice = state.campaign, state.choice
    assert choice is not None
    items = [
        replace(s, **state.signals[s.solution_id]) if s.solution_id in state.signals else s
        for s in state.scored
    ]
    orders = [
        (
            name,
            strategy_order(
                name, items, wrong_share=campaign.al_wrong_answer_share, seed=state.run.pk
            ),
        )
        for name, _ in state.shares
    ]
    state.order, state.placed_by = place(
        orders,
        [share for _, share in state.shares],
        control_share=campaign.al_control_share,
        seed=state.run.pk,
    )
    head = head_summary(state.order) | {
        "strategy": choice.strategy,
        "control": state.placed_by[:100].count(CONTROL_ARM),
        "ordered_by": state.ordered_by,
    }
    if choice.reason:
        head["auto"] = choice.reason
    if choice.trials:
        head["trials"] = {t: state.placed_by[:100].count(t) for t in choice.trials}
    state.head = head


def write(state: RunState) -> None:
    """The run's one visible effect, atomically: its model (when it has one) active, the queue
    reordered (when it had something to order it by).

    Priorities count down from the number of scored solutions, so the first of the order has
    the highest and every one is above the default 0 of solutions imported after the run. A run
    without a PRM writes no score. Deadlocks with concurrent claims (PostgreSQL) are retried.
    """
    model, n = state.model, len(state.order)
    ids = [s.solution_id for s in state.order]
    has_scores = PRM in state.available
    scores = [s.score if has_scores else None for s in state.order]
    priorities = [float(n - k) for k in range(n)]
    arms = [(arm_of(p), "" if p == CONTROL_ARM else p) for p in state.placed_by]
    head = state.head or {"ordered_by": state.ordered_by, "note": state.unordered}
    if not state.data and not state.reused:
        head["labels"] = 0
    for try_no in range(3):
        try:
            with transaction.atomic():
                state.attempt.lock()
                if model is not None:
                    PRMModel.objects.filter(
                        campaign_id=state.run.campaign_id, is_active=True
                    ).exclude(pk=model.pk).update(is_active=False)
                    PRMModel.objects.filter(pk=model.pk).update(is_active=True)
                if not state.unordered:
                    queue_reorder(ids=ids, scores=scores, priorities=priorities, arms=arms)
                state.attempt.finish(
                    DONE, model=model, queue_head=head, strategy=state.campaign.al_strategy
                )
            _checkpoints_prune(state.campaign)
            return
        except OperationalError as error:
            if "deadlock" not in str(error).lower() or try_no == 2:
                raise
            time.sleep(0.2 * (try_no + 1))


def _ordered(state: RunState) -> bool:
    return not state.unordered


def _wants_ordered(signal: str) -> Callable[[RunState], bool]:
    return lambda state: not state.unordered and signal in state.needs


STAGES = (
    Stage("export", export, when=exports_labels),
    Stage("train", train, when=trains),
    Stage("evaluate", evaluate, when=trains),
    Stage("bestofn", best_of_n, when=trains),
    Stage("efficiency", efficiency, when=trains),
    Stage("reuse", reuse, when=lambda state: state.reused, timed=False),
    Stage("plan", plan, timed=False),
    Stage("ensemble", ensemble, when=lambda s: s.trains and ENSEMBLE_SPREAD in s.needs),
    Stage("register", register, when=trains),
    Stage("score", score, when=_ordered),
    Stage("served", served, when=_wants_ordered(SERVED), timed=False),
    Stage("evidence", evidence, when=_wants_ordered(EVIDENCE)),
    Stage("order", order, when=_ordered),
    Stage("write", write),
)


def _served_by(campaign: Campaign) -> str:
    """The campaign's served PRM ("endpoint (model)") when it has scored any of its solutions,
    else "": without its scores an order "by the served PRM" would not be its order."""
    from machines.served import ScoringRefused, campaign_scoring, served_scores

    try:
        chosen = campaign_scoring(campaign)
    except ScoringRefused:
        return ""
    if chosen is None or not served_scores(campaign=campaign).exists():
        return ""
    endpoint, model = chosen
    return f"{endpoint.title}, model {model}"


def _checkpoints_prune(campaign: Campaign) -> None:
    """The campaign's old checkpoints removed once the new model is active (``learning.retention``:
    the active one and the last ``STEPWISE_PRM_KEEP`` stay); the run is done whatever happens
    here, and the hourly beat task tries again."""
    from learning.retention import checkpoints_prune

    try:
        checkpoints_prune(campaign)
    except Exception:  # the run already succeeded: pruning never undoes it
        logging.getLogger(__name__).exception("pruning checkpoints of campaign %s", campaign.pk)
