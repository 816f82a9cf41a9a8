"""Scores of an annotator's ratings against gold: what the screening gate and QC figures use.

A score has to measure judgement. The share of gold steps rated exactly alike does not: most gold
steps are positive, so a rater who presses +1 on every step scored 0.89 on screening built from
PRM800K phase 1 labels, above a careful rater who changes 10% of steps (0.72). Two figures that a
constant or random rater cannot reach:

- **kappa**: Cohen's kappa between the gold rating and the annotator's over every scored step
  (``gold_agreement``'s steps; an unrated one is its own category, "no rating"). It is 0 for any
  constant rater and about 0 for a random one, whatever the gold's mix of ratings, and 1 for a
  perfect one;
- **first error found**: among the gold solutions with a gold negative step, the share where the
  annotator's first negative rating is on the gold's first negative step (PRM800K phase 2's task:
  find the first mistake). Always -1 finds it only when the error is the first step; always +1
  never does.

The pass rule combines them: ``score`` is their mean (kappa alone when no gold solution has an
error). When kappa is undefined (every scored gold step has one rating and so does every answer)
the score is the raw share of agreeing steps, which is all that such a gold set can tell: the
gold page warns that it cannot tell good from bad annotators (``gold_set_warnings``).

``bench/gold_scores.py`` simulates raters on the demo's gold and on gold built from real PRM800K
phase 1 labels; ``DEFAULT_THRESHOLD`` comes from it (docs/campaigns.md gives the figures).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from common.agreement import cohen_kappa
from labeling.models import Rating
from labeling.models.campaigns import SCREENING_THRESHOLD_DEFAULT as DEFAULT_THRESHOLD

__all__ = [
    "DEFAULT_THRESHOLD",
    "GoldScore",
    "first_error_found",
    "gold_agreement",
    "gold_score",
    "gold_set_warnings",
]
# The gold page warns below this share of negative scored steps (gold cut at the first error from
# PRM800K phase 1 has 11-14%: bench/gold_scores.py).
MIN_NEGATIVE_SHARE = 0.2

GoldSteps = Sequence[tuple[int, int | None]]


def gold_agreement(
    *, gold: Iterable[tuple[int, int | None]], ratings: dict[int, int], stop_at_first_error: bool
) -> tuple[int, int]:
    """(agreeing steps, scored steps) of one solution's ratings against its gold ratings.

    ``gold`` is ``(step index, gold rating)`` in step order. A step with a gold rating is scored;
    with stop-at-first-error, steps after the first gold negative are not (nobody rates them).
    A scored step agrees when the annotator gave exactly the gold rating; an unrated one (they
    stopped early or gave up) disagrees.
    """
    agree = scored = 0
    for _index, gold_rating, given in _scored(gold, ratings, stop_at_first_error):
        scored += 1
        agree += given == gold_rating
    return agree, scored


def _scored(gold, ratings, stop_at_first_error):
    for index, rating in gold:
        if rating is None:
            continue
        yield index, rating, ratings.get(index)
        if stop_at_first_error and rating == Rating.NEGATIVE:
            break


def _first_negative(items: Iterable[tuple[int, int | None]]) -> int | None:
    return next((index for index, r in sorted(items) if r == Rating.NEGATIVE), None)


def first_error_found(gold: GoldSteps, ratings: dict[int, int]) -> bool | None:
    """Whether the annotator's first -1 is on the gold's first -1; None when gold has no error."""
    error = _first_negative(gold)
    if error is None:
        return None
    return _first_negative(ratings.items()) == error


@dataclass(frozen=True)
class GoldScore:
    """One annotator's score against gold over a set of solutions (see the module docstring)."""

    agree: int
    scored: int
    kappa: float | None
    errors: int
    found: int

    @property
    def agreement(self) -> float | None:
        """The old figure: share of scored steps rated exactly as gold (shown, not the rule)."""
        return self.agree / self.scored if self.scored else None

    @property
    def first_error(self) -> float | None:
        return self.found / self.errors if self.errors else None

    @property
    def score(self) -> float | None:
        """What the pass rule compares with the threshold; ``None`` with no scored step."""
        if not self.scored:
            return None
        if self.kappa is None:
            return self.agreement
        if self.first_error is None:
            return self.kappa
        return (self.kappa + self.first_error) / 2

    def as_dict(self) -> dict:
        return {
            "score": self.score,
            "kappa": self.kappa,
            "first_error": self.first_error,
            "errors": self.errors,
            "found": self.found,
            "agreement": self.agreement,
            "agree": self.agree,
            "scored": self.scored,
        }


def gold_score(
    solutions: Iterable[tuple[GoldSteps, dict[int, int]]], *, stop_at_first_error: bool
) -> GoldScore:
    """Score ``(gold steps, the annotator's ratings by step index)`` pairs, one per solution.

    ``gold steps`` is ``(step index, gold rating or None)`` in step order, as ``gold_agreement``.
    """
    pairs: list[tuple[int, int | None]] = []
    agree = errors = found = 0
    for gold, ratings in solutions:
        for _index, gold_rating, given in _scored(gold, ratings, stop_at_first_error):
            pairs.append((gold_rating, given))
            agree += given == gold_rating
        if (hit := first_error_found(gold, ratings)) is not None:
            errors += 1
            found += hit
    return GoldScore(
        agree=agree, scored=len(pairs), kappa=cohen_kappa(pairs), errors=errors, found=found
    )


def gold_set_warnings(
    solutions: Iterable[GoldSteps], *, stop_at_first_error: bool, kind: str
) -> list[str]:
    """What makes a gold set unable to tell good annotators from bad ones, in words (none: fine).

    Scored steps as ``gold_agreement`` scores them. Under ``MIN_NEGATIVE_SHARE`` negative steps,
    a rater who never rates -1 still agrees on most steps; with no solution with an error, "found
    the first error" is not measured at all and the score is kappa alone; with a single rating
    throughout, kappa is undefined and the score falls back to the share of steps alike.
    """
    ratings: list[int] = []
    n = errors = 0
    for gold in solutions:
        n += 1
        ratings += [g for _i, g, _ in _scored(gold, {}, stop_at_first_error)]
        errors += _first_negative(gold) is not None
    if not n:
        return []
    warnings = []
    negative = sum(r == Rating.NEGATIVE for r in ratings)
    if not errors:
        warnings.append(
            f"No {kind} solution has a gold error (−1): the set cannot check that annotators "
            "find the first error, and a rater who rates every step +1 agrees with all of it."
        )
    elif ratings and negative / len(ratings) < MIN_NEGATIVE_SHARE:
        warnings.append(
            f"Only {negative} of {len(ratings)} scored {kind} gold steps "
            f"({negative / len(ratings):.0%}) are negative, under a fifth: add solutions with "
            "an early error so careless raters stand out."
        )
    if ratings and len(set(ratings)) == 1:
        warnings.append(
            f"Every scored {kind} gold step has the same rating: agreement beyond chance cannot "
            "be measured, and the score is only the share of steps rated alike."
        )
    return warnings
