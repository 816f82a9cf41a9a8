"""How solutions given as text are cut into steps, before (``paragraphs``) and after (``auto``).

Reads ``../shared/data`` (``STEPWISE_SHARED_DATA`` overrides): Qwen2.5-Math samples (800 solutions),
GSM8K model solutions (4 per problem), and PRM800K's own steps as the reference: phase 1 human
trajectories (the chosen step at each point) and phase 2 pre-generated steps, each joined with a
blank line between steps (PRM800K's generator wrote one step per paragraph). Prints a Markdown
table: steps per solution and characters per step (median, p95, max), and for PRM800K the share
of solutions whose published steps each splitter reproduces exactly from the joined text.

    .venv/bin/python bench/splitter.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

import django  # noqa: E402

django.setup()

from imports.splitting import split_texts  # noqa: E402


def split_steps(text: str) -> list[str]:
    """The splitter imports had before ``auto``: its ``paragraphs`` mode."""
    return split_texts(text, "paragraphs")


DATA = Path(os.environ.get("STEPWISE_SHARED_DATA", ROOT.parent / "shared" / "data"))
FILES = {
    "qwen": DATA / "qwen25math_math_samples" / "math_cot_100.jsonl",
    "gsm8k": DATA / "gsm8k_model_solutions" / "example_model_solutions.jsonl",
    "prm800k-1": DATA / "prm800k_phase1_human_labels" / "phase1_train.trajectories.jsonl",
    "prm800k-2": DATA / "prm800k_raw_samples" / "phase2_train_examples.jsonl",
}


def _records(path: Path) -> Iterator[dict]:
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def qwen_texts() -> list[str]:
    return [t for r in _records(FILES["qwen"]) for t in r["response"]]


def gsm8k_texts() -> list[str]:
    return [
        v["solution"]
        for r in _records(FILES["gsm8k"])
        for v in r.values()
        if isinstance(v, dict) and "solution" in v
    ]


def prm800k_steps() -> list[list[str]]:
    """The published steps of each PRM800K solution (phase 1 chosen path, phase 2 pre-generated)."""
    out = []
    for r in _records(FILES["prm800k-1"]):
        steps = []
        for s in r["label"]["steps"]:
            if s.get("chosen_completion") is not None:
                steps.append(s["completions"][s["chosen_completion"]]["text"])
            elif s.get("human_completion"):
                human = s["human_completion"]
                steps.append(human["text"] if isinstance(human, dict) else human)
        if steps:
            out.append(steps)
    seen = set()
    for r in _records(FILES["prm800k-2"]):
        steps = r["question"].get("pre_generated_steps")
        if steps and json.dumps(steps) not in seen:
            seen.add(json.dumps(steps))
            out.append(steps)
    return out


def _q(values: list[float], share: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(share * len(values)))]


def _row(name: str, how: str, texts: list[str], splitter: Callable[[str], list[str]]) -> str:
    cut = [splitter(t) for t in texts]
    counts = [len(c) for c in cut]
    sizes = [len(s) for c in cut for s in c]
    return (
        f"| {name} | {how} | {len(texts)} | {statistics.median(counts):g} | {_q(counts, 0.95):g} "
        f"| {max(counts)} | {statistics.median(sizes):g} | {_q(sizes, 0.95):g} | {max(sizes)} |"
    )


def main() -> int:
    missing = [str(p) for p in FILES.values() if not p.is_file()]
    if missing:
        print(
            f"bench/splitter.py: the shared data is missing ({DATA}); expected:\n  "
            + "\n  ".join(missing)
            + "\nSet STEPWISE_SHARED_DATA to the folder that holds shared/data's sub-folders.",
            file=sys.stderr,
        )
        return 2
    prm = prm800k_steps()
    joined = ["\n\n".join(s.strip() for s in steps) for steps in prm]
    # PRM800K's generator wrote "newline delimited" steps (the paper, appendix): one step per
    # line, a blank line only inside a step (its "# Answer" section, display math).
    newline = ["\n".join(s.strip() for s in steps) for steps in prm]
    sets = [
        ("Qwen2.5-Math samples", qwen_texts()),
        ("GSM8K model solutions", gsm8k_texts()),
        ("PRM800K (published steps, joined by blank lines)", joined),
        ("PRM800K (published steps, joined by single newlines)", newline),
    ]
    print(
        "| data | splitter | solutions | steps/solution median | p95 | max "
        "| chars/step median | p95 | max |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, texts in sets:
        print(_row(name, "before (`paragraphs`)", texts, split_steps))
        print(_row(name, "after (`auto`)", texts, split_texts))
    reference = ["published", "", len(prm)]
    counts = [len(s) for s in prm]
    sizes = [len(x.strip()) for s in prm for x in s]
    print(
        f"| PRM800K | {reference[0]} | {reference[2]} | {statistics.median(counts):g} "
        f"| {_q(counts, 0.95):g} | {max(counts)} | {statistics.median(sizes):g} "
        f"| {_q(sizes, 0.95):g} | {max(sizes)} |"
    )
    print()
    for name, texts in (("blank lines", joined), ("single newlines", newline)):
        for how, splitter in (
            ("before (`paragraphs`)", split_steps),
            ("after (`auto`)", split_texts),
        ):
            same = sum(
                splitter(text) == [s.strip() for s in steps]
                for text, steps in zip(texts, prm, strict=True)
            )
            print(
                f"PRM800K solutions whose published steps are reproduced exactly, joined by "
                f"{name}, {how}: {same}/{len(prm)} = {same / len(prm):.1%}"
            )
    print(f"\nload average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
