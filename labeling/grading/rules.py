"""The grading rules a campaign chooses between (``Campaign.grading_rule``).

Two readings of "the answer equals the truth", both real:

- ``mathematical``: equal as mathematics (math-verify): ``6/10`` is ``3/5``, ``2^9 + 2`` is
  ``514``, ``1,2`` is ``(1, 2)``, a list is a set. What a campaign of fresh model answers wants.
- ``prm800k``: as PRM800K's reference grader graded (``labeling.grading.as_prm800k``): MATH's
  normalisation, then equality only of answers in the form MATH expects (an unreduced fraction,
  an uncomputed number, a list in another order or without its brackets are wrong). What a
  campaign of PRM800K's own solutions wants, so that our grades agree with its labels.

Under both, an answer made of words or letters is text and a clock time is a time
(``labeling.grading.readings``). Plain strings, so that the worker processes and the model share
them without Django.
"""

from __future__ import annotations

MATHEMATICAL = "mathematical"
PRM800K = "prm800k"

# value -> what a page says
RULES: dict[str, str] = {
    MATHEMATICAL: "mathematically equal",
    PRM800K: "as PRM800K graded",
}


def check(rule: str) -> str:
    """``rule`` itself, or ValueError for a name that is no rule (a typo must not grade)."""
    if rule not in RULES:
        raise ValueError(f"unknown grading rule {rule!r}: one of {', '.join(RULES)}")
    return rule
