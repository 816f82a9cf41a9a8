"""Prompt templates for generation: data, not code.

A manager writes the prompt a model is asked with, with placeholders for the problem's fields.
It is never given to ``str.format``: a format spec (``{problem:>500000000}``) would make the
process allocate what the template asks for, and attribute or index access
(``{problem.__class__}``, ``{problem[0]}``) would let a template walk Python objects. Here a
template is parsed into literal text and the names of ``FIELDS`` only, and rendering joins those
pieces: its size is the template's literal text plus the fields' values, at most
``MAX_PLACEHOLDERS`` of them, and the whole prompt is refused past ``MAX_PROMPT_CHARS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter

# The fields a template may name, and what they hold (docs/generation.md lists them).
FIELDS = {
    "problem": "the problem's statement",
    "answer": "its ground-truth answer",
    "subject": "its subject (MATH's, e.g. Algebra)",
    "level": "its level (MATH's 1-5)",
}
MAX_TEMPLATE_CHARS = 20_000
MAX_PLACEHOLDERS = 20
MAX_PROMPT_CHARS = 200_000


class TemplateError(ValueError):
    """A template that cannot be used; the text names the problem, for the person who wrote it."""


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed template: literal text and field names, in order."""

    pieces: tuple[tuple[str, str | None], ...]  # (literal text, field name or None)

    @classmethod
    def parse(cls, template: str) -> PromptTemplate:
        """The template's pieces, or ``TemplateError`` naming what is wrong with it."""
        if not isinstance(template, str) or not template.strip():
            raise TemplateError("The prompt template is empty.")
        if len(template) > MAX_TEMPLATE_CHARS:
            raise TemplateError(
                f"The prompt template is longer than {MAX_TEMPLATE_CHARS:,} characters."
            )
        allowed = ", ".join("{" + name + "}" for name in FIELDS)
        pieces: list[tuple[str, str | None]] = []
        try:
            parsed = list(Formatter().parse(template))
        except ValueError as e:
            raise TemplateError(
                f"The prompt template's braces do not pair up ({e}); write a literal brace as "
                "{{ or }}."
            ) from None
        for literal, name, spec, conversion in parsed:
            if name is None:
                pieces.append((literal, None))
                continue
            shown = "{" + name + (f"!{conversion}" if conversion else "")
            shown += (f":{spec}" if spec else "") + "}"
            if name not in FIELDS:
                why = (
                    "attribute and index access are not allowed"
                    if any(c in name for c in ".[")
                    else "unknown field"
                    if name
                    else "an empty placeholder"
                )
                raise TemplateError(
                    f"The prompt template has {shown[:80]} ({why}); the fields are {allowed}, "
                    "and a literal brace is written {{ or }}."
                )
            if spec or conversion:
                raise TemplateError(
                    f"The prompt template has {shown[:80]}: placeholders take no format or "
                    f"conversion; write {{{name}}}."
                )
            pieces.append((literal, name))
        names = [name for _, name in pieces if name]
        if "problem" not in names:
            raise TemplateError("The prompt template must contain {problem}.")
        if len(names) > MAX_PLACEHOLDERS:
            raise TemplateError(
                f"The prompt template has {len(names)} placeholders; at most {MAX_PLACEHOLDERS}."
            )
        return cls(tuple(pieces))

    def render(self, values: dict[str, str]) -> str:
        """The prompt for one problem; ``TemplateError`` if it would pass ``MAX_PROMPT_CHARS``
        (the size is added up before anything is joined)."""
        size = sum(
            len(literal) + len(values.get(name, "")) if name else len(literal)
            for literal, name in self.pieces
        )
        if size > MAX_PROMPT_CHARS:
            raise TemplateError(
                f"the prompt would be {size:,} characters, more than {MAX_PROMPT_CHARS:,}"
            )
        return "".join(
            literal + (values.get(name, "") if name else "") for literal, name in self.pieces
        )


def template_check(template: str) -> str:
    """``template`` if it can be used, else ``TemplateError`` naming the problem."""
    PromptTemplate.parse(template)
    return template


def prompt_render(template: str, values: dict[str, str]) -> str:
    return PromptTemplate.parse(template).render(values)


# The judge's prompt per kind of trace (``labeling.traces``: a kind names its own), asking for the
# earliest wrong step in ``\boxed{}`` (``machines.evidence.judge_first_error`` reads it). Python
# format strings: ``{problem}`` and ``{steps}`` (each step in ``<step_i>`` tags, from 0).
JUDGE_PROMPTS = {
    # After ProcessBench's critic prompt (Zheng et al., 2024).
    "judge-math": (
        "The following is a math problem and a solution to it, split into steps, each enclosed "
        "in tags and numbered from 0.\n\n[Problem]\n\n{problem}\n\n[Solution]\n\n{steps}\n\n"
        "Review the solution step by step. If you find an error, give the number of the earliest "
        "step that contains one; if every step is correct, give -1. Put your final answer (the "
        "number only) in \\boxed{{}}."
    ),
    # AgentProcessBench's meaning of a wrong step: wrong and harmful to the task, not merely
    # exploratory.
    "judge-trajectory": (
        "The following is a task given to an AI agent and the agent's trajectory: each of its "
        "turns (its reasoning, the tool it called with the arguments, and the tool's result, "
        "shortened) is enclosed in tags and numbered from 0.\n\n[Task]\n\n{problem}\n\n"
        "[Trajectory]\n\n{steps}\n\nReview the trajectory turn by turn. A turn is wrong when "
        "its judgement, action or output is incorrect and harms the task (a wrong conclusion, a "
        "wrong or malformed call, an action that damages the state or misleads what follows); "
        "an exploratory turn, or one without effect, is not wrong. Give the number of the "
        "earliest wrong turn; if no turn is wrong, give -1. Put your final answer (the number "
        "only) in \\boxed{{}}."
    ),
}
