"""Which active-learning settings apply to which selection strategy (issue 25): the campaign's
settings form and the active-learning page show a setting only where the chosen strategy uses it.
A setting left out here applies to every strategy."""

from __future__ import annotations

from learning import strategies

SETTING_STRATEGIES: dict[str, tuple[str, ...]] = {
    # PRM800K's rule: the share of convincing wrong answers at the head of the queue.
    "al_wrong_answer_share": strategies.WRONG_SHARE_STRATEGIES,
    # Uniform is the control itself: the whole queue is its arm.
    "al_control_share": tuple(s for s in strategies.NAMES if s != strategies.UNIFORM),
    # served-prm orders by it; machines-disagree counts its step scores as one more machine
    "al_scoring_endpoint": (strategies.SERVED_PRM, strategies.MACHINES_DISAGREE),
    "al_scoring_model": (strategies.SERVED_PRM, strategies.MACHINES_DISAGREE),
}
# Shown whatever the strategy once chosen: a served PRM still scores, joins the best-of-N curve
# and shows on the item page, and the manager must be able to see and clear it.
KEPT_WHEN_SET = ("al_scoring_endpoint", "al_scoring_model")


def setting_applies(name: str, *, strategy: str, value: object = None) -> bool:
    """Whether the setting ``name`` (a ``Campaign`` field) is shown under ``strategy``."""
    if name in KEPT_WHEN_SET and value:
        return True
    return strategy in SETTING_STRATEGIES.get(name, (strategy,))
