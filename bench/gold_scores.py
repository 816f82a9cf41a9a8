"""Screening and QC scores of simulated raters: the old rule (share of gold steps rated alike)
against the new one (``labeling.gold.scores``: kappa over gold steps and "found the first error").

Gold sets, all real:

- ``demo-qc``: the demo's quality-control set, ``demo/processbench_samples.jsonl`` (9 ProcessBench
  records: +1 before the labelled first wrong step, -1 on it, no gold after);
- ``demo-prm800k``: 30 screening solutions from the demo's PRM800K phase 1 trajectories
  (``demo/prm800k_phase1_trajectories.jsonl``, real human ratings), each cut at its first negative
  step (``prm800k_gold``);
- ``prm800k``: the same from all 900 phase 1 trajectories in ``../shared/data`` (when present),
  scored as 30 sets of 30 solutions.

Raters rate every step in order and stop at their first -1, as the labelling page makes them:
always +1, always 0, always -1, uniformly random, and gold with 10%, 20% and 30% of steps changed
at random (to one of the two other ratings). Random and noisy raters run ``--seeds`` times per set;
the table gives the mean and the 5th and 95th percentiles of the score, and the share of runs
that pass (old rule at 0.75, new rule at the default threshold).

    .venv/bin/python bench/gold_scores.py [--seeds 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data" / "prm800k_phase1_human_labels"
SHARED_TRAJECTORIES = SHARED / "phase1_train.trajectories.jsonl"
DEMO_TRAJECTORIES = ROOT / "demo" / "prm800k_phase1_trajectories.jsonl"
DEMO_PROCESSBENCH = ROOT / "demo" / "processbench_samples.jsonl"

# One gold solution: its steps' texts and gold ratings (None: not gold-rated).
GoldSolution = tuple[list[str], list[int | None]]
Rater = Callable[[list[int | None], random.Random], list[int]]


def processbench_gold(path: Path = DEMO_PROCESSBENCH) -> list[GoldSolution]:
    """ProcessBench records as the importer makes them gold (``imports.processbench``)."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        steps, label = record["steps"], record["label"]
        gold = [1] * len(steps) if label == -1 else [1] * label + [-1]
        out.append((steps, gold + [None] * (len(steps) - len(gold))))
    return out


def prm800k_gold(path: Path = DEMO_TRAJECTORIES, *, limit: int | None = 30) -> list[GoldSolution]:
    """Phase 1 trajectories cut at their first negative step, with the human ratings as gold.

    Walk the labeller's chosen path; at the first step where a candidate was rated -1, that
    candidate ends the solution (the prefix keeps the chosen steps' ratings). A trajectory
    without a -1 candidate is kept whole. A step without a rating (human-written) ends it too.
    """
    out = []
    for line in path.read_text().splitlines():
        texts: list[str] = []
        gold: list[int | None] = []
        for step in json.loads(line)["label"]["steps"]:
            negative = next((c for c in step["completions"] if c.get("rating") == -1), None)
            if negative is not None:
                texts.append(negative["text"])
                gold.append(-1)
                break
            chosen = step.get("chosen_completion")
            if chosen is None:
                break
            completion = step["completions"][chosen]
            if completion.get("rating") is None:
                break
            texts.append(completion["text"])
            gold.append(completion.get("rating"))
        if texts:
            out.append((texts, gold))
        if limit is not None and len(out) == limit:
            break
    return out


def _until_negative(ratings: Iterator[int], n: int) -> list[int]:
    out = []
    for _ in range(n):
        out.append(next(ratings))
        if out[-1] == -1:
            break
    return out


def constant(value: int) -> Rater:
    def rate(gold, rng):
        return _until_negative(iter([value] * len(gold)), len(gold))

    return rate


def uniform(gold, rng):
    return _until_negative((rng.choice((-1, 0, 1)) for _ in gold), len(gold))


def noisy(share: float) -> Rater:
    """Gold with ``share`` of the steps changed at random (steps without gold: +1, as a reader
    who found no error would)."""

    def rate(gold, rng):
        def ratings():
            for g in gold:
                truth = 1 if g is None else g
                if rng.random() < share:
                    yield rng.choice([r for r in (-1, 0, 1) if r != truth])
                else:
                    yield truth

        return _until_negative(ratings(), len(gold))

    return rate


RATERS: dict[str, tuple[Rater, bool]] = {
    # name: (rater, random?)
    "always +1": (constant(1), False),
    "always 0": (constant(0), False),
    "always -1": (constant(-1), False),
    "uniform random": (uniform, True),
    "gold, 10% changed": (noisy(0.1), True),
    "gold, 20% changed": (noisy(0.2), True),
    "gold, 30% changed": (noisy(0.3), True),
}


def rater_scores(gold_set: list[GoldSolution], rater: Rater, rng: random.Random):
    """(old rule, new rule) of one rater's pass over ``gold_set``."""
    from labeling.gold.scores import gold_score

    items = []
    for _texts, gold in gold_set:
        given = rater(gold, rng)
        items.append((list(enumerate(gold)), dict(enumerate(given))))
    score = gold_score(items, stop_at_first_error=True)
    return score.agreement, score.score


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()
    from labeling.gold.scores import DEFAULT_THRESHOLD
    from labeling.models.campaigns import OLD_SCREENING_THRESHOLD_DEFAULT as OLD_THRESHOLD

    sets: dict[str, list[list[GoldSolution]]] = {
        "demo-qc": [processbench_gold()],
        "demo-prm800k": [prm800k_gold()],
    }
    if SHARED_TRAJECTORIES.exists():
        everything = prm800k_gold(SHARED_TRAJECTORIES, limit=None)
        sets["prm800k"] = [everything[i : i + 30] for i in range(0, len(everything) - 29, 30)]
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")
    print(f"default threshold (new rule): {DEFAULT_THRESHOLD}; old rule's: {OLD_THRESHOLD}")
    for name, groups in sets.items():
        steps = [g for group in groups for _t, gold in group for g in gold if g is not None]
        negative = sum(g == -1 for g in steps) / len(steps)
        print(
            f"\n{name}: {len(groups)} set(s) of {len(groups[0])} solutions, "
            f"{len(steps)} gold steps, {negative:.0%} negative"
        )
        print(
            f"{'rater':<20} {'old mean':>8} {'old p5-p95':>10} {'passes':>6}  "
            f"{'new mean':>8} {'new p5-p95':>13} {'passes':>6}"
        )
        for rater_name, (rater, is_random) in RATERS.items():
            old, new = [], []
            for group in groups:
                for seed in range(args.seeds if is_random else 1):
                    o, n = rater_scores(group, rater, random.Random(seed))
                    old.append(o)
                    new.append(n)
            old_pass = sum(o >= OLD_THRESHOLD for o in old) / len(old)
            new_pass = sum(n >= DEFAULT_THRESHOLD for n in new) / len(new)
            print(
                f"{rater_name:<20} {statistics.mean(old):8.2f} "
                f"{_pct(old, 0.05):5.2f}-{_pct(old, 0.95):4.2f} {old_pass:6.0%}  "
                f"{statistics.mean(new):8.2f} {_pct(new, 0.05):6.2f}-{_pct(new, 0.95):5.2f}"
                f" {new_pass:6.0%}"
            )


if __name__ == "__main__":
    main()
