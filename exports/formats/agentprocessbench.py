"""``agentprocessbench``: AgentProcessBench's records, one per submitted assignment of a trajectory.

``{"question", "messages", "tools", "ground_truth", "answer_text", "step_labels", "final_label"}``
with the source's other fields (its ``id``) as they were imported, and the ``labeler``. The
messages are OpenAI's chat shape (an Anthropic-style import comes back converted: a ``tool_result``
block is a ``tool`` message), ``step_labels`` keys each rated assistant turn by its message index
and ``final_label`` is the annotator's rating of the final outcome. A raw format, like
``prm800k``: every rating as given, so an imported file comes back label for label. A math
campaign's solutions come as trajectories without tools (``as_trajectory``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from exports.formats.base import RAW_NAMES, RAW_OPTIONS, Format, JsonlWriter, with_sources
from exports.policy import HUMAN, LabelPolicy
from exports.reader import SolutionData


def as_trajectory(solution: SolutionData) -> dict[str, Any]:
    """A math solution as a trajectory without tools: the problem as the user's message, each
    step an assistant turn (what an agent PRM trainer reads from a math campaign)."""
    messages = [{"role": "user", "content": solution.problem_text}]
    messages += [{"role": "assistant", "content": text} for text in solution.steps]
    return {
        "messages": messages,
        "tools": [],
        "steps": list(range(1, len(messages))),
        "fields": {"id": str(solution.id)},
    }


def agentprocessbench_rows(solution: SolutionData, policy: LabelPolicy, options: dict) -> Iterator:
    """One record per assignment (a math solution as the trajectory ``as_trajectory`` makes)."""
    trace = solution.trace or as_trajectory(solution)
    fields: dict[str, Any] = dict(trace.get("fields") or {})
    messages_of_steps: list[int] = trace["steps"]
    base = {
        **fields,
        "question": solution.problem_text,
        "messages": trace["messages"],
        "tools": trace.get("tools") or [],
        "ground_truth": fields.get("ground_truth", solution.ground_truth_answer or None),
        "answer_text": solution.answer,
    }
    for a in solution.assignments:
        rated = [lab for lab in a.labels if lab.rating is not None]
        record = {
            **base,
            "step_labels": {str(messages_of_steps[lab.index]): lab.rating for lab in rated},
            "final_label": a.outcome_rating,
            "labeler": a.annotator,
        }
        if not a.is_current:
            record["stepwise_status"] = a.status
        ratings = [lab.rating for lab in a.labels]
        if with_sources(policy):
            sources = [HUMAN] * len(ratings)
            record["stepwise_label_sources"] = sources
            yield record, ratings, sources
        else:
            yield record, ratings


AGENTPROCESSBENCH = Format(
    "agentprocessbench",
    ".jsonl",
    JsonlWriter,
    agentprocessbench_rows,
    RAW_OPTIONS,
    RAW_NAMES,
    description="AgentProcessBench records (agent trajectories, JSONL)",
)
