"""Selection strategies: the order in which a run puts a campaign's open solutions in the queue.

Every strategy takes the scored open solutions (``Scored``: the PRM's score, the final answer's
correctness, the PRM's uncertainty and the imported verifier score) and returns them best first;
the run turns that order into priorities (``learning.run``). The campaign chooses one
(``Campaign.al_strategy``); ``bench/active_learning.py`` measures them against uniform sampling
with the same functions.

- ``convincing-wrong``: PRM800K's rule ("Let's Verify Step by Step", section 4): wrong-answer
  solutions the PRM rates highest take the campaign's ``al_wrong_answer_share`` of every prefix,
  the most convincing of the rest the remainder (``learning.ordering.queue_order``); campaigns
  created before the setting existed keep it;
- ``uncertainty``: the solutions whose steps the current PRM is least sure about first (mean
  binary entropy of the steps' calibrated P(correct), as ActPRM, Duan et al. 2025, selects by
  predictive uncertainty);
- ``verifier``: PRM800K's rule with the imported verifier score (PRM800K's
  ``pre_generated_verifier_score``, the Qwen samples' reward score) in place of the PRM's: for a
  campaign with no trained PRM yet, or a team that trusts that verifier more than its own model;
  solutions without one come last of their kind;
- ``uniform``: a random order (seeded by the run), the control, and the default of a new campaign:
  it measured best on real labels (``DEFAULT_REASON``);
- ``mixed``: half ``uncertainty``, half ``convincing-wrong``, interleaved, each skipping what the
  other already placed;
- ``served-prm``: PRM800K's rule by the scores of a PRM served elsewhere (``machines.served``,
  the campaign's ``al_scoring_endpoint``) in place of the campaign's own PRM's, which still
  trains and is evaluated beside it; solutions it has not scored come last of their kind;
- ``ensemble``: ActPRM's ensemble uncertainty: ``ENSEMBLE_MEMBERS`` ``bow`` PRMs trained on
  bootstrap resamples of the labels (by problem), the solutions where they disagree most first
  (the mean over steps of the members' standard deviation of P(correct));
- ``machines-disagree``: human labels where the machines disagree (issue 29): on each step, the
  spread (highest minus lowest P(correct)) of what the campaign's PRM, the served PRM, the
  rollouts from the step and the judge say of it (``machine_conflict``); the solutions with the
  largest spread on any step first, those no machine but the PRM spoke of after them, by the
  PRM's own entropy (``learning.evidence`` gathers the evidence for a run);
- ``auto``: not an order of its own but a choice among the others by what this campaign
  measured (``auto_choice``, ``AUTO_RULE``): uniform until a strategy's data-efficiency interval
  lies above 1, then that strategy, and uniform again when none does.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from labeling.models import Campaign
from learning.ordering import Scored, queue_order

CONVINCING_WRONG = Campaign.Strategy.CONVINCING_WRONG.value
UNCERTAINTY = Campaign.Strategy.UNCERTAINTY.value
VERIFIER = Campaign.Strategy.VERIFIER.value
UNIFORM = Campaign.Strategy.UNIFORM.value
MIXED = Campaign.Strategy.MIXED.value
SERVED_PRM = Campaign.Strategy.SERVED_PRM.value
ENSEMBLE = Campaign.Strategy.ENSEMBLE.value
AUTO = Campaign.Strategy.AUTO.value
MACHINES_DISAGREE = Campaign.Strategy.MACHINES_DISAGREE.value
ENSEMBLE_MEMBERS = 4  # bow models on bootstrap resamples of the labels, beside the run's own
NAMES = list(Campaign.Strategy.values)
# The strategies that follow PRM800K's rule, so the campaign's share of wrong answers applies (auto
# may move to one of them).
WRONG_SHARE_STRATEGIES = (CONVINCING_WRONG, VERIFIER, MIXED, SERVED_PRM, AUTO)
# Why the campaign's default is the default: the measured result, shown on the page.
DEFAULT_REASON = (
    "New campaigns order uniformly because nothing measured better on real labels: in the "
    "repository's ablation (docs/active-learning.md, PRM800K phase 1 human ratings, 5 seeds) a "
    "PRM trained on uniformly chosen solutions matched each strategy's held-out step AUROC with "
    "0.2 to 0.8 of its labels at 400 to 3,200 solutions. On model solutions labelled by a "
    "reference PRM, uncertainty was 1.26-1.37x as data-efficient (intervals above 1, below the "
    "1.5x aimed at); no strategy reached 1.5x."
)


def step_entropy(probs: Sequence[float]) -> float:
    """Mean binary entropy (bits) of the steps' P(correct): 1 when every step is a coin toss,
    0 when the PRM is sure of each; a solution without steps is 0 (nothing to learn)."""
    if len(probs) == 0:
        return 0.0
    total = 0.0
    for p in probs:
        p = min(max(float(p), 1e-12), 1 - 1e-12)
        total -= p * math.log2(p) + (1 - p) * math.log2(1 - p)
    return total / len(probs)


def _key(value: float | None, solution_id: int) -> tuple[float, int]:
    """Highest value first, unknown or non-finite last, ties to the older solution."""
    if value is None or not math.isfinite(value):
        return (math.inf, solution_id)
    return (-value, solution_id)


def order_convincing_wrong(
    items: Sequence[Scored], *, wrong_share: float, seed: int = 0
) -> list[Scored]:
    return queue_order(items, wrong_share=wrong_share)


def order_uncertainty(
    items: Sequence[Scored], *, wrong_share: float, seed: int = 0
) -> list[Scored]:
    return sorted(items, key=lambda s: _key(s.uncertainty, s.solution_id))


def _rule_by(items: Sequence[Scored], score_of, *, wrong_share: float) -> list[Scored]:
    """PRM800K's rule by another score (None: last of its kind); the items keep their own
    (PRM) score."""
    by_other = [replace(s, score=-math.inf if score_of(s) is None else score_of(s)) for s in items]
    original = {s.solution_id: s for s in items}
    return [original[s.solution_id] for s in queue_order(by_other, wrong_share=wrong_share)]


def order_ensemble(items: Sequence[Scored], *, wrong_share: float, seed: int = 0) -> list[Scored]:
    """Where models trained on resamples of the labels disagree most first; a solution without
    a disagreement (no ensemble: another backbone than ``bow``) by the PRM's own entropy, after
    those with one."""
    return sorted(
        items,
        key=lambda s: (
            s.disagreement is None,
            *_key(s.disagreement if s.disagreement is not None else s.uncertainty, s.solution_id),
        ),
    )


def machine_conflict(prm: Sequence[float], others: Mapping[int, Sequence[float]]) -> float | None:
    """How much the machines disagree on a solution: the largest, over its steps, of the spread
    (highest minus lowest) of the P(correct) each machine gives the step: ``prm[i]``, the PRM's,
    and ``others[i]``, every other machine's word on step ``i`` (a rollout value: the share of
    completions from the step reaching the answer; a judge's verdict: 1 sound so far, 0 the
    first error; a served PRM's score). None when no other machine spoke of any of its steps:
    the PRM alone is no disagreement."""
    worst: float | None = None
    for index, words in others.items():
        values = [float(v) for v in words if v is not None and math.isfinite(v)]
        if not values:
            continue
        if 0 <= index < len(prm):
            values.append(float(prm[index]))
        spread = max(values) - min(values)
        worst = spread if worst is None else max(worst, spread)
    return worst


def order_machines_disagree(
    items: Sequence[Scored], *, wrong_share: float, seed: int = 0
) -> list[Scored]:
    """Where the machines disagree most first; a solution no other machine than the PRM spoke
    of by the PRM's own entropy, after those with evidence."""
    return sorted(
        items,
        key=lambda s: (
            s.machine_conflict is None,
            *_key(
                s.machine_conflict if s.machine_conflict is not None else s.uncertainty,
                s.solution_id,
            ),
        ),
    )


def order_verifier(items: Sequence[Scored], *, wrong_share: float, seed: int = 0) -> list[Scored]:
    """PRM800K's rule by the verifier's score."""
    return _rule_by(items, lambda s: s.verifier_score, wrong_share=wrong_share)


def order_served_prm(items: Sequence[Scored], *, wrong_share: float, seed: int = 0) -> list[Scored]:
    """PRM800K's rule by the served PRM's score."""
    return _rule_by(items, lambda s: s.served_score, wrong_share=wrong_share)


def order_uniform(items: Sequence[Scored], *, wrong_share: float, seed: int = 0) -> list[Scored]:
    ordered = sorted(items, key=lambda s: s.solution_id)  # the input order must not matter
    random.Random(seed).shuffle(ordered)
    return ordered


def interleave(orders: Sequence[Sequence[Scored]], shares: Sequence[float]) -> list[Scored]:
    """One order from several: position ``k`` goes to the order furthest below its share of the
    prefix (as ``queue_order`` does for two kinds), which gives its best item not yet placed."""
    return [s for s, _ in _interleave(orders, shares)]


STRATEGY_ARM, CONTROL_ARM = "strategy", "control"


def place(
    orders: Sequence[tuple[str, Sequence[Scored]]],
    shares: Sequence[float],
    *,
    control_share: float,
    seed: int,
) -> tuple[list[Scored], list[str]]:
    """The queue order from one or more strategies and a control arm, and who placed each
    position: the strategy's name, or ``CONTROL_ARM``.

    ``orders`` are ``(strategy, its order of the same open solutions)``, ``shares`` their shares
    of the strategy arm (normalised; ``auto``'s trials and the strategy it orders by). The
    control arm is a uniform random subset of the open solutions (``round(control_share * n)``
    of them, drawn by ``order_uniform`` with its own seed) in a uniform order, and each order
    places the rest by its own ranking, skipping what another placed: ``control_share`` of
    every prefix (to within one, until an arm runs out) comes from the control, each strategy's
    share of the rest from it. The subset is drawn before any strategy chooses, so the
    control's labels are a uniform sample of the pool whatever the strategies take first (a
    control that skipped what a strategy had placed would be drawn from a pool emptied of what
    it looks for, and flatter the strategy), which is what the data-efficiency estimate compares
    each strategy's labels with. A uniform strategy alone is all control."""
    if not orders:
        return [], []
    if len(orders) == 1 and orders[0][0] == UNIFORM:
        return list(orders[0][1]), [CONTROL_ARM] * len(orders[0][1])
    share = min(1.0, max(0.0, control_share))
    total = sum(shares) or 1.0
    weights = [(1 - share) * w / total for w in shares]
    pool = orders[0][1]
    drawn = order_uniform(pool, wrong_share=0.0, seed=seed * 7919 + 1) if share else []
    control = drawn[: round(share * len(drawn))]
    in_control = {s.solution_id for s in control}
    rests = [[s for s in order if s.solution_id not in in_control] for _, order in orders]
    placed = _interleave([*rests, control], [*weights, share])
    names = [name for name, _ in orders] + [CONTROL_ARM]
    return [s for s, _ in placed], [names[k] for _, k in placed]


def arm_of(placed_by: str) -> str:
    """The arm of a position that ``placed_by`` placed (``place``)."""
    return CONTROL_ARM if placed_by == CONTROL_ARM else STRATEGY_ARM


def with_control(
    order: Sequence[Scored], *, strategy: str, share: float, seed: int
) -> tuple[list[Scored], list[str]]:
    """The queue order of one strategy with a control arm (``place``), and the arm of each
    position (``STRATEGY_ARM`` or ``CONTROL_ARM``)."""
    queue, placed_by = place([(strategy, order)], [1.0], control_share=share, seed=seed)
    return queue, [arm_of(p) for p in placed_by]


def _interleave(
    orders: Sequence[Sequence[Scored]], shares: Sequence[float]
) -> list[tuple[Scored, int]]:
    placed: set[int] = set()
    taken = [0] * len(orders)
    cursor = [0] * len(orders)
    out: list[tuple[Scored, int]] = []
    total = len({s.solution_id for order in orders for s in order})
    while len(out) < total:
        k = len(out) + 1
        live = [i for i in range(len(orders)) if cursor[i] < len(orders[i])]
        i = max(live, key=lambda i: (shares[i] * k - taken[i], -i))
        while cursor[i] < len(orders[i]) and orders[i][cursor[i]].solution_id in placed:
            cursor[i] += 1
        if cursor[i] >= len(orders[i]):
            continue
        s = orders[i][cursor[i]]
        placed.add(s.solution_id)
        out.append((s, i))
        taken[i] += 1
    return out


def order_mixed(items: Sequence[Scored], *, wrong_share: float, seed: int = 0) -> list[Scored]:
    return interleave(
        [
            order_uncertainty(items, wrong_share=wrong_share),
            order_convincing_wrong(items, wrong_share=wrong_share),
        ],
        [0.5, 0.5],
    )


STRATEGIES: dict[str, Callable[..., list[Scored]]] = {
    CONVINCING_WRONG: order_convincing_wrong,
    UNCERTAINTY: order_uncertainty,
    VERIFIER: order_verifier,
    UNIFORM: order_uniform,
    MIXED: order_mixed,
    SERVED_PRM: order_served_prm,
    ENSEMBLE: order_ensemble,
    MACHINES_DISAGREE: order_machines_disagree,
    # Where auto starts (a run resolves it with ``auto_choice`` before ordering).
    AUTO: order_uniform,
}


# What auto tries while no strategy pays (those that apply to the campaign: ``served-prm`` needs
# the served PRM's scores, ``ensemble`` the ``bow`` backbone), and the share of the queue its trials
# take between them; the strategy auto orders by (uniform until one pays) places the rest.
AUTO_CANDIDATES = (CONVINCING_WRONG, UNCERTAINTY, ENSEMBLE, SERVED_PRM)
AUTO_TRIAL_SHARE = 0.3

# The auto strategy's rule, as the page and docs/active-learning.md state it.
AUTO_RULE = (
    "Auto orders uniformly until a strategy is measured to pay on this campaign: when the latest "
    "measured data-efficiency interval of a strategy (the control arm's estimate each run stores) "
    "lies above 1, the next run orders by it (by the one whose interval's lower end is highest, "
    "when several do), and as soon as none does, uniformly again. While it orders uniformly it "
    f"tries the others: {AUTO_TRIAL_SHARE:.0%} of the queue goes, in equal parts, to the "
    "strategies not yet measured below 1 (convincing wrong answers, uncertainty, the ensemble "
    "with the bow backbone, the served PRM once it has scored), each measured on the labels "
    "it placed against the control arm's; a strategy whose interval lies wholly below 1 is "
    "tried no more (choose it by hand to measure it again)."
)


@dataclass(frozen=True)
class AutoChoice:
    """What ``auto`` orders by, what it tries beside it, and why, in words for the page and the
    run."""

    strategy: str
    reason: str
    trials: tuple[str, ...] = ()


def _latest_measured(estimates: Sequence[tuple[int, dict]]) -> dict[str, tuple[int, dict]]:
    """Each strategy's latest *measured* estimate (one with an interval; "needs more labels"
    does not undo an earlier measurement), from ``(run id, data_efficiency)`` newest first."""
    latest: dict[str, tuple[int, dict]] = {}
    for run_id, estimate in estimates:
        strategy = estimate.get("strategy")
        interval = estimate.get("ratio_ci95") or []
        if strategy in (None, UNIFORM, AUTO) or strategy in latest or len(interval) != 2:
            continue
        if interval[0] is None or interval[1] is None:
            continue
        latest[strategy] = (run_id, estimate)
    return latest


def auto_choice(
    estimates: Sequence[tuple[int, dict]], candidates: Sequence[str] = ()
) -> AutoChoice:
    """The strategy ``auto`` orders by, from the campaign's stored estimates ``(run id,
    data_efficiency)``, newest first, and the ``candidates`` (of ``AUTO_CANDIDATES``, those
    that apply to the campaign) it tries beside it (``AUTO_RULE``).

    Each strategy counts by its latest measured estimate: the strategy whose interval's lower
    end is above 1, the highest such lower end when several (the newest on a tie), with no
    trials; else ``uniform``, with trials of the candidates whose interval does not lie wholly
    below 1.
    """
    latest = _latest_measured(estimates)
    paying = [
        (estimate["ratio_ci95"][0], run_id, strategy)
        for strategy, (run_id, estimate) in latest.items()
        if estimate["ratio_ci95"][0] > 1
    ]

    def shown(strategy: str) -> str:
        run_id, estimate = latest[strategy]
        lo, hi = estimate["ratio_ci95"]
        return f"{strategy} {estimate['ratio']:.2f}x ({lo:.2f}-{hi:.2f}) in run {run_id}"

    if paying:
        _, _, best = max(paying)
        return AutoChoice(
            best, f"Auto orders by {best}: its interval lies above 1 ({shown(best)})."
        )
    trials = tuple(c for c in candidates if c not in latest or latest[c][1]["ratio_ci95"][1] >= 1)
    tried = (
        f" It tries {', '.join(trials)} on {AUTO_TRIAL_SHARE:.0%} of the queue." if trials else ""
    )
    if not latest:
        return AutoChoice(
            UNIFORM,
            "Auto orders uniformly: no strategy has been measured on this campaign yet." + tried,
            trials,
        )
    measured = "; ".join(shown(s) for s in sorted(latest))
    return AutoChoice(
        UNIFORM,
        f"Auto orders uniformly: no strategy's interval lies above 1 ({measured})." + tried,
        trials,
    )


def auto_shares(choice: AutoChoice, *, control_share: float) -> list[tuple[str, float]]:
    """The strategies that place the strategy arm under ``choice`` and their shares of the
    queue (for ``place``): each trial an equal part of ``AUTO_TRIAL_SHARE``, the chosen strategy
    what the trials and the control arm leave (nothing, when they take it all)."""
    if not choice.trials:
        return [(choice.strategy, 1.0)]
    trial_share = min(AUTO_TRIAL_SHARE, 1 - min(1.0, max(0.0, control_share)))
    rest = max(0.0, 1 - control_share - trial_share)
    each = trial_share / len(choice.trials)
    return [(t, each) for t in choice.trials] + [(choice.strategy, rest)]


def strategy_order(
    name: str, items: Sequence[Scored], *, wrong_share: float = 0.8, seed: int = 0
) -> list[Scored]:
    """``items`` in the queue order of strategy ``name``, best first.

    ``wrong_share`` is the campaign's share of wrong-answer solutions (the strategies built on
    PRM800K's rule use it); ``seed`` fixes the uniform order (a run passes its id).
    """
    try:
        order = STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown selection strategy {name!r} (one of {', '.join(NAMES)})"
        ) from None
    return order(items, wrong_share=wrong_share, seed=seed)
