"""What "the consensus" of several annotators' ratings of one step means: three rules, each
named once here, because each answers a different question and they differ on the same ratings
(for -1, 0, 0, +1, +1 the plurality is 0, a tie broken negative; there is no strict majority;
the majority of binary labels with neutral as positive is positive).

- ``plurality_rating``: the rating most of them gave, a tie to the more negative. For when a
  step must get one rating from whatever its annotators said: gold made from the labels
  (the data browser's "make gold from the consensus"), the consensus column beside them.
- ``majority_label``: binary labels combined by a simple majority, a tie negative. For the
  exports' ``annotators="majority"`` (and ``adjudicated`` where nobody decided the step), on
  labels the policy has already made binary.
- ``strict_majority_rating``: the rating more than half of them gave, else none. For measuring
  someone against the others (``annotators.quality``'s agreement with the consensus): a step
  the others split on has no consensus to agree with, so it is not counted.

Ties go negative in the first two, so a step its annotators split on is never taught as right.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["majority_label", "plurality_rating", "strict_majority_rating"]


def plurality_rating(ratings: Iterable[int | None]) -> int | None:
    """The rating given most often (a tie: the more negative); None when nobody rated the step
    (unrated labels, a step after the first error, do not vote)."""
    counts = Counter(r for r in ratings if r is not None)
    if not counts:
        return None
    best = max(counts.values())
    return min(r for r, n in counts.items() if n == best)


def majority_label(votes: Sequence[bool]) -> bool:
    """True when more votes are positive than negative; a tie (and no vote) is negative."""
    positive = sum(votes)
    return positive > len(votes) - positive


def strict_majority_rating(counts: Sequence[int]) -> int | None:
    """The rating more than half the ratings carry, from their counts in rating order
    (``counts[0]`` of -1, ``counts[1]`` of 0, ``counts[2]`` of +1); None when no rating has
    more than half, or there are none. Counts, not ratings: the agreement figures compute each
    rater's others by subtracting their own counts, a million times per snapshot."""
    n = sum(counts)
    best = max(counts)
    if not n or 2 * best <= n:
        return None
    return counts.index(best) - 1
