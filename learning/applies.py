"""Which active-learning settings apply to which selection strategy: the campaign's settings form
and the active-learning page show a setting only where the chosen strategy reads it. Each
strategy declares what it reads (``Strategy.settings``, ``learning.strategies``); a setting no
strategy declares applies to every one."""

from __future__ import annotations

from learning.strategies import STRATEGIES, STRATEGY_SETTINGS

# Shown whatever the strategy once chosen: a served PRM still scores, joins the best-of-N curve
# and shows on the item page, and the manager must be able to see and clear it.
KEPT_WHEN_SET = ("al_scoring_endpoint", "al_scoring_model")


def setting_strategies(name: str) -> tuple[str, ...] | None:
    """The strategies that read the setting ``name``; None when every strategy does."""
    if name not in STRATEGY_SETTINGS:
        return None
    return tuple(s.name for s in STRATEGIES.values() if s.reads(name))


def setting_applies(name: str, *, strategy: str, value: object = None) -> bool:
    """Whether the setting ``name`` (a ``Campaign`` field) is shown under ``strategy``."""
    if name in KEPT_WHEN_SET and value:
        return True
    readers = setting_strategies(name)
    return readers is None or strategy in readers
