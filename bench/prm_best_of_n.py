"""Best-of-N with the PRM on other models' solutions: PRM selection vs majority vote vs random.

- ``qwen25math_math_samples``: 100 MATH problems x 8 Qwen2.5-Math solutions (``score`` is
  correctness, ``pred`` the extracted answers);
- ``gsm8k_model_solutions``: 1,319 GSM8K problems x 4 GPT-3 solutions (``is_correct``; the
  answer is the ``A:`` line; the calculator annotations ``<<48/2=24>>`` are removed).

Solutions are split into steps on blank lines, else on newlines. The PRM is trained on the phase 1
labels (MATH problems) *minus* any problem whose text also appears in MATH-500, the Qwen set or
GSM8K (whitespace-normalised comparison; the overlap found is printed), with the standard recipe
(train split, epoch chosen on validation). Pass ``--model DIR`` to use a checkpoint trained
elsewhere (e.g. ``minilm`` on the file this script writes; the script says whether it matches).

    python -m bench.prm_best_of_n [--backbone bow] [--model DIR] [--limit-gsm8k N]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

from bench.prm_common import ROOT, require, shared_data
from imports.splitting import split_texts
from prm.data import read_dataset, sha256_file
from prm.metrics import AGGREGATIONS, aggregate, best_of_n

OUT = ROOT / "bench" / "out"
CALCULATOR = re.compile(r"<<[^<>]*>>")


def normalise(text: str) -> str:
    return " ".join(text.split())


def split_steps(text: str) -> list[str]:
    """Blank lines separate steps when there are any; else each line is a step."""
    return split_texts(text, "paragraphs")


def qwen_groups(path: Path) -> list[dict]:
    groups = []
    for line in path.open(encoding="utf-8"):
        r = json.loads(line)
        groups.append(
            {
                "problem": r["question"],
                "candidates": [
                    (split_steps(text), str(pred), bool(ok))
                    for text, pred, ok in zip(r["response"], r["pred"], r["score"], strict=True)
                ],
            }
        )
    return groups


def gsm8k_answer(text: str) -> str | None:
    match = re.search(r"A:\s*(.+?)\s*$", text.strip())
    return None if match is None else match.group(1).replace(",", "").rstrip(".").strip("$ ")


def gsm8k_groups(path: Path) -> list[dict]:
    groups = []
    for line in path.open(encoding="utf-8"):
        r = json.loads(line)
        candidates = []
        for key in ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification"):
            text = CALCULATOR.sub("", r[key]["solution"])
            candidates.append((split_steps(text), gsm8k_answer(text), bool(r[key]["is_correct"])))
        groups.append({"problem": r["question"], "candidates": candidates})
    return groups


def clean_training_file(data: Path, evaluation_problems: dict[str, set[str]]) -> tuple[Path, bool]:
    """The phase 1 `trl` rows whose problem is in no evaluation set, and whether that is every
    row of ``data`` (then a model trained on ``data`` itself is as clean); prints the overlap."""
    rows = [json.loads(line) for line in data.open(encoding="utf-8")]
    problems = {normalise(r["prompt"]) for r in rows}
    banned: set[str] = set()
    for name, texts in evaluation_problems.items():
        overlap = problems & texts
        banned |= overlap
        print(f"overlap of the {len(problems)} phase 1 problems with {name}: {len(overlap)}")
    out = data.with_name(data.stem + "_no_eval_overlap.jsonl")
    kept = [r for r in rows if normalise(r["prompt"]) not in banned]
    with out.open("w", encoding="utf-8") as fh:
        for r in kept:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"training file {out.name}: {len(kept)} of {len(rows)} rows ({len(banned)} problems out)")
    return out, not banned


def evaluate(scorer, name: str, groups: list[dict], seed: int = 0) -> None:
    solutions = [(g["problem"], c[0]) for g in groups for c in g["candidates"]]
    started = time.perf_counter()
    probs = scorer.score(solutions)
    seconds = time.perf_counter() - started
    steps = sum(len(s) for _, s in solutions)
    results, pos = {}, 0
    per_problem = []
    for g in groups:
        n = len(g["candidates"])
        per_problem.append(probs[pos : pos + n])
        pos += n
    for how in AGGREGATIONS:
        cands = [
            [(aggregate(p, how), c[1], c[2]) for p, c in zip(ps, g["candidates"], strict=True)]
            for ps, g in zip(per_problem, groups, strict=True)
        ]
        results[how] = best_of_n(cands)
    # a seeded random pick, next to its expectation
    rng = random.Random(seed)
    picked = sum(rng.choice(g["candidates"])[2] for g in groups) / len(groups)
    r = results["product"]
    print(
        f"{name}: {len(groups)} problems x {len(groups[0]['candidates'])} solutions, "
        f"{steps} steps scored in {seconds:.1f} s"
    )
    print(
        "  PRM best-of-N  "
        + ", ".join(f"{how} {results[how]['prm']:.4f}" for how in AGGREGATIONS)
        + f"\n  majority vote  {r['majority']:.4f}\n  random         {r['random']:.4f} expected"
        f" ({picked:.4f} one seeded draw)\n  oracle (any correct) {r['oracle']:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="bow")
    parser.add_argument("--model", type=Path, help="use this checkpoint instead of training one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-gsm8k", type=int, default=None)
    parser.add_argument(
        "--data",
        type=Path,
        default=OUT / "phase1_trl.jsonl",
        help="the phase 1 `trl` export to train on (minus the evaluation problems)",
    )
    args = parser.parse_args()
    data = shared_data()
    qwen = qwen_groups(require(data / "qwen25math_math_samples" / "math_cot_100.jsonl"))
    gsm8k = gsm8k_groups(require(data / "gsm8k_model_solutions" / "example_model_solutions.jsonl"))
    if args.limit_gsm8k:
        gsm8k = gsm8k[: args.limit_gsm8k]
    math500 = {
        normalise(json.loads(line)["problem"])
        for line in require(data / "math500" / "test.jsonl").open(encoding="utf-8")
    }
    phase1 = args.data
    if not phase1.exists():
        raise SystemExit(f"missing {phase1}: run python -m bench.prm_make_trl first")
    clean, same_rows = clean_training_file(
        phase1,
        {
            "MATH-500": math500,
            "the Qwen MATH problems": {normalise(g["problem"]) for g in qwen},
            "GSM8K test": {normalise(g["problem"]) for g in gsm8k},
        },
    )

    import prm

    if args.model:
        scorer = prm.load(args.model)
        trained_on = scorer.config.get("data", {}).get("sha256")
        clean_files = {sha256_file(clean)} | ({sha256_file(phase1)} if same_rows else set())
        print(
            f"model {args.model}: trained on "
            + ("an overlap-free file" if trained_on in clean_files else "ANOTHER file")
        )
    else:
        out = clean.parent / f"prm_bon_{args.backbone}"
        started = time.perf_counter()
        metrics = prm.train(
            read_dataset(clean), out, backbone=args.backbone, seed=args.seed, progress=False
        )
        print(
            f"trained {args.backbone} on {metrics['train_problems']} problems in "
            f"{time.perf_counter() - started:.0f} s (validation AUROC "
            f"{metrics['validation_auroc']:.4f}) -> {out}"
        )
        scorer = prm.load(out)
    evaluate(scorer, "Qwen2.5-Math on MATH", qwen, seed=args.seed)
    evaluate(scorer, "GPT-3 on GSM8K", gsm8k, seed=args.seed)


if __name__ == "__main__":
    main()
