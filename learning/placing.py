"""Placing strategies' orders in the queue: several orders by their shares, and a control arm.

Every run places its queue here: the strategy it orders by (``auto`` adds the ones it tries) and
a control arm, a uniform random share of the open solutions that each strategy's labels are
compared with (``learning.efficiency``). Each position records the arm and the strategy that
placed it (``Solution.al_arm``, ``al_placed_by``).
"""

from __future__ import annotations

from collections.abc import Sequence

from learning.ordering import Scored, interleave_placed
from learning.strategies import STRATEGIES, UNIFORM

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
    of them, drawn by the uniform strategy with its own seed) in a uniform order, and each order
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
    drawn = STRATEGIES[UNIFORM].order(pool, wrong_share=0.0, seed=seed * 7919 + 1) if share else []
    control = drawn[: round(share * len(drawn))]
    in_control = {s.solution_id for s in control}
    rests = [[s for s in order if s.solution_id not in in_control] for _, order in orders]
    placed = interleave_placed([*rests, control], [*weights, share])
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
