"""Exact checks of a step's mathematics: what a step states that can be shown wrong.

A step's words say little about whether its arithmetic is right; these checks read its equations
(``prm.latex``) and test them against themselves, against what the problem and the earlier steps
established, and against simple facts (percentages, units). Each check answers only when it can
decide; anything it cannot parse, evaluate or decide is *unknown*, never wrong. Their work is
bounded by what they read (a step's length, each part's length, the operations evaluation may
do, what the LaTeX parser is given: ``prm.latex``), never by a clock, so a step gets the same
findings at any load. The checks and what fires them:

- ``arithmetic``: a purely numeric equation that does not hold (``7 \\times 8 = 54``);
- ``algebra``: a rewrite that is not one (``(x+1)^2 = x^2 + x + 1`` inside a chain), or an
  equation with no solution at all (``2x + 6 = 2x + 5``);
- ``contradiction``: an equation that fails with the values the problem or earlier steps fixed
  (``x = 4`` before, ``2x + 1 = 7`` now), or a variable given a value none of its earlier ones;
- ``condition``: a value that breaks a stated condition (``x > 0`` before, ``x = -3`` now);
- ``final_answer``: a final answer that is not the last value computed nor any value stated;
- ``percent`` and ``units``: ``20% of 50 is 1000``, ``2 hours is 200 minutes``.

``check_solution(problem, steps)`` returns each step's findings (check name and a short reason).
The ``bow`` backbone turns them into features; they run where featurising runs (in the scorer's
and active learning's forked worker processes).
"""

from __future__ import annotations

from prm.checks.base import CHECKS, Finding
from prm.checks.solution import SolutionChecks, check_solution
from prm.checks.step import StepMath, read_step
from prm.checks.words import word_findings

__all__ = [
    "CHECKS",
    "Finding",
    "SolutionChecks",
    "StepMath",
    "check_solution",
    "read_step",
    "word_findings",
]
