"""The labelling page's layout of one assignment: the steps rated so far, the current one, the end,
and what the page says about them (which steps are missing, what a screen reader hears).

Plain data built from ``labeling.selectors.labelling.AssignmentView``: the views render it, and a
submission refused for missing ratings says which from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from labeling.models import Rating
from labeling.queue.drafts import drafts_version
from labeling.selectors.labelling import AssignmentView, LabelView, StepView
from labeling.traces import RESULT_LINES_SHOWN, TraceKind, trace_kind

# A tool call whose only argument is one of these is shown as that code, highlighted.
CODE_ARGUMENTS = {"code": "python", "command": "bash", "cmd": "bash", "script": "bash"}


@dataclass(frozen=True)
class ToolCallView:
    """A tool call as a trajectory's step shows it: name, arguments as formatted JSON (or the
    code it runs), and the tool's result with its first lines apart (the rest folds away)."""

    name: str
    arguments: str
    language: str
    result: str | None
    head: str
    lines: int

    @property
    def folded(self) -> bool:
        return self.lines > RESULT_LINES_SHOWN

    @classmethod
    def build(cls, call: dict[str, Any], result: dict[str, Any] | None) -> ToolCallView:
        arguments = call.get("arguments")
        language = "json"
        if isinstance(arguments, dict) and len(arguments) == 1:
            ((name, value),) = arguments.items()
            if name in CODE_ARGUMENTS and isinstance(value, str):
                arguments, language = value, CODE_ARGUMENTS[name]
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, indent=2, ensure_ascii=False)
        text = None if result is None else (result.get("content") or "")
        lines = [] if text is None else text.splitlines()
        return cls(
            name=call.get("name") or "",
            arguments=arguments,
            language=language,
            result=text,
            head="\n".join(lines[:RESULT_LINES_SHOWN]),
            lines=len(lines),
        )


@dataclass(frozen=True)
class PageStep:
    """One step on the labelling page, with the annotator's own label once rated."""

    index: int
    text: str
    label: LabelView | None
    content: dict[str, Any] | None = None

    @classmethod
    def of(cls, step: StepView, label: LabelView | None) -> PageStep:
        return cls(index=step.index, text=step.text, label=label, content=step.content)

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def turn_text(self) -> str:
        """A trajectory's turn: the assistant's own text."""
        return (self.content or {}).get("text") or ""

    @property
    def before(self) -> list[dict[str, Any]]:
        """Context messages said between the previous turn and this one (a user's reply)."""
        return (self.content or {}).get("before") or []

    @property
    def calls(self) -> list[ToolCallView]:
        content = self.content or {}
        results = {r.get("tool_call_id"): r for r in content.get("results") or []}
        return [
            ToolCallView.build(c, results.get(c.get("id"))) for c in content.get("tool_calls") or []
        ]


@dataclass(frozen=True)
class ToolView:
    name: str
    description: str
    parameters: str


@dataclass(frozen=True)
class TrajectoryContext:
    """What a trajectory's page shows above its steps: the system prompt and any context said
    before the first turn (besides the task, which the page shows as the problem), and the
    tools with their schemas."""

    system: list[str] = field(default_factory=list)
    before: list[dict[str, Any]] = field(default_factory=list)
    tools: list[ToolView] = field(default_factory=list)

    @classmethod
    def build(cls, trace: dict[str, Any] | None, *, task: str) -> TrajectoryContext:
        if not trace:
            return cls()
        messages = trace.get("messages") or []
        first = (trace.get("steps") or [len(messages)])[0]
        system, before = [], []
        for message in messages[:first]:
            text = message.get("content")
            text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
            if message.get("role") in ("system", "developer"):
                system.append(text)
            elif text.strip() != task.strip():
                before.append({"role": message.get("role"), "content": text})
        tools = []
        for tool in trace.get("tools") or []:
            fn = tool.get("function", tool) if isinstance(tool, dict) else {}
            tools.append(
                ToolView(
                    name=str(fn.get("name") or ""),
                    description=str(fn.get("description") or ""),
                    parameters=json.dumps(fn.get("parameters") or {}, indent=2, ensure_ascii=False),
                )
            )
        return cls(system=system, before=before, tools=tools)


@dataclass(frozen=True)
class LabelPage:
    """One assignment as the page lays it out: steps rated so far, the current one, the end.

    Steps are revealed one at a time: the rated prefix, then the current step. The solution is
    finished when every step is rated or, with stop-at-first-error, when a step is negative.
    """

    view: AssignmentView
    rated: list[PageStep]
    current: PageStep | None
    found_error: bool
    submission_key: str

    @classmethod
    def build(cls, view: AssignmentView) -> LabelPage:
        labels = {label.step_index: label for label in view.labels}
        rated: list[PageStep] = []
        found_error = False
        for step in view.steps:
            label = labels.get(step.index)
            if label is None:
                break
            rated.append(PageStep.of(step, label))
            if label.rating == Rating.NEGATIVE:
                found_error = True
                if view.stop_at_first_error:
                    break
        ended = (found_error and view.stop_at_first_error) or len(rated) == len(view.steps)
        current = None
        if not ended:
            step = view.steps[len(rated)]
            current = PageStep.of(step, None)
        return cls(
            view=view,
            rated=rated,
            current=current,
            found_error=found_error,
            # One key per assignment: every submission of it from the page (a retried request,
            # a second tab, the no-JavaScript form) is the same submission.
            submission_key=f"web-{view.id}-{view.solution_id}",
        )

    @property
    def finished(self) -> bool:
        return self.current is None

    @property
    def kind(self) -> TraceKind:
        """What the campaign labels (``labeling.traces``): its templates, words, outcome."""
        return trace_kind(self.view.trace_kind)

    @property
    def context(self) -> TrajectoryContext:
        return TrajectoryContext.build(self.view.trace, task=self.view.problem)

    @property
    def last_rated(self) -> PageStep | None:
        return self.rated[-1] if self.rated else None

    @property
    def error_step(self) -> PageStep | None:
        return next((r for r in self.rated if r.label.rating == Rating.NEGATIVE), None)

    @property
    def drafts_version(self) -> str:
        """The ratings this page shows, sent back with its submission: a submission is stored
        only if they are still the saved ones (two tabs on one solution)."""
        return drafts_version(
            (r.index, r.label.rating, r.label.flagged) for r in self.rated if r.label is not None
        )

    @property
    def missing(self) -> list[int]:
        """Numbers (from 1) of the steps still to rate before the solution can be submitted."""
        if self.finished:
            return []
        return list(range(len(self.rated) + 1, len(self.view.steps) + 1))

    @property
    def missing_text(self) -> str:
        """What Enter says before the solution is finished: which steps are not rated yet."""
        numbers = self.missing
        if not numbers:
            return ""
        if len(numbers) == 1:
            which = f"Step {numbers[0]} is"
        elif len(numbers) == 2:
            which = f"Steps {numbers[0]} and {numbers[1]} are"
        else:
            which = f"Steps {numbers[0]} to {numbers[-1]} are"
        first_error = " (a negative one ends the solution)" if self.view.stop_at_first_error else ""
        return (
            f"Not submitted: {len(self.rated)} of {len(self.view.steps)} steps are rated; "
            f"{which.lower()} not rated yet. Rate step {numbers[0]} with 1, 2 or 3"
            f"{first_error}, or give up or report a bad problem below."
        )

    @property
    def announcement(self) -> str:
        """What a screen reader hears after each change (the page's live region reads it)."""
        parts = []
        if self.last_rated is not None:
            last = self.last_rated
            parts.append(f"Step {last.number} rated {Rating(last.label.rating).label}.")
        if self.current is not None:
            parts.append(f"Step {self.current.number} of {len(self.view.steps)}.")
        elif self.found_error and self.view.stop_at_first_error:
            parts.append("Error found: add a correction if you like, then submit.")
        else:
            parts.append("All steps rated: press Enter to submit.")
        return " ".join(parts)
