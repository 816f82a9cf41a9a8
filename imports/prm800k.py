"""PRM800K label lines (``prm800k``) and the phase 1 trajectories file (``prm800k-trajectories``).

The mapping is the one in the docstring of ``labeling/models.py``. What decides the solution's
steps:

- phase 2 (``question.pre_generated_steps`` present): the pre-generated steps; ``label.steps[i]``
  rates step ``i`` and its ``completions[0]`` must be that very step (checked);
- phase 1 (no pre-generated steps): the path the labeler built, at each position the chosen
  completion, else the human completion, else the first candidate.

Everything else on the line is kept so that an exporter can rebuild it field for field. The
record's shape follows the phase: a phase 1 question holds ``problem`` and ``ground_truth_answer``
only; a phase 2 question holds those, ``ground_truth_solution`` and the three ``pre_generated_*``
keys (missing ones are read as null).
"""

from __future__ import annotations

from typing import Any

from labeling.grading import extract_answer
from labeling.models import FinishReason, Solution
from labeling.prm800k_steps import completions_split, own_completion

from .records import (
    FieldError,
    LabelIn,
    ProblemIn,
    SolutionIn,
    StepLabelIn,
    as_bool,
    as_dict,
    as_finish_reason,
    as_float,
    as_int,
    as_labeler,
    as_list,
    as_rating,
    as_steps,
    as_str,
    as_timestamp,
    level_text,
    need,
)

TRAJECTORIES_LABELER = "prm800k-phase1"


def parse_prm800k(record: dict, options: dict) -> list[SolutionIn]:
    """One raw PRM800K label line (phase 1 or phase 2, ``label`` may be null)."""
    q = as_dict(need(record, "question", "question"), "question")
    problem = ProblemIn(
        text=as_str(need(q, "problem", "question.problem"), "question.problem", nonempty=True),
        ground_truth_answer=_truth(q),
        ground_truth_solution=as_str(
            q.get("ground_truth_solution"), "question.ground_truth_solution", null=True
        ),
    )
    qc = as_bool(record.get("is_quality_control_question", False), "is_quality_control_question")
    screening = as_bool(
        record.get("is_initial_screening_question", False), "is_initial_screening_question"
    )
    if qc and screening:
        raise FieldError(
            "is_initial_screening_question",
            "a solution cannot be both a quality-control and a screening question",
        )
    kind = Solution.Kind.REGULAR
    if qc:
        kind = Solution.Kind.QUALITY_CONTROL
    elif screening:
        kind = Solution.Kind.SCREENING
    generation = as_int(record.get("generation"), "generation", null=True)
    label = need(record, "label", "label")
    pre = q.get("pre_generated_steps")
    solution = SolutionIn(problem=problem, steps=[], generation=generation, kind=kind)
    if pre is not None:
        solution.steps = as_steps(pre, "question.pre_generated_steps")
        solution.answer = as_str(
            q.get("pre_generated_answer"), "question.pre_generated_answer", null=True
        )
        solution.verifier_score = as_float(
            q.get("pre_generated_verifier_score"), "question.pre_generated_verifier_score"
        )
    elif label is None:
        raise FieldError(
            "question.pre_generated_steps",
            "missing field (a line without a label needs pre-generated steps)",
        )
    else:
        solution.pre_generated = False
    if label is not None:
        label = as_dict(label, "label")
        steps, path = _label_steps(label, pre)
        if pre is None:
            solution.steps = path
            last = path[-1]
            solution.answer = extract_answer(last) if "# Answer" in last else None
        solution.labels.append(
            LabelIn(
                labeler=as_labeler(need(record, "labeler", "labeler"), "labeler"),
                submitted_at=as_timestamp(need(record, "timestamp", "timestamp"), "timestamp"),
                finish_reason=as_finish_reason(label.get("finish_reason"), "label.finish_reason"),
                total_time_ms=as_int(
                    label.get("total_time"), "label.total_time", null=True, minimum=0
                ),
                steps=steps,
            )
        )
    return [solution]


def _truth(q: dict) -> str:
    value = need(q, "ground_truth_answer", "question.ground_truth_answer")
    return as_str(value, "question.ground_truth_answer", null=True) or ""


def _label_steps(label: dict, pre: list[str] | None) -> tuple[list[StepLabelIn], list[str]]:
    """The step labels of a line and the texts of the steps they rate."""
    raw = as_list(need(label, "steps", "label.steps"), "label.steps", nonempty=True)
    if pre is not None and len(raw) > len(pre):
        raise FieldError(
            "label.steps",
            f"{len(raw)} labelled steps but only {len(pre)} pre_generated_steps",
        )
    out, texts = [], []
    for i, step in enumerate(raw):
        if not _step_ok(step):
            _check_step(step, f"label.steps[{i}]")
        completions = step["completions"]
        human = step["human_completion"]
        chosen = step["chosen_completion"]
        own: int | None
        if pre is not None:
            own = 0
            if not completions:
                raise FieldError(f"label.steps[{i}].completions", "must not be empty")
            if completions[0]["text"] != pre[i]:
                raise FieldError(
                    f"label.steps[{i}].completions[0].text",
                    f"is not question.pre_generated_steps[{i}] (phase 2 labels rate the "
                    "pre-generated steps in order)",
                )
        else:
            own = own_completion(chosen=chosen, human=human)
            if own == 0 and not completions:
                raise FieldError(f"label.steps[{i}]", "no completion and no human completion")
        mine, alternatives = completions_split(completions, own)
        if mine is not None:
            if len(mine) != 3 or "flagged" not in mine:
                raise FieldError(
                    f"label.steps[{i}].completions[{own}]",
                    "the step's own completion must have exactly text, rating and flagged",
                )
            text = mine["text"]
            if not text.strip():
                raise FieldError(f"label.steps[{i}].completions[{own}].text", "must not be empty")
            rating, flagged = mine["rating"], mine["flagged"]
        else:
            text = as_str(human["text"], f"label.steps[{i}].human_completion.text", nonempty=True)
            rating, flagged = human.get("rating"), human.get("flagged")
        texts.append(text)
        out.append(
            StepLabelIn(
                rating=rating,
                flagged=flagged,
                completion_index=own,
                alternatives=alternatives,
                human_completion=human,
                chosen_completion=chosen,
            )
        )
    return out, texts


def _rating_ok(value: Any) -> bool:
    return value is None or (type(value) is int and -1 <= value <= 1)


def _flag_ok(value: Any) -> bool:
    return value is None or type(value) is bool


def _step_ok(step: Any) -> bool:
    """Fast structural check of one ``label.steps[i]``; ``_check_step`` says what is wrong."""
    if type(step) is not dict or "human_completion" not in step:
        return False
    completions = step.get("completions")
    if type(completions) is not list:
        return False
    for c in completions:
        if (
            type(c) is not dict
            or type(c.get("text")) is not str
            or not _rating_ok(c.get("rating", 2))
            or not _flag_ok(c.get("flagged"))
        ):
            return False
    human = step["human_completion"]
    if human is not None and (
        type(human) is not dict
        or type(human.get("text")) is not str
        or not _rating_ok(human.get("rating"))
        or not _flag_ok(human.get("flagged"))
    ):
        return False
    chosen = step.get("chosen_completion", -1)
    return chosen is None or (type(chosen) is int and 0 <= chosen < len(completions))


def _check_step(step: Any, path: str) -> None:
    """Raise the FieldError that explains why ``_step_ok`` refused a step."""
    step = as_dict(step, path)
    completions = as_list(need(step, "completions", f"{path}.completions"), f"{path}.completions")
    for j, c in enumerate(completions):
        _completion(c, f"{path}.completions[{j}]")
    human = need(step, "human_completion", f"{path}.human_completion")
    if human is not None:
        human = as_dict(human, f"{path}.human_completion")
        text = need(human, "text", f"{path}.human_completion.text")
        as_str(text, f"{path}.human_completion.text")
        as_rating(human.get("rating"), f"{path}.human_completion.rating")
        as_bool(human.get("flagged"), f"{path}.human_completion.flagged", null=True)
    chosen = need(step, "chosen_completion", f"{path}.chosen_completion")
    chosen = as_int(chosen, f"{path}.chosen_completion", null=True)
    if chosen is not None and not 0 <= chosen < len(completions):
        raise FieldError(
            f"{path}.chosen_completion", f"{chosen} is not an index of its completions"
        )
    raise FieldError(path, "not a valid label step")  # unreachable while the checks agree


def _completion(value: Any, path: str) -> dict:
    c = as_dict(value, path)
    as_str(need(c, "text", f"{path}.text"), f"{path}.text")
    as_rating(need(c, "rating", f"{path}.rating"), f"{path}.rating")
    if "flagged" in c:
        as_bool(c["flagged"], f"{path}.flagged", null=True)
    return c


def parse_trajectories(record: dict, options: dict) -> list[SolutionIn]:
    """One line of ``phase1_train.trajectories.jsonl`` (see its SOURCE.md).

    The file has no labeler ids, timestamps or finish reasons: the labels go to one account
    (``options["labeler"]``, default ``prm800k-phase1``), ``submitted_at`` stays null, and the
    finish reason is inferred from the path (see ``_finish_reason``). Its ``human_completion`` is
    a bare string; it is stored as PRM800K's object ``{"text", "rating": null, "source":
    "human", "flagged": null}``. Candidates keep all their keys (``answer``, ``is_solution``,
    ``error_reason``) in ``alternatives``; the path's own completion keeps text and rating.
    """
    q = as_dict(need(record, "question", "question"), "question")
    problem = ProblemIn(
        text=as_str(need(q, "problem", "question.problem"), "question.problem", nonempty=True),
        ground_truth_answer=_truth(q),
        ground_truth_solution=as_str(
            q.get("ground_truth_solution"), "question.ground_truth_solution", null=True
        ),
        subject=as_str(q.get("subject") or "", "question.subject"),
        level=level_text(q.get("level"), "question.level"),
        unique_id=as_str(q.get("unique_id") or "", "question.unique_id"),
    )
    label = as_dict(need(record, "label", "label"), "label")
    raw = as_list(need(label, "steps", "label.steps"), "label.steps", nonempty=True)
    steps, texts, answer = [], [], None
    for i, step in enumerate(raw):
        path = f"label.steps[{i}]"
        step = as_dict(step, path)
        completions = as_list(
            need(step, "completions", f"{path}.completions"), f"{path}.completions"
        )
        for j, c in enumerate(completions):
            _completion(c, f"{path}.completions[{j}]")
        human = as_str(step.get("human_completion"), f"{path}.human_completion", null=True)
        chosen = as_int(step.get("chosen_completion"), f"{path}.chosen_completion", null=True)
        if chosen is not None and not 0 <= chosen < len(completions):
            raise FieldError(
                f"{path}.chosen_completion", f"{chosen} is not an index of its completions"
            )
        own = own_completion(chosen=chosen, human=human)
        human_obj = (
            None
            if human is None
            else {"text": human, "rating": None, "source": "human", "flagged": None}
        )
        if own is not None and not completions:
            raise FieldError(path, "no completion and no human completion")
        mine, alternatives = completions_split(completions, own)
        if mine is None:
            as_str(human, f"{path}.human_completion", nonempty=True)
            texts.append(human)
            rating, answer = None, None
        else:
            texts.append(as_str(mine["text"], f"{path}.completions[{own}].text", nonempty=True))
            rating, answer = mine["rating"], mine.get("answer")
        steps.append(
            StepLabelIn(
                rating=rating,
                flagged=None,
                completion_index=own,
                alternatives=alternatives,
                human_completion=human_obj,
                chosen_completion=chosen,
            )
        )
    if answer is None and "# Answer" in texts[-1]:
        answer = extract_answer(texts[-1])
    inferred = label.get("finish_reason_inferred")
    if inferred not in ("solution", "found_error_or_stopped", None):
        raise FieldError("label.finish_reason_inferred", f"unknown value {inferred!r}")
    solution = SolutionIn(
        problem=problem,
        steps=texts,
        answer=as_str(answer, "answer", null=True),
        pre_generated=False,
        source_ref=problem.unique_id,
        generator=options.get("generator") or "",
    )
    solution.labels.append(
        LabelIn(
            labeler=as_labeler(options.get("labeler") or TRAJECTORIES_LABELER, "labeler"),
            submitted_at=None,
            finish_reason=_finish_reason(inferred, steps[-1].rating),
            total_time_ms=None,
            steps=steps,
        )
    )
    return [solution]


def _finish_reason(inferred: str | None, last_rating: int | None) -> str:
    """``solution`` when the path reached an answer; else ``found_error`` when its last step is
    rated -1 (the labeler stopped at a wrong step); else ``give_up``."""
    if inferred == "solution":
        return FinishReason.SOLUTION
    return FinishReason.FOUND_ERROR if last_rating == -1 else FinishReason.GIVE_UP
