"""A seeded suite of corrupted solutions for the PRM, built from correct ones in ../shared/data.

Sources: MATH reference solutions (``math_train``, split into sentences outside the maths),
GSM8K test reference solutions (one step a line, calculator annotations removed, ``#### N`` as
PRM800K's ``# Answer``), Qwen2.5-Math samples graded correct (steps on blank lines) and PRM800K
phase 1 paths whose every chosen step was rated +1, from problems outside the PRM's training
split. Each corruption changes
one step in a way that needs more than a changed number to notice, and the corrupted step and
every step after it count as wrong:

- ``carried_value``: a computed result is changed, and the changed value is used consistently in
  every later step (so only the step that computed it is wrong on its own);
- ``contradiction``: a later step uses a different value for a result an earlier step found;
- ``operator_swap``: a ``+`` becomes ``-`` (or back) inside an algebraic expression of an equation
  that has a variable, not in its first part;
- ``dropped_condition``: a variable the problem or an earlier step requires to be positive takes
  the negative value (the other root), carried forward;
- ``final_answer``: the final answer is not the value the solution computed;
- ``unit_percent``: a percentage used without dividing by 100, or a wrong unit factor (100
  minutes in an hour), with the result recomputed and carried forward.

The suite is generated, never trained on: it lives here in ``bench/``.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prm.data import split_of
from prm.latex import math_spans, try_parse

KINDS = (
    "carried_value",
    "contradiction",
    "operator_swap",
    "dropped_condition",
    "final_answer",
    "unit_percent",
)


@dataclass(frozen=True)
class Case:
    kind: str
    source: str
    problem: str
    original: tuple[str, ...]
    corrupted: tuple[str, ...]
    index: int  # the first wrong step


# -- sources -------------------------------------------------------------------------------------

_MATH_SPAN = re.compile(r"\$\$.+?\$\$|\$.+?\$|\\\[.+?\\\]", re.S)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\\$])")


def sentences(solution: str) -> list[str]:
    """A MATH reference solution as steps: its sentences, never cutting inside the maths."""
    spans: list[str] = []

    def hide(m: re.Match) -> str:
        spans.append(m.group())
        return f"\x00{len(spans) - 1}\x00"

    hidden = _MATH_SPAN.sub(hide, solution)
    parts = [p.strip() for p in _SENTENCE.split(hidden) if p.strip()]
    return [re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], p) for p in parts]


def solutions(data: Path, *, limit_math: int = 12000) -> Iterator[tuple[str, str, list[str]]]:
    """(source, problem, steps) of correct solutions with 2 to 14 steps."""
    with (data / "math_train" / "train.jsonl").open() as fh:
        for i, line in enumerate(fh):
            if i >= limit_math:
                break
            row = json.loads(line)
            steps = sentences(row["solution"])
            if 2 <= len(steps) <= 14:
                yield "math_train", row["problem"], steps
    with (data / "qwen25math_math_samples" / "math_cot_100.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            responses, scores = (
                ast.literal_eval(row[k]) if isinstance(row[k], str) else row[k]
                for k in ("code", "score")
            )
            for response, correct in zip(responses, scores, strict=False):
                steps = [s.strip() for s in response.split("\n\n") if s.strip()]
                if correct and 2 <= len(steps) <= 14:
                    yield "qwen", row["question"], steps
    with (data / "gsm8k" / "test.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            text = re.sub(r"<<[^>]*>>", "", row["answer"]).replace("$", "\\$")
            body, _, answer = text.partition("####")
            steps = [s.strip() for s in body.split("\n") if s.strip()]
            steps.append(f"# Answer\n\n{answer.strip()}")
            if 2 <= len(steps) <= 14:
                yield "gsm8k", row["question"], steps
    path = data / "prm800k_phase1_human_labels" / "phase1_train.trajectories.jsonl"
    with path.open() as fh:
        for line in fh:
            row = json.loads(line)
            problem, chosen = row["question"]["problem"], []
            for step in row["label"]["steps"]:
                pick = step["chosen_completion"]
                if pick is None or step["completions"][pick]["rating"] != 1:
                    chosen = []
                    break
                chosen.append(step["completions"][pick]["text"])
            if split_of(problem) != "train" and 2 <= len(chosen) <= 30:
                yield "prm800k", problem, chosen


# -- corruptions ---------------------------------------------------------------------------------

_RESULT = re.compile(r"=\s*(-?\d+(?:\.\d+)?)(?=\s*(?:\$|\\\]|\\\)|[.,]?\s*$|\s*\\text|\s+[a-z]))")


def _literal(value: str) -> re.Pattern:
    return re.compile(r"(?<![\d.\w])" + re.escape(value) + r"(?![\d\w]|\.\d)")


def _changed(value: str, rng: random.Random) -> str:
    if "." in value:
        number = float(value)
        decimals = len(value.split(".")[1])
        step = rng.choice([1, 2, -1]) * 10**-decimals * rng.choice([1, 3, 7])
        return f"{number + step:.{decimals}f}"
    number = int(value)
    new = (
        number + rng.choice([1, 2, 3, -1, -2])
        if abs(number) < 20
        else number + rng.choice([1, -1, 10, -10, 2])
    )
    return str(new if new != number else number + 1)


def _results(step: str) -> list[re.Match]:
    return list(_RESULT.finditer(step))


def carried_value(problem, steps, rng):
    candidates = [(k, m) for k, s in enumerate(steps[:-1]) for m in _results(s)]
    if not candidates:
        return None
    k, m = rng.choice(candidates)
    old = m.group(1)
    new = _changed(old, rng)
    out = list(steps)
    out[k] = steps[k][: m.start(1)] + new + steps[k][m.end(1) :]
    for j in range(k + 1, len(steps)):
        out[j] = _literal(old).sub(new, steps[j])
    return out, k


def contradiction(problem, steps, rng):
    candidates = []
    for k, s in enumerate(steps[:-1]):
        for m in _results(s):
            for j in range(k + 1, len(steps)):
                if any(_literal(m.group(1)).search(span) for span in math_spans(steps[j])):
                    candidates.append((j, m.group(1)))
                    break
    if not candidates:
        return None
    j, old = rng.choice(candidates)
    new = _changed(old, rng)
    out = list(steps)
    spans = math_spans(steps[j])
    span = next(sp for sp in spans if _literal(old).search(sp))
    out[j] = steps[j].replace(span, _literal(old).sub(new, span, count=1), 1)
    return out, j


_BINARY = re.compile(r"(?<=[\w)}])\s*([+-])\s*(?=[\w(\\{])")


def operator_swap(problem, steps, rng):
    candidates = []
    for k, s in enumerate(steps):
        for span in math_spans(s):
            if span.count("=") != 1 and span.count("=") != 2:
                continue
            parts = span.split("=")
            for p_index in range(1, len(parts)):
                part = parts[p_index]
                if not re.search(r"[a-z]", re.sub(r"\\[a-zA-Z]+", "", part)):
                    continue
                for m in _BINARY.finditer(part):
                    candidates.append((k, span, p_index, m.start(1)))
    if not candidates:
        return None
    k, span, p_index, at = rng.choice(candidates)
    parts = span.split("=")
    part = parts[p_index]
    parts[p_index] = part[:at] + ("-" if part[at] == "+" else "+") + part[at + 1 :]
    new_span = "=".join(parts)
    a, b = try_parse(span.split("=")[p_index - 1]), try_parse(parts[p_index])
    if a is not None and b is not None and a.symbols == b.symbols == set():
        return None  # no algebra after all
    out = list(steps)
    out[k] = steps[k].replace(span, new_span, 1)
    return out, k


def dropped_condition(problem, steps, rng):
    """A variable required to be positive (or nonnegative) takes the negative value instead."""
    candidates = []
    for k, s in enumerate(steps):
        if re.search(r"\bor\b|\\pm|\\mp", s):
            continue
        context = problem + " " + " ".join(steps[:k])
        if re.search(r"\b(?:if|when|suppose|assume)\b", s, re.I):
            continue  # a hypothesis states no value
        for m in re.finditer(
            r"\$\s*([a-z])\s*=\s*(?:\\boxed\{)?(\d+(?:\.\d+)?)\}?\s*[.,]?\s*\$", s
        ):
            v, value = m.group(1), m.group(2)
            condition = re.search(
                rf"(?:positive|nonnegative|non-negative)[^.]{{0,30}}\${v}\$|"
                rf"\${v}\$[^.]{{0,30}}(?:positive|nonnegative)|{v}\s*(?:>|\\geq?|\\gt)\s*0",
                context,
            )
            if condition and float(value) > 0:
                candidates.append((k, v, value))
    if not candidates:
        return None
    k, v, value = rng.choice(candidates)
    pattern = re.compile(rf"(?<![\\\w])({v}\s*=\s*){re.escape(value)}(?![\d.])")
    out = list(steps)
    for j in range(k, len(steps)):
        out[j] = pattern.sub(lambda m: m.group(1) + "-" + value, out[j])
        out[j] = out[j].replace("\\boxed{" + value + "}", "\\boxed{-" + value + "}")
    return out, k


_BOXED = re.compile(r"\\boxed\{(-?\d+(?:\.\d+)?)\}|#\s*Answer\s*\n+\s*(-?\d+(?:\.\d+)?)\s*$")


def final_answer(problem, steps, rng):
    for k in range(len(steps) - 1, -1, -1):
        m = _BOXED.search(steps[k])
        if m:
            group = 1 if m.group(1) is not None else 2
            new = _changed(m.group(group), rng)
            out = list(steps)
            out[k] = steps[k][: m.start(group)] + new + steps[k][m.end(group) :]
            return out, k
    return None


_PERCENT_OF = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:\\?%|\s*percent)\$?\s+of\s+[^.;]{0,30}?(?<![\d.])(\d+(?:\.\d+)?)"
)
_UNIT_FACTORS = {
    ("second", "minute"): "60",
    ("minute", "hour"): "60",
    ("hour", "day"): "24",
    ("day", "week"): "7",
    ("inch", "foot"): "12",
    ("feet", "yard"): "3",
    ("centimeter", "meter"): "100",
    ("meter", "kilometer"): "1000",
    ("cent", "dollar"): "100",
}
_WRONG = {"60": "100", "24": "12", "7": "10", "12": "10", "3": "12", "100": "10", "1000": "100"}


def unit_percent(problem, steps, rng):
    """A percentage taken without dividing by 100, or a wrong unit factor, carried forward."""
    candidates = []
    for k, s in enumerate(steps):
        for m in _PERCENT_OF.finditer(s):
            p, w = float(m.group(1)), float(m.group(2))
            for r in re.finditer(r"(?<![\d.\w])(\d+(?:\.\d+)?)(?![\d\w]|\.\d)", s[m.end() :]):
                if r.group(1) != m.group(2) and abs(float(r.group(1)) - p * w / 100) < 1e-9:
                    at = m.end() + r.start(1)
                    product = p * w
                    new = str(int(product)) if product == int(product) else f"{product:g}"
                    candidates.append((k, at, r.group(1), new))
                    break
        for (small, big), factor in _UNIT_FACTORS.items():
            pattern = (
                rf"(?<![\d.])({factor})\$?\s*(?:\\text\{{\s*)?{small}s?\b[^.]{{0,15}}\b"
                rf"(?:in|per)\s+(?:a|an|one|1|each|every)\s+{big}"
            )
            for m in re.finditer(pattern, s):
                candidates.append((k, m.start(1), factor, _WRONG[factor]))
    if not candidates:
        return None
    k, at, old, new = rng.choice(candidates)
    out = list(steps)
    out[k] = steps[k][:at] + new + steps[k][at + len(old) :]
    for j in range(k + 1, len(steps)):
        out[j] = _literal(old).sub(new, steps[j])
    return out, k


CORRUPT = {
    "carried_value": carried_value,
    "contradiction": contradiction,
    "operator_swap": operator_swap,
    "dropped_condition": dropped_condition,
    "final_answer": final_answer,
    "unit_percent": unit_percent,
}


def build_suite(data: Path, *, per_kind: int = 60, seed: int = 0) -> list[Case]:
    """Up to ``per_kind`` cases of each kind from a seeded shuffle of the correct solutions: at
    most a third from each source while the others have candidates, one per problem."""
    rng = random.Random(seed)
    pool = list(solutions(data))
    rng.shuffle(pool)
    sources = ("math_train", "gsm8k", "qwen", "prm800k")
    cases: list[Case] = []
    for kind in KINDS:
        made_by: dict[str, list[Case]] = {source: [] for source in sources}
        seen: set[str] = set()
        for source, problem, steps in pool:
            if len(made_by[source]) >= per_kind or problem in seen:
                continue
            made = CORRUPT[kind](problem, steps, random.Random(f"{seed}:{kind}:{problem}"))
            if made is None or made[0][made[1]] == steps[made[1]]:
                continue
            seen.add(problem)
            corrupted, index = made
            made_by[source].append(
                Case(kind, source, problem, tuple(steps), tuple(corrupted), index)
            )
        quota = -(-per_kind // len(sources))
        picked = [c for source in sources for c in made_by[source][:quota]]
        rest = [c for source in sources for c in made_by[source][quota:]]
        cases += picked + rest[: max(0, per_kind - len(picked))]
    return cases
