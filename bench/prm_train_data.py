"""A `trl` training file of about a million step labels made from PRM800K phase 1's human labels.

PRM800K phase 1 (``../shared/data/prm800k_phase1_human_labels``) has 900 problems and 13,231
trajectory steps with real human ratings; under the default label policy (``prm.data``) they are
28,722 rows and 423,427 step labels, but only 41,051 distinct steps: each rated alternative is its
own row and repeats the chosen path before it. A campaign's export at PRM800K's size looks more
like phase 2, where nearly every labelled step is a step of its own (the issue's 1M-label export
had 874,580 distinct items). So the file is made like this, deterministically for a seed:

- **Test problems stay real**: the 89 problems that hash into the test split are written once,
  as they are, so ``prm eval --split test`` measures AUROC on real held-out problems.
- **Train and validation problems are copied** until the file holds the labels asked for. Copy 0
  keeps the problem's text, later copies prepend a tag of unlikely letters (``Variant qzxjk.``),
  drawn again until the copy hashes into its original's split: every copy of a problem stays on
  its side of the held-out line, so nothing of a validation or test problem is trained on.
- **Steps are perturbed per row**, so that rows are distinct solutions as in phase 2: each step of
  a copy gets a connective (``So, ``, ``Now, ``...) and/or extra white space, drawn per row; with
  probability ``share`` an alternative row keeps its copy's path prefix exactly (as the export's
  alternatives do), which sets how many labels are distinct items. Numbers, formulas and labels are
  untouched (a ``# Answer`` step gets only white space), so every label keeps its meaning.

    python -m bench.prm_train_data --labels 1000000 --out var/bench_prm_train/train-1000000.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

from bench.prm_common import require, shared_data
from prm.data import Solution, prm800k_solutions, split_of

PHASE1 = Path("prm800k_phase1_human_labels") / "phase1_train.trajectories.jsonl"
CONNECTIVES = ("", "", "So, ", "Now, ", "Next, ", "Then, ", "Well, ", "OK, ", "Here, ", "Also, ")
SPACES = ("", " ", "\n", "  ")
TAG_LETTERS = "qxzjvkw"
DEFAULT_SHARE = 0.1


def _perturb(text: str, rng: random.Random) -> str:
    space = rng.choice(SPACES)
    if text.lstrip().startswith("#") or not text.strip():
        return text + space
    return rng.choice(CONNECTIVES) + text + space


def _tagged(problem: str, split: str, rng: random.Random) -> str:
    while True:
        tag = "".join(rng.choice(TAG_LETTERS) for _ in range(5))
        text = f"Variant {tag}. {problem}"
        if split_of(text) == split:
            return text


def _copy_rows(rows: list[Solution], problem: str, rng: random.Random, share: float):
    """One copy of a problem's rows: the first row is its path, the others its alternatives."""
    path = rows[0]
    path_steps = tuple(_perturb(t, rng) for t in path.steps)
    for k, row in enumerate(rows):
        if k == 0:
            steps = path_steps
        else:
            n = len(row.steps) - 1
            shared = n <= len(path_steps) and row.steps[:n] == path.steps[:n]
            if shared and rng.random() < share:
                prefix = path_steps[:n]
            else:
                prefix = tuple(_perturb(t, rng) for t in row.steps[:n])
            steps = (*prefix, _perturb(row.steps[-1], rng))
        yield Solution(problem, steps, row.labels, row.answer, row.answer_correct)


def solutions(
    labels: int, *, seed: int = 0, share: float = DEFAULT_SHARE, source: Path | None = None
) -> Iterator[Solution]:
    """Rows until at least ``labels`` step labels (whole problem copies; see the module doc)."""
    src = require(source or shared_data() / PHASE1)
    by_problem: list[list[Solution]] = []
    with src.open(encoding="utf-8") as fh:
        for line in fh:
            rows = prm800k_solutions(json.loads(line))
            if rows:
                by_problem.append(rows)
    rng = random.Random(seed)
    written = 0
    copied = []
    for rows in by_problem:
        if split_of(rows[0].problem) == "test":
            yield from rows
            written += sum(len(r.labels) for r in rows)
        else:
            copied.append(rows)
    if not copied:
        raise ValueError(f"{src}: no train or validation problems to copy")
    order = list(range(len(copied)))
    copy = 0
    while written < labels:
        rng.shuffle(order)
        for i in order:
            rows = copied[i]
            original = rows[0].problem
            problem = original if copy == 0 else _tagged(original, split_of(original), rng)
            for row in _copy_rows(rows, problem, rng, share):
                written += len(row.labels)
                yield row
            if written >= labels:
                return
        copy += 1


def write(path: Path, labels: int, *, seed: int = 0, share: float = DEFAULT_SHARE) -> dict:
    """Write the file (atomically) and return its counts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    counts = {"rows": 0, "labels": 0, "problems": 0}
    problems: set[str] = set()
    with tmp.open("w", encoding="utf-8") as fh:
        for s in solutions(labels, seed=seed, share=share):
            row: dict = {
                "prompt": s.problem,
                "completions": list(s.steps),
                "labels": list(s.labels),
            }
            if s.answer_correct is not None:
                row["answer"], row["answer_correct"] = s.answer, s.answer_correct
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts["rows"] += 1
            counts["labels"] += len(s.labels)
            problems.add(s.problem)
    tmp.replace(path)
    counts["problems"] = len(problems)
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--share", type=float, default=DEFAULT_SHARE)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    counts = write(args.out, args.labels, seed=args.seed, share=args.share)
    print(f"wrote {args.out}: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
