"""Is active learning paying here? The data efficiency of the strategy's labels against the
control arm's, measured on the campaign's own labels.

A run places ``al_control_share`` of the queue uniformly at random (the control arm,
``learning.placing.place``) and records on each solution the arm that placed it and, on the
strategy arm, the strategy (``strategy_rows`` keeps a strategy's own labels and the control's). The
estimate (``data_efficiency``):

- **held out**: the control arm's labels of the validation and test problems (``prm.data.split_of``,
  the same hash as every PRM split): a uniform sample of the queue, which neither arm trains on;
- **matched counts**: ``n`` = the control arm's step labels on the other problems (at most
  ``MAX_LABELS``, and at most twice the strategy's); a step model is trained on ``m = n / 2`` of
  the strategy's labels and on ``m/4, m/2, m, 2m`` of the control's. The ratio is the control
  budget that reaches the strategy model's held-out step AUROC (interpolated on log budget along
  the control's curve) over ``m``: above 1 when the strategy's labels are worth more. It is
  censored at 0.25 and 2 (the ends of the control's curve), said with ``<=`` / ``>=``;
- **interval**: 95% bootstrap over problems (the training problems of each arm and the held-out
  problems resampled together, ``RESAMPLES`` times), every model retrained on each resample;
- **the step model** is TF-IDF of the step (token pattern ``\\b\\w+\\b|[^\\w\\s]``) and logistic
  regression: a PRM of the step alone, light enough to retrain on every resample (held-out AUROC
  0.638 on PRM800K phase 1 against the ``bow`` PRM's 0.62-0.67, NOTES.md); it measures the labels,
  not the campaign's backbone.

Beside it, **the error yield** (``error_yield``): how much more often the strategy's labelled
solutions hold an error the annotators found (a step rated negative) than the control's, the ratio
of the two arms' rates with a 95% bootstrap interval over problems, each arm resampled on its own
(stratified by arm, ``YIELD_RESAMPLES`` times). It is what PRM800K's rule is for (surfacing
convincing wrong answers) and it is decisive at campaign sizes where the AUROC ratio is not: on
PRM800K phase 1 labels the step model learns so slowly that its interval spans the censored range
at a few thousand labels, while the yield separates a strong selector from a random one at 100-odd
labelled solutions (``tests/test_al_efficiency.py``). It counts errors found, not what the PRM
learns from them.

With too few labels it says how many more the control arm needs (``MIN_CONTROL_LABELS`` on
training problems, ``MIN_HELD_OUT_STEPS`` held out, of both classes). No Django here: the run
reads the labels (``campaign_labels``) and stores the result on itself.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

MIN_CONTROL_LABELS = 200
MIN_HELD_OUT_STEPS = 50
MAX_LABELS = 4000
RESAMPLES = 100
YIELD_RESAMPLES = 1000
MIN_YIELD_SOLUTIONS = 20  # labelled solutions of each arm before the error yield is measured
FRACTIONS = (0.25, 0.5, 1.0, 2.0)  # control budgets, in strategy budgets
HELD_OUT = ("validation", "test")
TOKEN_PATTERN = r"\b\w+\b|[^\w\s]"


@dataclass(frozen=True)
class ArmLabels:
    """One labelled solution (path) of a campaign and the arm that placed it."""

    problem: str
    steps: tuple[str, ...]
    labels: tuple[bool, ...]
    arm: str  # "strategy" or "control"
    # The strategy that placed it on the strategy arm (``Solution.al_placed_by``).
    placed_by: str = ""


def strategy_rows(rows: Sequence[ArmLabels], strategy: str) -> list[ArmLabels]:
    """The labels that measure ``strategy``: the control arm's and those of the strategy arm that
    ``strategy`` placed (under ``auto`` several strategies share the arm, each measured on its
    own labels against the same control)."""
    return [r for r in rows if r.arm == "control" or r.placed_by == strategy]


class _Steps:
    """TF-IDF of every distinct step text, computed once (the texts, not the labels: no model
    sees a label it does not train on); models are fitted on rows of it."""

    def __init__(self, rows: Sequence[ArmLabels]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.index: dict[str, int] = {}
        for row in rows:
            for step in row.steps:
                self.index.setdefault(step, len(self.index))
        vectorizer = TfidfVectorizer(token_pattern=TOKEN_PATTERN, sublinear_tf=True)
        self.x = vectorizer.fit_transform(list(self.index))

    def auroc(self, train: Sequence[tuple[str, bool]], test: Sequence[tuple[str, bool]]) -> float:
        """Held-out step AUROC on ``test`` of a model fitted on ``train``."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score

        y = [label for _, label in train]
        if len(set(y)) < 2:
            return 0.5
        model = LogisticRegression(C=1.0, solver="liblinear")
        model.fit(self.x[[self.index[s] for s, _ in train]], y)
        p = model.predict_proba(self.x[[self.index[s] for s, _ in test]])[:, 1]
        return float(roc_auc_score([label for _, label in test], p))


def _take(rows: Sequence[ArmLabels], budget: int) -> list[tuple[str, bool]]:
    """The first ``budget`` step labels of ``rows`` (the last path cut short)."""
    out: list[tuple[str, bool]] = []
    for row in rows:
        for step, label in zip(row.steps, row.labels, strict=True):
            if len(out) >= budget:
                return out
            out.append((step, label))
    return out


def _by_problem(rows: Sequence[ArmLabels]) -> dict[str, list[ArmLabels]]:
    groups: dict[str, list[ArmLabels]] = {}
    for row in rows:
        groups.setdefault(row.problem, []).append(row)
    return groups


def _resample(groups: dict[str, list[ArmLabels]], rng: random.Random | None) -> list[ArmLabels]:
    """The rows of a bootstrap resample of the problems (all of them, once, for ``None``), in a
    shuffled order (the budget takes a prefix)."""
    names = sorted(groups)
    if rng is not None:
        names = [rng.choice(names) for _ in names]
    rows = [row for name in names for row in groups[name]]
    random.Random(len(rows) if rng is None else rng.random()).shuffle(rows)
    return rows


def _held_out_steps(rows: Sequence[ArmLabels]) -> list[tuple[str, bool]]:
    """Each distinct held-out step once (the first label it got)."""
    seen: dict[str, bool] = {}
    for row in rows:
        for step, label in zip(row.steps, row.labels, strict=True):
            seen.setdefault(step, label)
    return list(seen.items())


def budget_ratio(strategy_auroc: float, control: Sequence[tuple[float, float]]) -> float:
    """The control budget (in strategy budgets) reaching ``strategy_auroc``: interpolated on log
    budget along the control's curve made monotone; censored at its ends."""
    budgets = [f for f, _ in control]
    curve, best = [], -math.inf
    for _, a in control:
        best = max(best, a)
        curve.append(best)
    if strategy_auroc <= curve[0]:
        return budgets[0]
    if strategy_auroc > curve[-1]:
        return budgets[-1]
    for (f0, a0), (f1, a1) in zip(
        zip(budgets, curve, strict=True), zip(budgets[1:], curve[1:], strict=True), strict=True
    ):
        if a0 < strategy_auroc <= a1:
            t = (strategy_auroc - a0) / (a1 - a0)
            return math.exp(math.log(f0) + t * (math.log(f1) - math.log(f0)))
    return budgets[-1]


def _found(rows: Sequence[ArmLabels]) -> tuple[int, int]:
    """(solutions with a step rated negative, solutions) of ``rows``."""
    return sum(1 for r in rows if not all(r.labels)), len(rows)


def error_yield(
    rows: Sequence[ArmLabels], *, resamples: int = YIELD_RESAMPLES, seed: int = 0
) -> dict:
    """The strategy's rate of labelled solutions with an error found over the control's (see the
    module): ``status`` as ``data_efficiency``'s, ``ratio``, ``ratio_ci95``, each arm's rate and
    counts, ``sentence``. Every labelled solution counts, whatever its problem's split."""
    arms = {arm: [r for r in rows if r.arm == arm] for arm in ("strategy", "control")}
    (s_found, s_n), (c_found, c_n) = _found(arms["strategy"]), _found(arms["control"])
    out: dict = {
        "strategy_found": s_found,
        "strategy_solutions": s_n,
        "control_found": c_found,
        "control_solutions": c_n,
        "resamples": resamples,
        "seed": seed,
    }
    if min(s_n, c_n) < MIN_YIELD_SOLUTIONS or c_found == 0:
        needed = max(1, MIN_YIELD_SOLUTIONS - c_n)
        return out | {
            "status": "needs-labels",
            "sentence": f"Error yield: the control arm needs about {needed:,} more labelled "
            "solutions (one of them with an error found) before it can be compared.",
        }
    groups = {arm: _by_problem(rs) for arm, rs in arms.items()}
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        rates = []
        for arm in ("strategy", "control"):
            names = sorted(groups[arm])
            picked = [row for _ in names for row in groups[arm][rng.choice(names)]]
            found, n = _found(picked)
            rates.append(found / n)
        ratios.append(rates[0] / rates[1] if rates[1] > 0 else math.inf)
    ratios.sort()
    ratio = (s_found / s_n) / (c_found / c_n)
    lo = ratios[int(0.025 * (len(ratios) - 1))] if ratios else ratio
    hi = ratios[math.ceil(0.975 * (len(ratios) - 1))] if ratios else ratio
    status = "paying" if lo > 1 else "not-paying" if hi < 1 else "unclear"
    shown = f"{ratio:.2f}x ({lo:.2f}-{hi:.2f})"
    return out | {
        "status": status,
        "ratio": round(ratio, 3),
        "ratio_ci95": [round(lo, 3), round(hi, 3) if math.isfinite(hi) else None],
        "strategy_rate": round(s_found / s_n, 4),
        "control_rate": round(c_found / c_n, 4),
        "sentence": (
            f"Error yield: {s_found / s_n:.0%} of the strategy's labelled solutions held an error "
            f"the annotators found, against {c_found / c_n:.0%} of the control's: {shown}"
            + (
                ", above 1."
                if status == "paying"
                else ", below 1."
                if status == "not-paying"
                else ", an interval that contains 1."
            )
        ),
    }


def data_efficiency(
    rows: Sequence[ArmLabels],
    *,
    control_share: float = 0.2,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict:
    """The estimate (see the module): ``status`` ``paying``, ``not-paying``, ``unclear`` or
    ``needs-labels``, the ratio and its interval, the counts it rests on and ``sentence``, the
    answer in words for the page."""
    from prm.data import split_of

    held = [r for r in rows if r.arm == "control" and split_of(r.problem) in HELD_OUT]
    train = [r for r in rows if split_of(r.problem) not in HELD_OUT]
    strategy = [r for r in train if r.arm == "strategy"]
    control = [r for r in train if r.arm == "control"]
    count = lambda rs: sum(len(r.labels) for r in rs)  # noqa: E731
    strategy_labels, control_labels = count(strategy), count(control)
    test = _held_out_steps(held)
    out: dict = {
        "strategy_labels": strategy_labels,
        "control_labels": control_labels,
        "held_out_steps": len(test),
        "held_out_problems": len({r.problem for r in held}),
        "resamples": resamples,
        "seed": seed,
    }
    classes = {label for _, label in test}
    short = [
        MIN_CONTROL_LABELS - control_labels,
        MIN_HELD_OUT_STEPS - len(test),
    ]
    if max(short) > 0 or len(classes) < 2 or strategy_labels < MIN_CONTROL_LABELS // 2:
        needed = max(
            1,
            *short,
            MIN_CONTROL_LABELS // 2 - strategy_labels,
        )
        share = max(control_share, 1e-6)
        out |= {
            "status": "needs-labels",
            "needed_control_labels": needed,
            "sentence": (
                f"Not yet measurable: the control arm needs about {needed:,} more step labels "
                f"(about {math.ceil(needed / share):,} labels in all at a {share:.0%} control "
                "share)"
                + ("" if len(classes) == 2 or not test else ", and held-out labels of both kinds")
                + "."
            ),
        }
        return out
    n = min(control_labels, 2 * strategy_labels, MAX_LABELS)
    m = max(1, n // 2)
    groups = {"strategy": _by_problem(strategy), "control": _by_problem(control)}
    held_groups = _by_problem(held)
    rng = random.Random(seed)
    steps = _Steps([*strategy, *control, *held])

    def once(r: random.Random | None) -> tuple[float, float, list[float]]:
        s_rows = _resample(groups["strategy"], r)
        c_rows = _resample(groups["control"], r)
        h = _held_out_steps(_resample(held_groups, r)) if r is not None else test
        if len({label for _, label in h}) < 2:
            h = test
        a_s = steps.auroc(_take(s_rows, m), h)
        curve = [(f, steps.auroc(_take(c_rows, max(1, round(f * m))), h)) for f in FRACTIONS]
        return budget_ratio(a_s, curve), a_s, [a for _, a in curve]

    ratio, strategy_auroc, control_curve = once(None)
    ratios = sorted(once(rng)[0] for _ in range(resamples))
    lo = ratios[int(0.025 * (len(ratios) - 1))] if ratios else ratio
    hi = ratios[math.ceil(0.975 * (len(ratios) - 1))] if ratios else ratio
    low_end, high_end = FRACTIONS[0], FRACTIONS[-1]
    mark = "<=" if ratio <= low_end else ">=" if ratio >= high_end else ""
    shown = f"{mark}{ratio:.2f}x ({lo:.2f}-{hi:.2f})"
    if lo > 1:
        status, sentence = (
            "paying",
            f"Yes: here the strategy's labels are worth {shown} the control's "
            f"(held-out step AUROC {strategy_auroc:.3f} with {m:,} labels).",
        )
    elif hi < 1:
        status, sentence = (
            "not-paying",
            f"No: here the strategy's labels are worth {shown} the control's; ordering "
            "uniformly would buy more with the same labels.",
        )
    else:
        status, sentence = (
            "unclear",
            f"Not yet clear: {shown}, an interval that contains 1 (the same as uniform). "
            "More control labels narrow it.",
        )
    out |= {
        "status": status,
        "ratio": round(ratio, 3),
        "ratio_ci95": [round(lo, 3), round(hi, 3)],
        "censored": mark,
        "budget": m,
        "strategy_auroc": round(strategy_auroc, 4),
        "control_auroc": {
            f"{f:g}": round(a, 4) for f, a in zip(FRACTIONS, control_curve, strict=True)
        },
        "sentence": sentence,
    }
    return out
