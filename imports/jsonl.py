"""Plain JSONL of problems with model solutions, one problem per line, in three shapes.

The shape is recognised per line:

- generic: ``{"problem", "ground_truth_answer", "solutions": [...]}`` (optional
  ``ground_truth_solution``, ``subject``, ``level``, ``unique_id``); without ``solutions`` (or
  with an empty list) the line brings its problem only, for generation to sample solutions of
  later. A solution is
  ``{"steps": [str, ...]}`` or ``{"text": str}`` (cut by ``imports.splitting``, the import's
  ``split`` option: ``auto`` by default), with
  optional ``answer`` (else taken from the text), ``generator``, ``id``, ``verifier_score``, and
  ``gold_ratings`` (-1/0/1/null per step) for a quality-control or screening solution, whose kind
  comes from its ``kind`` key (``qc``/``screening``) or the import's ``as_gold`` option;
- GSM8K model solutions (``question``, ``ground_truth`` and named outputs such as
  ``6b_finetuning: {"is_correct", "solution"}``): one solution per named output, its name as the
  generator, steps on newlines (calculator notes shown without their ``<<...>>``), the answer
  after ``A:``;
- Qwen2.5-Math samples (``question``, ``gt``, ``response: [...]``): one solution per response,
  split by ``imports.splitting``, the answer in its last ``\\boxed{}``, ``pred_score`` as
  verifier score.

The sources' own correctness flags (``is_correct``, ``score``) are not imported: answers are
graded against the ground truth like any other (and tests measure the agreement).
"""

from __future__ import annotations

from labeling.grading import extract_answer
from labeling.models import Solution

from .processbench import GOLD_KINDS
from .records import (
    FieldError,
    ProblemIn,
    SolutionIn,
    as_dict,
    as_float,
    as_list,
    as_rating,
    as_steps,
    as_str,
    level_text,
    need,
    shown_steps,
    split_text,
)

QWEN_GENERATOR = "qwen2.5-math-instruct"


def parse_jsonl(record: dict, options: dict) -> list[SolutionIn]:
    if "solutions" in record or ("problem" in record and "question" not in record):
        return _generic(record, options)
    if "question" in record and isinstance(record.get("response"), list):
        return _qwen(record, options)
    if "question" in record and "ground_truth" in record:
        return _gsm8k(record, options)
    raise FieldError(
        "solutions",
        "missing field (expected {problem, ground_truth_answer, solutions}, a problem alone "
        "{problem, ground_truth_answer}, or the GSM8K model-solutions or Qwen2.5-Math samples "
        "shape)",
    )


def _generic(record: dict, options: dict) -> list[SolutionIn]:
    problem = ProblemIn(
        text=as_str(need(record, "problem", "problem"), "problem", nonempty=True),
        ground_truth_answer=as_str(
            record.get("ground_truth_answer"), "ground_truth_answer", null=True
        )
        or "",
        ground_truth_solution=as_str(
            record.get("ground_truth_solution"), "ground_truth_solution", null=True
        ),
        subject=as_str(record.get("subject") or "", "subject"),
        level=level_text(record.get("level"), "level"),
        unique_id=as_str(record.get("unique_id") or "", "unique_id"),
    )
    if record.get("solutions") in (None, []):  # the problem alone: no solution yet
        return [SolutionIn(problem=problem, steps=[], problem_only=True)]
    solutions = as_list(record["solutions"], "solutions", nonempty=True)
    out = []
    for i, value in enumerate(solutions):
        path = f"solutions[{i}]"
        s = as_dict(value, path)
        raw = None
        if "steps" in s:
            steps, raw = shown_steps(as_steps(s["steps"], f"{path}.steps"))
        elif "text" in s:
            text = as_str(s["text"], f"{path}.text")
            steps, raw = split_text(text, options.get("split"), f"{path}.text")
        else:
            raise FieldError(f"{path}.steps", "missing field (give steps or text)")
        answer = as_str(s.get("answer"), f"{path}.answer", null=True)
        if answer is None:
            answer = extract_answer("\n\n".join(steps))
        gold = s.get("gold_ratings")
        # --as-gold gives a kind to solutions that carry gold ratings but say no kind.
        kind = (
            s.get("kind")
            or (options.get("as_gold") if gold is not None else None)
            or Solution.Kind.REGULAR
        )
        if kind not in Solution.Kind.values:
            raise FieldError(f"{path}.kind", f"must be regular, qc or screening, not {kind!r}")
        if gold is not None:
            gold = as_list(gold, f"{path}.gold_ratings")
            if len(gold) != len(steps):
                raise FieldError(
                    f"{path}.gold_ratings", f"{len(gold)} ratings for {len(steps)} steps"
                )
            gold = [as_rating(r, f"{path}.gold_ratings[{j}]") for j, r in enumerate(gold)]
            if kind not in GOLD_KINDS:
                raise FieldError(
                    f"{path}.gold_ratings",
                    'only qc and screening solutions have gold ratings: add "kind" or '
                    "import with --as-gold qc|screening",
                )
        elif kind in GOLD_KINDS:
            raise FieldError(f"{path}.gold_ratings", f"missing field (a {kind} solution needs it)")
        out.append(
            SolutionIn(
                problem=problem,
                steps=steps,
                answer=answer,
                generator=as_str(
                    s.get("generator") or options.get("generator") or "", f"{path}.generator"
                ),
                kind=kind,
                verifier_score=as_float(s.get("verifier_score"), f"{path}.verifier_score"),
                source_ref=str(as_str(s.get("id") or "", f"{path}.id")),
                id_field=f"{path}.id" if s.get("id") else "",
                gold=gold,
                raw_steps=raw,
            )
        )
    return out


def _gsm8k(record: dict, options: dict) -> list[SolutionIn]:
    reference = as_str(record["ground_truth"], "ground_truth", nonempty=True)
    problem = ProblemIn(
        text=as_str(record["question"], "question", nonempty=True),
        ground_truth_answer=extract_answer(reference) or "",
        ground_truth_solution=reference,
    )
    out = []
    for name, value in record.items():
        if not isinstance(value, dict) or "solution" not in value:
            continue
        text = as_str(value["solution"], f"{name}.solution", nonempty=True)
        steps, raw = split_text(text, options.get("split"), f"{name}.solution")
        out.append(
            SolutionIn(
                problem=problem,
                steps=steps,
                answer=extract_answer(text),
                generator=name,
                source_ref=name,
                raw_steps=raw,
            )
        )
    if not out:
        raise FieldError("", 'no model solutions (values like {"is_correct", "solution"})')
    return out


def _qwen(record: dict, options: dict) -> list[SolutionIn]:
    truth = record.get("gt", record.get("answer"))
    problem = ProblemIn(
        text=as_str(record["question"], "question", nonempty=True),
        ground_truth_answer=as_str(truth, "gt", null=True) or "",
        ground_truth_solution=as_str(
            record.get("solution", record.get("gt_cot")), "solution", null=True
        ),
        subject=as_str(record.get("type") or "", "type"),
        level=level_text(record.get("level"), "level"),
    )
    responses = as_list(record["response"], "response", nonempty=True)
    scores = record.get("pred_score") or []
    idx = record.get("idx", "")
    out = []
    for i, text in enumerate(responses):
        text = as_str(text, f"response[{i}]", nonempty=True)
        steps, raw = split_text(text, options.get("split"), f"response[{i}]")
        score = scores[i] if i < len(scores) else None
        if isinstance(score, list):
            score = score[0] if score else None
        out.append(
            SolutionIn(
                problem=problem,
                steps=steps,
                raw_steps=raw,
                answer=extract_answer(text),
                generator=options.get("generator") or QWEN_GENERATOR,
                verifier_score=as_float(score, f"pred_score[{i}]"),
                source_ref=f"{idx}/{i}",
            )
        )
    return out
