"""``auto``: a choice among the registered strategies by what the campaign measured.

Auto orders uniformly until a strategy's data-efficiency interval (the control arm's estimate
each run stores, ``learning.efficiency``) lies above 1, and meanwhile tries the strategies that
declare ``auto_tries`` and whose signals the campaign has (``auto_candidates``). ``AUTO_RULE`` says
it in the words of the page and the docs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from learning.strategies import AUTO, STRATEGIES, UNIFORM


def auto_candidates(available: Collection[str]) -> list[str]:
    """The strategies auto may try on a campaign whose signals are ``available`` (its served
    PRM's scores once it has scored, the ensemble with the ``bow`` backbone): those registered
    with ``auto_tries`` whose every signal is available, in registration order."""
    return [
        name
        for name, strategy in STRATEGIES.items()
        if strategy.auto_tries and strategy.signals <= set(available)
    ]


# The share of the queue auto's trials take between them; the strategy auto orders by (uniform
# until one pays) places the rest.
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
    data_efficiency)``, newest first, and the ``candidates`` (``auto_candidates``: those that
    apply to the campaign) it tries beside it (``AUTO_RULE``).

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
