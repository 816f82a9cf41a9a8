"""Selection strategies: the order in which a run puts a campaign's open solutions in the queue.

Each strategy is one class here, registered with ``strategy_register``: its name (the
``Campaign.Strategy`` choice a manager picks), the **signals** it orders by (``PRM``, the run's
PRM; ``SERVED``, a PRM served elsewhere; ``ENSEMBLE_SPREAD``, PRMs on resamples of the labels;
``EVIDENCE``, what the machines said of the steps), the campaign **settings** it reads (the
settings form and the page show a setting only where the chosen strategy reads it), whether
``auto`` tries it, and ``order``, which takes the scored open solutions
(``learning.ordering.Scored``) and returns them best first.
The run places one or several orders and a control arm in the queue (``learning.placing``);
``auto`` chooses among the registered strategies by what the campaign measured
(``learning.auto``). ``bench/active_learning.py`` measures them against uniform sampling with
the same classes.

A run gathers a signal only when a strategy placing its queue declares it, and a strategy whose
signals the campaign does not have cannot order it (before its first labels, a campaign without a
served PRM has no PRM at all: ``uniform`` and ``verifier`` still order it).

To add a strategy: write its class (below, or in a module that registers it when the app is
ready), register it, and give its name and label a choice in ``Campaign.Strategy`` (a migration of
choices only). Nothing else names strategies one by one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import ClassVar

from labeling.models import Campaign
from learning.ordering import Scored, interleave, queue_order

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

# The signals a strategy orders by. ``PRM``: the run's PRM, the campaign's own once it has labels
# to train on, before that the served PRM standing in for it (``Scored.score``, ``uncertainty``).
PRM = "prm"
SERVED = "served"  # the served PRM's scores (``Scored.served_score``)
ENSEMBLE_SPREAD = "ensemble"  # an ensemble's disagreement (``Scored.disagreement``)
EVIDENCE = "evidence"  # what the machines say of the steps (``Scored.machine_conflict``)
SIGNALS = frozenset({PRM, SERVED, ENSEMBLE_SPREAD, EVIDENCE})

# Settings that only some strategies read; every other active-learning setting applies to all.
WRONG_SHARE = "al_wrong_answer_share"
CONTROL_SHARE = "al_control_share"
SCORING_ENDPOINT = ("al_scoring_endpoint", "al_scoring_model")

# Why the campaign's default is the default: the measured result, shown on the page.
DEFAULT_REASON = (
    "New campaigns order uniformly because nothing measured better on real labels: in the "
    "repository's ablation (docs/active-learning.md, PRM800K phase 1 human ratings, 5 seeds) a "
    "PRM trained on uniformly chosen solutions matched each strategy's held-out step AUROC with "
    "0.2 to 0.8 of its labels at 400 to 3,200 solutions. On model solutions labelled by a "
    "reference PRM, uncertainty was 1.26-1.37x as data-efficient (intervals above 1, below the "
    "1.5x aimed at); no strategy reached 1.5x."
)


# What PRM800K's rule buys, by the paper's own measure, as the repository's reproduction of its
# ablation found it (docs/ablation.md: ``python -m bench.prm800k_ablation --map``, a generated
# world that keeps the paper's assumptions, selectors of controlled AUROC, 3 seeds): the sentence
# the page and the docs give a manager.
RULE_PAYS = (
    "By the paper's own measure (PRM800K's ablation reproduced here, docs/ablation.md), "
    "PRM800K's rule bought about 1.1 times the labels of a uniform order with a selector of "
    "AUROC 0.61 to 1.00 (slope ratios 1.08-1.16x, no interval wholly above 1 at any AUROC), "
    "not the paper's 2.6x: expect no reliable gain from it unless the selector shares the "
    "blind spots of the PRM being trained; the control arm below measures it on this campaign."
)


class Strategy:
    """One way to order the open solutions; subclasses set the class attributes and ``order``."""

    name: ClassVar[str]
    signals: ClassVar[frozenset[str]] = frozenset()
    # Those of its signals without which it cannot order at all (the others it falls back from).
    required: ClassVar[frozenset[str] | None] = None  # None: every one
    settings: ClassVar[tuple[str, ...]] = (CONTROL_SHARE,)
    auto_tries: ClassVar[bool] = False  # auto tries it while no strategy pays

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        raise NotImplementedError

    @property
    def label(self) -> str:
        return str(Campaign.Strategy(self.name).label)

    @property
    def needs(self) -> frozenset[str]:
        """The signals it cannot order without."""
        return self.signals if self.required is None else self.required

    def reads(self, setting: str) -> bool:
        """Whether the campaign's ``setting`` changes this strategy's order."""
        return setting in self.settings or setting not in STRATEGY_SETTINGS


STRATEGY_SETTINGS = frozenset((WRONG_SHARE, CONTROL_SHARE, *SCORING_ENDPOINT))
STRATEGIES: dict[str, Strategy] = {}


def strategy_register(cls: type[Strategy]) -> type[Strategy]:
    """Make a strategy choosable by its name (a class decorator)."""
    if cls.name not in Campaign.Strategy.values:
        raise ValueError(f"{cls.name!r} is not a Campaign.Strategy choice")
    STRATEGIES[cls.name] = cls()
    return cls


def _key(value: float | None, solution_id: int) -> tuple[float, int]:
    """Highest value first, unknown or non-finite last, ties to the older solution."""
    if value is None or not math.isfinite(value):
        return (math.inf, solution_id)
    return (-value, solution_id)


def _rule_by(
    items: Sequence[Scored], score_of: Callable[[Scored], float | None], *, wrong_share: float
) -> list[Scored]:
    """PRM800K's rule by another score (None: last of its kind); the items keep their own
    (PRM) score."""
    by_other = [replace(s, score=_or_last(score_of(s))) for s in items]
    original = {s.solution_id: s for s in items}
    return [original[s.solution_id] for s in queue_order(by_other, wrong_share=wrong_share)]


def _or_last(value: float | None) -> float:
    return -math.inf if value is None else value


def _by_signal_then_entropy(
    items: Sequence[Scored], signal: Callable[[Scored], float | None]
) -> list[Scored]:
    """Highest ``signal`` first; those without it after them, by the PRM's own entropy."""
    return sorted(
        items,
        key=lambda s: (
            signal(s) is None,
            *_key(signal(s) if signal(s) is not None else s.uncertainty, s.solution_id),
        ),
    )


@strategy_register
class ConvincingWrong(Strategy):
    """PRM800K's rule ("Let's Verify Step by Step", section 4): wrong-answer solutions the PRM
    rates highest take the campaign's share of every prefix, the most convincing of the rest the
    remainder (``learning.ordering.queue_order``)."""

    name = CONVINCING_WRONG
    signals = frozenset({PRM})
    settings = (WRONG_SHARE, CONTROL_SHARE)
    auto_tries = True

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return queue_order(items, wrong_share=wrong_share)


@strategy_register
class Uncertainty(Strategy):
    """The solutions whose steps the current PRM is least sure about first (mean binary entropy
    of the steps' calibrated P(correct), as ActPRM, Duan et al. 2025, selects by predictive
    uncertainty)."""

    name = UNCERTAINTY
    signals = frozenset({PRM})
    auto_tries = True

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return sorted(items, key=lambda s: _key(s.uncertainty, s.solution_id))


@strategy_register
class Verifier(Strategy):
    """PRM800K's rule with the imported verifier score (PRM800K's
    ``pre_generated_verifier_score``, the Qwen samples' reward score) in place of the PRM's: for
    a campaign with no trained PRM yet, or a team that trusts that verifier more than its own
    model; solutions without one come last of their kind."""

    name = VERIFIER
    settings = (WRONG_SHARE, CONTROL_SHARE)

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return _rule_by(items, lambda s: s.verifier_score, wrong_share=wrong_share)


@strategy_register
class Uniform(Strategy):
    """A random order (seeded by the run): the control, and the default of a new campaign, which
    measured best on real labels (``DEFAULT_REASON``). The whole queue is its control arm."""

    name = UNIFORM
    settings = ()

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        ordered = sorted(items, key=lambda s: s.solution_id)  # the input order must not matter
        random.Random(seed).shuffle(ordered)
        return ordered


@strategy_register
class Mixed(Strategy):
    """Half ``uncertainty``, half ``convincing-wrong``, interleaved, each skipping what the other
    already placed."""

    name = MIXED
    signals = frozenset({PRM})
    settings = (WRONG_SHARE, CONTROL_SHARE)

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return interleave(
            [
                STRATEGIES[UNCERTAINTY].order(items, wrong_share=wrong_share, seed=seed),
                STRATEGIES[CONVINCING_WRONG].order(items, wrong_share=wrong_share, seed=seed),
            ],
            [0.5, 0.5],
        )


@strategy_register
class ServedPRM(Strategy):
    """PRM800K's rule by the scores of a PRM served elsewhere (the campaign's
    ``al_scoring_endpoint``) in place of the campaign's own PRM's, which still trains and is
    evaluated beside it; solutions it has not scored come last of their kind."""

    name = SERVED_PRM
    signals = frozenset({SERVED})
    settings = (WRONG_SHARE, CONTROL_SHARE, *SCORING_ENDPOINT)
    auto_tries = True

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return _rule_by(items, lambda s: s.served_score, wrong_share=wrong_share)


@strategy_register
class Ensemble(Strategy):
    """ActPRM's ensemble uncertainty: ``ENSEMBLE_MEMBERS`` ``bow`` PRMs trained on bootstrap
    resamples of the labels (by problem), the solutions where they disagree most first (the mean
    over steps of the members' standard deviation of P(correct)); a solution without a
    disagreement (no ensemble: another backbone than ``bow``) by the PRM's own entropy, after
    those with one."""

    name = ENSEMBLE
    signals = frozenset({PRM, ENSEMBLE_SPREAD})
    required = frozenset({PRM})
    auto_tries = True

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return _by_signal_then_entropy(items, lambda s: s.disagreement)


@strategy_register
class MachinesDisagree(Strategy):
    """Human labels where the machines disagree: on each step, the spread (highest minus lowest
    P(correct)) of what the campaign's PRM, the served PRM, the rollouts from the step and the
    judge say of it (``learning.machine_evidence``); the solutions with the largest spread on any
    step first, those no machine but the PRM spoke of after them, by the PRM's own entropy."""

    name = MACHINES_DISAGREE
    signals = frozenset({PRM, EVIDENCE})
    required = frozenset({PRM})
    settings = (CONTROL_SHARE, *SCORING_ENDPOINT)

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return _by_signal_then_entropy(items, lambda s: s.machine_conflict)


@strategy_register
class Auto(Strategy):
    """Not an order of its own but a choice among the others by what this campaign measured
    (``learning.auto``): a run resolves it before ordering; uniform is where it starts."""

    name = AUTO
    settings = (WRONG_SHARE, CONTROL_SHARE)

    def order(self, items: Sequence[Scored], *, wrong_share: float, seed: int) -> list[Scored]:
        return STRATEGIES[UNIFORM].order(items, wrong_share=wrong_share, seed=seed)


NAMES = list(Campaign.Strategy.values)


def strategy_get(name: str) -> Strategy:
    """The registered strategy ``name``; refused with the names there are."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown selection strategy {name!r} (one of {', '.join(STRATEGIES)})"
        ) from None


def strategy_order(
    name: str, items: Sequence[Scored], *, wrong_share: float = 0.8, seed: int = 0
) -> list[Scored]:
    """``items`` in the queue order of strategy ``name``, best first.

    ``wrong_share`` is the campaign's share of wrong-answer solutions (the strategies built on
    PRM800K's rule use it); ``seed`` fixes the uniform order (a run passes its id).
    """
    return strategy_get(name).order(items, wrong_share=wrong_share, seed=seed)


def signals_of(names: Sequence[str]) -> frozenset[str]:
    """The signals the strategies ``names`` order by, together."""
    return frozenset().union(*(strategy_get(n).signals for n in names))
