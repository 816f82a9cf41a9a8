"""What the labels have bought: the best-of-N curve of a run's PRM on held-out problems.

Final answers are graded on import, so every solution with a graded answer is a free training
example for an *outcome* reward model (ORM: the same backbone trained on final-answer correctness
alone, ``prm train --objective outcome``); no human label is needed. A run writes the campaign's
graded regular solutions as one file (``graded.jsonl``: ``prompt``, ``completions``, ``answer``,
``answer_correct``), trains the ORM on its train split (validation choosing the epoch, the test
split never read), and computes ``prm.bestofn`` on its test problems, the problems the PRM was not
trained on either (both split by the same hash of the problem text):

    python -m prm bestofn --model PRM --orm ORM --data graded.jsonl --split test

prints the same figures from the run's folder.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from labeling.models import Campaign, Solution

# Graded solutions of train/validation problems the ORM trains on at most (a random sample):
# featurising is the cost, and the ORM only has to be good enough to compare with the PRM.
ORM_MAX_SOLUTIONS = 20000
PRM_METHODS = {"PRM (product)": "product", "PRM (min)": "min"}
ORM_METHOD = "ORM"
SERVED_METHOD = "served PRM (product)"


class StoredScores:
    """A scorer (``.score(rows)``) that answers step scores stored beforehand, by the row's
    problem and steps: how the served PRM joins the best-of-N curve without being asked
    again."""

    def __init__(self, scores: dict[tuple[str, tuple[str, ...]], list[float]]) -> None:
        self.scores = scores

    @staticmethod
    def key(row) -> tuple[str, tuple[str, ...]]:
        return (row.problem, tuple(row.steps))

    def score(self, rows, **_) -> list[list[float]]:
        return [self.scores[self.key(r)] for r in rows]


def _served_scorer(*, campaign: Campaign) -> StoredScores | None:
    """The campaign's served PRM's stored step scores of its graded solutions (None when it has
    no served PRM or it scored none of them)."""
    from labeling.models import Step
    from machines.served import served_scores

    by_solution = dict(served_scores(campaign=campaign).values_list("solution_id", "step_scores"))
    if not by_solution:
        return None
    graded = dict(
        Solution.objects.filter(
            campaign=campaign, kind=Solution.Kind.REGULAR, answer_is_correct__isnull=False
        )
        .filter(pk__in=list(by_solution))
        .values_list("pk", "problem__text")
    )
    steps: dict[int, list[str]] = {pk: [] for pk in graded}
    ids = list(graded)
    for start in range(0, len(ids), 5000):
        for sid, text in (
            Step.objects.filter(solution_id__in=ids[start : start + 5000])
            .order_by("solution_id", "index")
            .values_list("solution_id", "text")
        ):
            steps[sid].append(text)
    return StoredScores(
        {(graded[pk], tuple(steps[pk])): by_solution[pk] for pk in graded if steps[pk]}
    )


def graded_file(*, campaign: Campaign, out: Path, seed: int = 0) -> dict:
    """Write the campaign's regular solutions with a graded final answer (every one of a test-split
    problem, at most ``ORM_MAX_SOLUTIONS`` of the rest) as `trl`-like rows; returns counts."""
    from prm.data import split_of

    solutions = (
        Solution.objects.filter(
            campaign=campaign, kind=Solution.Kind.REGULAR, answer_is_correct__isnull=False
        )
        .select_related("problem")
        .order_by("pk")
    )
    test, rest = [], []
    for s in solutions.only("pk", "answer", "answer_is_correct", "problem__text").iterator(
        chunk_size=2000
    ):
        (test if split_of(s.problem.text) == "test" else rest).append(s)
    if len(rest) > ORM_MAX_SOLUTIONS:
        rest = random.Random(seed).sample(rest, ORM_MAX_SOLUTIONS)
    chosen = sorted(test + rest, key=lambda s: s.pk)
    steps: dict[int, list[str]] = {s.pk: [] for s in chosen}
    from labeling.models import Step

    ids = list(steps)
    for start in range(0, len(ids), 5000):
        for sid, text in (
            Step.objects.filter(solution_id__in=ids[start : start + 5000])
            .order_by("solution_id", "index")
            .values_list("solution_id", "text")
        ):
            steps[sid].append(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for s in chosen:
            if not steps[s.pk]:
                continue
            row = {
                "prompt": s.problem.text,
                "completions": steps[s.pk],
                "answer": s.answer,
                "answer_correct": bool(s.answer_is_correct),
            }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"test": len(test), "train": len(rest)}


def best_of_n_curve(*, campaign: Campaign, scorer, workdir: Path) -> dict:
    """The best-of-N curve of ``scorer`` (the run's PRM), an ORM trained here, majority vote,
    random and the oracle on the held-out problems; ``{}``-like with a ``skipped`` reason when
    the campaign has no held-out problem with several graded solutions."""
    import prm
    from prm.bestofn import evaluate_models, graded_groups

    path = workdir / "graded.jsonl"
    counts = graded_file(campaign=campaign, out=path)
    if not path.stat().st_size:
        return {"skipped": "no solution with a graded final answer"}
    dataset = prm.read_dataset(path)
    if not graded_groups(dataset, split="test"):
        return {"skipped": "no held-out problem has several solutions with a graded answer"}
    models: dict = {name: (scorer, how) for name, how in PRM_METHODS.items()}
    orm_note = ""
    try:
        prm.train(
            dataset,
            workdir / "orm",
            backbone=campaign.al_backbone or "bow",
            objective="outcome",
            progress=False,
        )
        models[ORM_METHOD] = (prm.load(workdir / "orm"), "last")
    except ValueError as exc:  # no graded solution of a training problem
        orm_note = f"no ORM: {exc}"
    served_note = ""
    stored = _served_scorer(campaign=campaign)
    if stored is not None:
        rows = [r for g in graded_groups(dataset, split="test") for r in g]
        missing = sum(1 for r in rows if stored.key(r) not in stored.scores)
        if missing:
            served_note = (
                f"no served PRM line: it has not scored {missing} of the {len(rows)} held-out "
                "solutions (score with it again)"
            )
        else:
            models[SERVED_METHOD] = (stored, "product")
    result = evaluate_models(models, dataset, split="test")
    result["orm_solutions"] = counts["train"]
    notes = [n for n in (orm_note, served_note) if n]
    if notes:
        result["note"] = "; ".join(notes)
    result["data"] = path.name
    return result


# The sentence speaks of the largest N that at least this many problems support (a campaign's
# few problems with 8 solutions would otherwise decide it: "At N=8 (1 problem)").
VERDICT_MIN_PROBLEMS = 10


def _support(curve: dict) -> list[int | None]:
    support = list(curve.get("problems_at_n") or [])
    return support + [None] * (len(curve.get("n") or []) - len(support))


def supported_n(curve: dict, at: list[int]) -> int:
    """Of the N positions ``at`` (indexes into ``curve["n"]``, not empty), the one a sentence
    or a legend quotes: the largest that ``VERDICT_MIN_PROBLEMS`` problems support, else the
    best supported (never an N that rests on a problem or two while a smaller N has more)."""
    support = _support(curve)
    enough = [k for k in at if (n := support[k]) is None or n >= VERDICT_MIN_PROBLEMS]
    return enough[-1] if enough else max(at, key=lambda j: (support[j] or 0, -j))


def best_of_n_verdict(curve: dict, *, method: str = "PRM (product)") -> str:
    """One plain sentence on the curve: at the largest N where the PRM, random and majority vote
    all have a value and ``VERDICT_MIN_PROBLEMS`` problems support it (else the best supported
    such N), whether the PRM picks better or worse than each ("" without them)."""
    accuracy = curve.get("accuracy") or {}
    ns = curve.get("n") or []
    columns = [accuracy.get(name) or [] for name in (method, "random", "majority")]
    at = [k for k in range(len(ns)) if all(k < len(c) and c[k] is not None for c in columns)]
    if not at:
        return ""
    k = supported_n(curve, at)
    prm, random, majority = (c[k] for c in columns)
    problems = _support(curve)[k]
    where = f"At N={ns[k]}" + (
        f" ({problems} problem{'' if problems == 1 else 's'})" if problems is not None else ""
    )
    worse = [
        f"{name} ({value:.0%})"
        for name, value in (("random", random), ("majority vote", majority))
        if prm < value
    ]
    if worse:
        return (
            f"{where} the PRM picks worse than {' and than '.join(worse)}: {prm:.0%} of its "
            "picks have the right answer. Its scores do not yet help choose among solutions here."
        )
    return (
        f"{where} the PRM picks at least as well as random ({random:.0%}) and majority vote "
        f"({majority:.0%}): {prm:.0%} of its picks have the right answer."
    )
