"""The TF-IDF + logistic regression baseline on the same held-out split as ``prm eval``.

Step text alone, token pattern ``\\b\\w+\\b|[^\\w\\s]`` (keeps ``x``, ``2``, ``=``, ``$``),
unigrams, sublinear tf; C chosen on the validation split; trained on the train split's unique
steps. With ``--model DIR ...`` it also evaluates PRM checkpoints on the same test steps and prints
all of them side by side (AUROC with its 95% bootstrap interval over problems, accuracy,
first-error F1).

    python -m bench.prm_baseline [--data bench/out/phase1_trl.jsonl] [--model DIR ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from bench.prm_common import ROOT
from prm.data import read_dataset, unique_steps
from prm.metrics import (
    auroc,
    best_first_error_threshold,
    bootstrap_auroc,
    first_error_scores,
)

TOKEN_PATTERN = r"\b\w+\b|[^\w\s]"
GRID = (0.03, 0.1, 0.3, 1.0, 3.0)


def _steps(rows):
    seen, out = set(), []
    for s in rows:
        for i, step in enumerate(s.steps):
            key = (s.problem, s.steps[: i + 1])
            if key not in seen:
                seen.add(key)
                out.append((step, s.labels[i]))
    return out


def baseline(dataset) -> dict:
    train = _steps(dataset.split("train"))
    vec = TfidfVectorizer(token_pattern=TOKEN_PATTERN, sublinear_tf=True)
    x_train = vec.fit_transform([t for t, _ in train])
    y_train = np.array([y for _, y in train])
    val_rows = dataset.split("validation")
    best = None
    for c in GRID:
        model = LogisticRegression(C=c, max_iter=3000).fit(x_train, y_train)
        probs = row_probs(model, vec, val_rows)
        p, y, _ = unique_steps(val_rows, probs)
        score = auroc(y, p)
        if best is None or score > best[0]:
            best = (score, c, model)
    _, c, model = best
    threshold = best_first_error_threshold(
        row_probs(model, vec, val_rows), [s.first_error for s in val_rows]
    )
    return {"C": c, "model": model, "vectorizer": vec, "threshold": threshold}


def row_probs(model, vec, rows):
    """The baseline's step probabilities, one array per solution of ``rows`` (one prediction
    over all their steps at once); ``bench.prm_eval`` scores the held-out rows with it too."""
    flat = [step for s in rows for step in s.steps]
    probs = model.predict_proba(vec.transform(flat))[:, 1] if flat else np.zeros(0)
    out, pos = [], 0
    for s in rows:
        out.append(probs[pos : pos + len(s.steps)])
        pos += len(s.steps)
    return out


def report(name: str, rows, probs, threshold: float, extra: str = "") -> str:
    p, y, groups = unique_steps(rows, probs)
    low, high = bootstrap_auroc(y, p, groups, n=1000, seed=0)
    fe = first_error_scores(probs, [s.first_error for s in rows], threshold)
    return (
        f"{name:<28} AUROC {auroc(y, p):.4f} (95% CI {low:.4f}-{high:.4f})  "
        f"accuracy {((p >= 0.5) == y).mean():.4f}  first-error F1 {fe['f1']:.4f}{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / "out" / "phase1_trl.jsonl")
    parser.add_argument("--model", type=Path, action="append", default=[])
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"missing {args.data}: run python -m bench.prm_make_trl first")
    dataset = read_dataset(args.data)
    test = dataset.split("test")
    _, y, groups = unique_steps(test, [[0.0] * len(s.steps) for s in test])
    print(
        f"test split: {len(set(groups))} problems, {len(test)} rows, {len(y)} unique steps "
        f"({y.mean():.1%} non-negative)"
    )
    started = time.perf_counter()
    base = baseline(dataset)
    seconds = time.perf_counter() - started
    probs = row_probs(base["model"], base["vectorizer"], test)
    print(
        report(
            "TF-IDF + LR (step alone)",
            test,
            probs,
            base["threshold"],
            f"  (C={base['C']} by validation, {seconds:.1f} s)",
        )
    )
    if args.model:
        import prm

        for directory in args.model:
            scorer = prm.load(directory)
            val = dataset.split("validation")
            threshold = best_first_error_threshold(scorer.score(val), [s.first_error for s in val])
            started = time.perf_counter()
            probs = scorer.score(test)
            seconds = time.perf_counter() - started
            name = f"{scorer.config['backbone']['name']} {Path(directory).name}"
            print(report(name, test, probs, threshold, f"  (scored in {seconds:.1f} s)"))


if __name__ == "__main__":
    main()
