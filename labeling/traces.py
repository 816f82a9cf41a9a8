"""Kinds of trace a campaign labels: what differs between a math solution and an agent trajectory,
declared once per kind.

Everything that is the same for every kind (the queue, overlap, gold, review, agreement, exports'
label policy, active learning) reads ``Step.text`` and the step labels and never asks which kind
it holds. Where the kinds differ, the campaign's ``trace_kind`` names one :class:`TraceKind` here,
and each place reads the declaration instead of branching on a name:

- **import**: the import formats a kind accepts (``import_formats``; the parsers are
  ``imports.pipeline.FORMATS``' by these names);
- **steps**: what ``Step.text`` is for a step (``step_text``): the text the data browser
  searches, the exports carry and the PRM sees; for a trajectory the assistant's text, its tool
  calls and a trimmed result of each;
- **rendering**: the templates of the labelling page's context and of one step
  (``context_template``, ``step_template``) and whether it asks for a rating of the final outcome
  (``rates_outcome``);
- **outcome**: what plays answer correctness (``outcome_words``; the value itself is
  ``Solution.answer_is_correct``, set on import from the recorded outcome, else graded);
- **export**: the formats that cannot carry the kind, each with its reason (``exports_refused``);
- **judge**: the name of the judge's prompt in ``machines.prompts`` (``judge_prompt``);
- a new campaign's instructions when the manager writes none (``default_instructions``).

A third kind (code with its test results) is one more :class:`TraceKind` in ``TRACE_KINDS`` (and
the migration of ``Campaign.trace_kind``'s choices): see docs/contributing.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# How much of a tool's result goes into ``Step.text`` (what the PRM sees and search finds): the
# head of a result says whether the call worked; pages of it would drown the step's own text.
RESULT_CHARS = 400
# How many lines of a tool's result the labelling page shows before "show all".
RESULT_LINES_SHOWN = 6


@dataclass(frozen=True)
class TraceKind:
    """One kind of trace: every place where it differs from the others, by name or function."""

    name: str
    title: str
    # What a step of this kind is called on the pages (``step``, ``turn``).
    step_noun: str
    import_formats: tuple[str, ...]
    # ``Step.text`` from a step's structured content (``Step.content``; None for math).
    step_text: Callable[[str, dict[str, Any] | None], str]
    context_template: str
    step_template: str
    rates_outcome: bool
    outcome_words: str
    default_instructions: str
    judge_prompt: str
    exports_refused: dict[str, str] = field(default_factory=dict)

    def export_refusal(self, fmt: str) -> str | None:
        """Why ``fmt`` cannot export this kind, or None when it can."""
        return self.exports_refused.get(fmt)


def _math_text(text: str, content: dict[str, Any] | None) -> str:
    return text


def arguments_json(arguments: Any) -> str:
    """A tool call's arguments as one line of JSON (a string that is not JSON stays as given)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def trimmed(text: str, limit: int = RESULT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit:,} more characters)"


def trajectory_step_text(text: str, content: dict[str, Any] | None) -> str:
    """An assistant turn as the PRM, the exports and search see it: its text, then each tool call
    (name and arguments) and the head of the tool's result, one labelled block each."""
    if not content:
        return text
    parts = [content.get("text") or ""]
    results = {r.get("tool_call_id"): r for r in content.get("results") or []}
    for call in content.get("tool_calls") or []:
        parts.append(f"Tool call: {call['name']}({arguments_json(call.get('arguments'))})")
        result = results.get(call.get("id"))
        if result is not None:
            parts.append(f"Tool result: {trimmed(result.get('content') or '')}")
    return "\n\n".join(p for p in parts if p) or "(the turn says nothing)"


MATH = TraceKind(
    name="math",
    title="math solutions",
    step_noun="step",
    import_formats=("prm800k", "prm800k-trajectories", "processbench", "jsonl"),
    step_text=_math_text,
    context_template="labeling/_context_math.html",
    step_template="labeling/_step_math.html",
    rates_outcome=False,
    outcome_words="answer correct (graded against the ground truth)",
    default_instructions="",
    judge_prompt="judge-math",
    # None refused: agentprocessbench writes a math solution as a trajectory without tools
    # (each step an assistant turn).
)

AGENT_INSTRUCTIONS = """\
Rate each **assistant turn** (its reasoning and its tool call) in the context of the task,
as AgentProcessBench's annotators do:

- **+1 (key 3)**: correct and useful: the judgement, action or output is right and moves the task
  forward;
- **0 (key 2)**: exploratory, or without effect: a reasonable look around, a retry, a turn that
  neither helps nor harms the task;
- **-1 (key 1)**: wrong and harmful to the task: a wrong conclusion, a wrong or malformed call, an
  action that damages the state or misleads what follows. Give -1 with care: only when the turn
  is wrong and it matters.

System, user and tool messages are context: read them, never rate them. A tool's result shows the
first lines; open it to read the rest. When every turn is rated, rate the **final outcome**: did
the trajectory accomplish the task (+1), partly or unclear (0), or fail (-1)?
"""

AGENT = TraceKind(
    name="agent",
    title="agent trajectories (tool calls)",
    step_noun="turn",
    import_formats=("agent-openai", "agent-anthropic", "agentprocessbench"),
    step_text=trajectory_step_text,
    context_template="labeling/_context_agent.html",
    step_template="labeling/_step_agent.html",
    rates_outcome=True,
    outcome_words="outcome (recorded, else the answer graded against the ground truth)",
    default_instructions=AGENT_INSTRUCTIONS,
    judge_prompt="judge-trajectory",
    exports_refused={
        "prm800k": "PRM800K's label lines hold a math problem's pre-generated steps and "
        "completions; an agent trajectory's messages and tool calls do not fit them. Export "
        "agentprocessbench (round-trips trajectories and their labels), trl, math-shepherd or "
        "csv instead.",
    },
)

# Every kind, declared once (docs/contributing.md: how to add a kind of trace).
TRACE_KINDS: dict[str, TraceKind] = {k.name: k for k in (MATH, AGENT)}
DEFAULT_KIND = MATH.name
TRACE_KIND_CHOICES = [(k.name, k.title) for k in TRACE_KINDS.values()]


def trace_kind(name: str) -> TraceKind:
    """The declaration of kind ``name`` (a campaign's ``trace_kind``); math for an unknown one,
    as a campaign made before kinds existed is math."""
    return TRACE_KINDS.get(name, MATH)
