"""PRM metrics in numpy: step AUROC with a bootstrap over problems, first-error F1, best-of-N, and
what a solution's steps' P(correct) say of the solution (its score, the PRM's uncertainty, an
ensemble's disagreement): the one home of that arithmetic.

No sklearn here: ``prm`` runs wherever torch and numpy do.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

AGGREGATIONS = ("product", "min", "last")


def auroc(labels: Sequence[bool] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """Area under the ROC curve (ties count half); nan when only one class is present."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    # average ranks over ties
    boundaries = np.flatnonzero(np.diff(sorted_s)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [len(s)]])
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def bootstrap_auroc(
    labels: Sequence[bool] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    groups: Sequence[str],
    *,
    n: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """95% interval of AUROC when whole problems (``groups``) are resampled with replacement.

    Steps of one problem are correlated, so resampling steps would give a falsely narrow interval.
    """
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        by_group[g].append(i)
    index = [np.array(v) for v in by_group.values()]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n):
        pick = rng.integers(0, len(index), len(index))
        idx = np.concatenate([index[k] for k in pick])
        value = auroc(y[idx], s[idx])
        if not math.isnan(value):
            values.append(value)
    if not values:
        return float("nan"), float("nan")
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def predicted_first_error(probs: Sequence[float] | np.ndarray, threshold: float) -> int:
    """The first step whose P(correct) falls below ``threshold``; -1 when none does."""
    for i, p in enumerate(probs):
        if p < threshold:
            return i
    return -1


def first_error_scores(
    probs: Sequence[Sequence[float] | np.ndarray], first_errors: Sequence[int], threshold: float
) -> dict[str, float]:
    """ProcessBench's metric: accuracy on erroneous solutions (the predicted first error is the
    true one), on error-free ones (no error predicted), and their harmonic mean (F1)."""
    err_hits = err_n = ok_hits = ok_n = 0
    for p, truth in zip(probs, first_errors, strict=True):
        pred = predicted_first_error(p, threshold)
        if truth >= 0:
            err_n += 1
            err_hits += pred == truth
        else:
            ok_n += 1
            ok_hits += pred == -1
    acc_err = err_hits / err_n if err_n else float("nan")
    acc_ok = ok_hits / ok_n if ok_n else float("nan")
    f1 = 2 * acc_err * acc_ok / (acc_err + acc_ok) if acc_err + acc_ok > 0 else 0.0
    return {
        "f1": f1,
        "accuracy_erroneous": acc_err,
        "accuracy_error_free": acc_ok,
        "erroneous": err_n,
        "error_free": ok_n,
    }


def best_first_error_threshold(
    probs: Sequence[Sequence[float] | np.ndarray], first_errors: Sequence[int]
) -> float:
    """The threshold with the best first-error F1 (chosen on validation, applied to test)."""
    parts = [np.asarray(p, dtype=np.float64) for p in probs if len(p)]
    flat = np.concatenate(parts or [np.asarray([0.5])])
    candidates = np.unique(np.quantile(flat, np.linspace(0.0, 1.0, 101)))
    best, best_f1 = 0.5, -1.0
    for t in candidates:
        f1 = first_error_scores(probs, first_errors, float(t))["f1"]
        if not math.isnan(f1) and f1 > best_f1:
            best, best_f1 = float(t), f1
    return best


def aggregate(probs: Sequence[float], how: str = "product", *, empty: float = 1.0) -> float:
    """A solution's score from its steps' P(correct): product (PRM800K's choice), min or last.

    An empty solution scores ``empty``: 1.0 when comparing candidates (there is no step to
    doubt); the queue's score (``solution_score``) puts it last instead.
    """
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregate must be one of {AGGREGATIONS}")
    if len(probs) == 0:
        return empty
    if how == "product":
        return float(math.exp(sum(math.log(max(p, 1e-300)) for p in probs)))
    if how == "min":
        return float(min(probs))
    return float(probs[-1])


def solution_score(probs: Sequence[float]) -> float:
    """The queue's score of a solution: the product of its steps' P(correct), 0 without steps
    (nothing to rate: it goes last). ``solution_scores`` is the same for many at once."""
    return aggregate(probs, "product", empty=0.0)


def step_entropy(probs: Sequence[float]) -> float:
    """How unsure the PRM is of a solution: the mean binary entropy (bits) of its steps'
    P(correct), 1 when every step is a coin toss, 0 when it is sure of each or there is no step."""
    return float(
        solution_scores(np.asarray(probs, dtype=np.float64), np.array([0, len(probs)]))[1][0]
    )


def solution_scores(probs: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``solution_score`` and ``step_entropy`` of many solutions at once: ``probs`` are every
    step's P(correct), solution ``j``'s from ``starts[j]`` to ``starts[j + 1]``."""
    n = len(starts) - 1
    p = np.clip(probs, 1e-12, 1 - 1e-12)
    entropy = -(p * np.log2(p) + (1 - p) * np.log2(1 - p))
    logp = np.log(np.maximum(probs, 1e-300))
    sums, ents = np.zeros(n), np.zeros(n)
    counts = np.diff(starts)
    has = counts > 0
    if len(probs):
        sums[has] = np.add.reduceat(logp, starts[:-1][has])
        ents[has] = np.add.reduceat(entropy, starts[:-1][has]) / counts[has]
    return np.where(has, np.exp(sums), 0.0), ents


def solution_spread(member_probs: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """How much models trained on resamples of the same labels disagree about each solution
    (ActPRM's ensemble uncertainty): the mean over its steps of the members' standard deviation
    of P(correct), 0 without steps. ``member_probs`` is (members, steps)."""
    spread = member_probs.std(axis=0)
    n = len(starts) - 1
    out = np.zeros(n)
    counts = np.diff(starts)
    has = counts > 0
    if spread.size:
        out[has] = np.add.reduceat(spread, starts[:-1][has]) / counts[has]
    return out


def best_of_n(
    groups: Sequence[Sequence[tuple[float, str | None, bool]]],
) -> dict[str, float]:
    """Accuracy of picking one solution per problem, by score, by majority vote, or at random.

    Each group is one problem's candidates as ``(score, final answer, answer is correct)``. Ties in
    score or vote are broken towards the first candidate; "random" is the expected accuracy of a
    uniform pick, "oracle" whether any candidate is correct.
    """
    n = len(groups)
    if n == 0:
        return {"problems": 0}
    pick = vote = rand = oracle = 0.0
    for cands in groups:
        best = max(range(len(cands)), key=lambda i: (cands[i][0], -i))
        pick += cands[best][2]
        answers = [c[1] for c in cands]
        counts = Counter(a for a in answers if a is not None)
        if counts:
            top = max(counts.values())
            winner = next(a for a in answers if a is not None and counts[a] == top)
            vote += next(c[2] for c in cands if c[1] == winner)
        rand += sum(c[2] for c in cands) / len(cands)
        oracle += any(c[2] for c in cands)
    return {
        "problems": n,
        "prm": pick / n,
        "majority": vote / n,
        "random": rand / n,
        "oracle": oracle / n,
    }
