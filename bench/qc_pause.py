"""The QC pause rule against simulated raters: who it pauses, and after how many QC questions.

Each simulated annotator answers ``--questions`` quality-control questions drawn at random from
a gold set (the demo's 30 PRM800K phase 1 solutions, or all 900 phase 1 trajectories from
``../shared/data`` when present; ``bench.gold_scores.prm800k_gold``), rating in order and
stopping at their first -1, as the labelling page makes them. After each answer the rule scores
the last N answers with the screening gate's score (``labeling.gold.scores``) and pauses under
the threshold, exactly as ``labeling.queue.qc_pause`` does. The table gives, per rater and per
(N, threshold), the share of annotators paused within the questions, and the median question at
which they were.

    .venv/bin/python bench/qc_pause.py [--seeds 300] [--questions 50]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gold_scores import RATERS, SHARED_TRAJECTORIES, prm800k_gold  # noqa: E402

# (N, threshold): the defaults (20, 0.25) among the others measured.
SETTINGS = [(10, 0.35), (10, 0.2), (15, 0.25), (20, 0.35), (20, 0.3), (20, 0.25), (30, 0.3)]


def paused_at(gold_set, rater, rng, *, window: int, threshold: float, questions: int):
    """The question (from 1) at which the rule pauses this annotator, or None."""
    from labeling.gold.scores import gold_score

    answered = []
    for q in range(1, questions + 1):
        gold = rng.choice(gold_set)[1]
        answered.append((list(enumerate(gold)), dict(enumerate(rater(gold, rng)))))
        if q < window:
            continue
        score = gold_score(answered[-window:], stop_at_first_error=True).score
        if score is not None and score < threshold:
            return q
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--questions", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()
    if SHARED_TRAJECTORIES.exists():
        name, gold_set = "prm800k (900 phase 1)", prm800k_gold(SHARED_TRAJECTORIES, limit=None)
    else:
        name, gold_set = "demo-prm800k (30)", prm800k_gold()
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")
    print(
        f"gold set {name}; {args.questions} QC questions per annotator, {args.seeds} annotators "
        "per random rater; cells: share paused (median question when paused)"
    )
    head = "".join(f"{f'N={n} <{t}':>17}" for n, t in SETTINGS)
    print(f"{'rater':<20}{head}")
    for rater_name, (rater, is_random) in RATERS.items():
        cells = []
        for window, threshold in SETTINGS:
            at = [
                paused_at(
                    gold_set,
                    rater,
                    random.Random(seed),
                    window=window,
                    threshold=threshold,
                    questions=args.questions,
                )
                for seed in range(args.seeds if is_random else 30)
            ]
            hits = [q for q in at if q is not None]
            median = f"({statistics.median(hits):.0f})" if hits else "(-)"
            cells.append(f"{len(hits) / len(at):>11.0%} {median:>5}")
        print(f"{rater_name:<20}{''.join(cells)}")


if __name__ == "__main__":
    main()
