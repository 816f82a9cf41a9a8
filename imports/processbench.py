"""ProcessBench records: ``id``, ``generator``, ``problem``, ``steps``, ``final_answer_correct``,
``label`` (index of the first wrong step, -1 when every step is correct).

ProcessBench has no ground-truth answer, so ``final_answer_correct`` is stored as
``answer_is_correct`` as given (grading leaves solutions without a truth alone). Its ``label`` says
what was right only up to the first error, which fits the gold ratings of quality-control and
screening solutions: with ``as_gold="qc"`` or ``"screening"`` the steps before ``label`` get gold
+1, the step at ``label`` gold -1, later steps none; otherwise the solutions are plain (regular)
ones and ``label`` is not kept.
"""

from __future__ import annotations

from labeling.grading import extract_answer
from labeling.models import Solution

from .records import (
    FieldError,
    ProblemIn,
    SolutionIn,
    as_bool,
    as_int,
    as_steps,
    as_str,
    need,
    shown_steps,
)

GOLD_KINDS = (Solution.Kind.QUALITY_CONTROL, Solution.Kind.SCREENING)


def gold_kind(options: dict) -> str | None:
    kind = options.get("as_gold")
    if kind not in (None, *GOLD_KINDS):
        raise FieldError("", f"as_gold must be qc or screening, not {kind!r}")
    return kind


def parse_processbench(record: dict, options: dict) -> list[SolutionIn]:
    steps, raw = shown_steps(as_steps(need(record, "steps", "steps"), "steps"))
    label = as_int(need(record, "label", "label"), "label", minimum=-1)
    if label >= len(steps):
        raise FieldError("label", f"{label} is past the last step (there are {len(steps)})")
    kind = gold_kind(options)
    gold = None
    if kind is not None:
        gold = (
            [1] * len(steps)
            if label == -1
            else [1] * label + [-1] + [None] * (len(steps) - label - 1)
        )
    return [
        SolutionIn(
            problem=ProblemIn(
                text=as_str(need(record, "problem", "problem"), "problem", nonempty=True)
            ),
            steps=steps,
            raw_steps=raw,
            answer=extract_answer("\n\n".join(steps)),
            generator=as_str(
                record.get("generator") or options.get("generator") or "", "generator"
            ),
            kind=kind or Solution.Kind.REGULAR,
            source_ref=as_str(record.get("id") or "", "id"),
            id_field="id" if record.get("id") else "",
            gold=gold,
            answer_is_correct=as_bool(
                need(record, "final_answer_correct", "final_answer_correct"),
                "final_answer_correct",
                null=True,
            ),
        )
    ]
