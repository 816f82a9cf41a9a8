"""Agent trajectories, in three shapes: OpenAI-style chat, Anthropic-style content blocks, and
AgentProcessBench's records. Each assistant turn is one step; system, user and tool messages are
context (``labeling.traces``, kind ``agent``).

- ``agent-openai``: ``{"messages": [...], "tools"?: [...]}`` with OpenAI's chat messages
  (``system``, ``user``, ``assistant`` with ``tool_calls``, ``tool`` results naming their
  ``tool_call_id``) and tools' schemas (``{"type": "function", "function": {...}}``); the task is
  ``task`` when given, else the first user message;
- ``agent-anthropic``: ``{"system"?, "messages": [...], "tools"?: [...]}`` with Anthropic's
  content blocks (``text``, ``tool_use`` in assistant turns, ``tool_result`` naming its
  ``tool_use_id`` in user turns) and tools as ``{"name", "description", "input_schema"}``;
  stored in the OpenAI shape (a tool result block becomes a ``tool`` message);
- ``agentprocessbench``: ``{"question", "messages", "tools", "ground_truth", "answer_text",
  "step_labels", "final_label"}``, the messages in OpenAI's shape.

All three may carry people's labels: ``step_labels`` (a message's index in ``messages`` -> -1, 0
or 1; only an assistant turn may be labelled) and ``final_label`` (the final outcome), stored as
one submitted assignment of ``labeler`` (the record's, else the import's option, else
``agentprocessbench``). The recorded outcome (``final_label``, or ``outcome`` in the chat shapes)
is the solution's ``answer_is_correct`` (+1 correct, -1 not; 0 or none: graded from the answer).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from labeling.models import FinishReason
from labeling.traces import AGENT

from .records import (
    FieldError,
    LabelIn,
    ProblemIn,
    SolutionIn,
    StepLabelIn,
    as_bool,
    as_dict,
    as_labeler,
    as_list,
    as_rating,
    as_str,
    need,
)

DEFAULT_LABELER = "agentprocessbench"
CONTEXT_ROLES = ("system", "developer", "user")
# The source fields a trajectory keeps beside its messages (given back by the export).
_LABEL_FIELDS = ("step_labels", "final_label", "labeler")


@dataclass
class Chat:
    """A trajectory in OpenAI's shape, with where each message came from in the source (for
    errors and for labels keyed by the source's message index)."""

    messages: list[dict]
    tools: list[Any]
    # Per message: its path in the source, and the path of the field naming its tool call.
    paths: list[str] = field(default_factory=list)
    id_paths: list[str] = field(default_factory=list)
    # The source's message index -> this message's index (Anthropic's user turn may split).
    index_of: dict[int, int] = field(default_factory=dict)
    sources: int = 0  # how many messages the source has


def text_of(content: Any, path: str) -> str:
    """A message's text: a string, null, or a list of text parts (both vendors' shapes)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = as_list(content, path)
    out = []
    for i, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
            continue
        part = as_dict(part, f"{path}[{i}]")
        if part.get("type") in ("text", "thinking"):
            out.append(as_str(part.get("text", part.get("thinking")), f"{path}[{i}].text") or "")
        else:
            raise FieldError(f"{path}[{i}].type", f"a {part.get('type')!r} part is not text")
    return "\n\n".join(out)


def _call(raw: Any, path: str) -> dict:
    """One tool call as stored on a step: its id, name and arguments (parsed when JSON)."""
    call = as_dict(raw, path)
    function = as_dict(call.get("function", call), f"{path}.function")
    fn_path = f"{path}.function" if "function" in call else path
    name = as_str(need(function, "name", f"{fn_path}.name"), f"{fn_path}.name", nonempty=True)
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        # Malformed JSON is kept as the model wrote it: a malformed call is what a -1 may be about.
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments) if arguments.strip() else {}
    call_id = call.get("id")
    return {
        "id": as_str(call_id, f"{path}.id", null=True),
        "name": name,
        "arguments": arguments,
    }


def trajectory(chat: Chat, *, path: str = "messages") -> tuple[list[dict], list[int]]:
    """The steps of a chat: each assistant turn's content (``Step.content``) and its message index.

    A tool result must answer a call made before it and not answered yet; refused otherwise,
    naming the result's field. Context messages between two assistant turns go with the later
    turn (``before``), so the page shows them where they were said.
    """
    steps: list[dict] = []
    indexes: list[int] = []
    pending: dict[str, dict] = {}
    before: list[dict] = []
    for n, message in enumerate(chat.messages):
        where = chat.paths[n]
        role = message["role"]
        if role == "assistant":
            calls = [
                _call(c, f"{where}.tool_calls[{j}]")
                for j, c in enumerate(as_list(message.get("tool_calls") or [], where))
            ]
            content: dict[str, Any] = {
                "message": n,
                "text": text_of(message.get("content"), f"{where}.content"),
                "tool_calls": calls,
                "results": [],
            }
            if before:
                content["before"] = before
            before = []
            for call in calls:
                if call["id"]:
                    pending[call["id"]] = content
            steps.append(content)
            indexes.append(n)
        elif role == "tool":
            id_path = chat.id_paths[n]
            call_id = as_str(message.get("tool_call_id"), id_path, nonempty=True) or ""
            owner = pending.pop(call_id, None)
            if owner is None:
                raise FieldError(
                    id_path,
                    f"{call_id!r} answers no tool call made before it (a result without its call)",
                )
            name = next(c["name"] for c in owner["tool_calls"] if c["id"] == call_id)
            owner["results"].append(
                {
                    "tool_call_id": call_id,
                    "name": name,
                    "content": text_of(message.get("content"), f"{where}.content"),
                }
            )
        elif steps:
            before.append(
                {"role": role, "content": text_of(message.get("content"), f"{where}.content")}
            )
    if not steps:
        raise FieldError(path, "no assistant turn: a trajectory needs at least one step to rate")
    return steps, indexes


def _openai_chat(record: dict) -> Chat:
    messages = as_list(need(record, "messages", "messages"), "messages", nonempty=True)
    chat = Chat(messages=[], tools=as_list(record.get("tools") or [], "tools"))
    chat.sources = len(messages)
    for i, raw in enumerate(messages):
        message = as_dict(raw, f"messages[{i}]")
        role = need(message, "role", f"messages[{i}].role")
        if role not in (*CONTEXT_ROLES, "assistant", "tool"):
            raise FieldError(
                f"messages[{i}].role",
                f"{role!r} is not system, developer, user, assistant or tool",
            )
        chat.messages.append(message)
        chat.paths.append(f"messages[{i}]")
        chat.id_paths.append(f"messages[{i}].tool_call_id")
        chat.index_of[i] = i
    return chat


def _anthropic_chat(record: dict) -> Chat:
    """Anthropic's messages in OpenAI's shape: ``tool_use`` blocks become ``tool_calls``, each
    ``tool_result`` block a ``tool`` message, the top-level ``system`` a system message."""
    chat = Chat(messages=[], tools=[])
    if record.get("system"):
        chat.messages.append({"role": "system", "content": text_of(record["system"], "system")})
        chat.paths.append("system")
        chat.id_paths.append("system")
    for t, raw in enumerate(as_list(record.get("tools") or [], "tools")):
        tool = as_dict(raw, f"tools[{t}]")
        name = as_str(need(tool, "name", f"tools[{t}].name"), f"tools[{t}].name", nonempty=True)
        schema = {"name": name, "description": tool.get("description") or ""}
        schema["parameters"] = tool.get("input_schema") or {}
        chat.tools.append({"type": "function", "function": schema})
    messages = as_list(need(record, "messages", "messages"), "messages", nonempty=True)
    chat.sources = len(messages)
    for i, raw in enumerate(messages):
        where = f"messages[{i}]"
        message = as_dict(raw, where)
        role = need(message, "role", f"{where}.role")
        if role not in ("user", "assistant"):
            raise FieldError(f"{where}.role", f"{role!r} is not user or assistant")
        blocks = message.get("content")
        if not isinstance(blocks, list):
            blocks = [{"type": "text", "text": text_of(blocks, f"{where}.content")}]
        texts, calls = [], []
        for j, raw_block in enumerate(blocks):
            bpath = f"{where}.content[{j}]"
            block = as_dict(raw_block, bpath)
            kind = block.get("type")
            if kind in ("text", "thinking"):
                texts.append(text_of([block], f"{where}.content"))
            elif kind == "tool_use" and role == "assistant":
                calls.append(
                    {
                        "id": as_str(need(block, "id", f"{bpath}.id"), f"{bpath}.id"),
                        "type": "function",
                        "function": {
                            "name": need(block, "name", f"{bpath}.name"),
                            "arguments": json.dumps(block.get("input", {}), ensure_ascii=False),
                        },
                    }
                )
            elif kind == "tool_result" and role == "user":
                chat.index_of.setdefault(i, len(chat.messages))
                chat.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": need(block, "tool_use_id", f"{bpath}.tool_use_id"),
                        "content": text_of(block.get("content"), f"{bpath}.content"),
                    }
                )
                chat.paths.append(bpath)
                chat.id_paths.append(f"{bpath}.tool_use_id")
            else:
                raise FieldError(
                    f"{bpath}.type", f"a {kind!r} block does not belong in a {role} message"
                )
        if texts or calls or role == "assistant":
            chat.index_of.setdefault(i, len(chat.messages))
            out: dict[str, Any] = {"role": role, "content": "\n\n".join(texts)}
            if calls:
                out["tool_calls"] = calls
            chat.messages.append(out)
            chat.paths.append(where)
            chat.id_paths.append(where)
    return chat


def _truth(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _outcome(value: Any, path: str) -> int | None:
    """A recorded outcome: true/false, or -1/0/1."""
    if isinstance(value, bool):
        return 1 if as_bool(value, path) else -1
    return as_rating(value, path)


def _labels(record: dict, chat: Chat, indexes: list[int], options: dict) -> list[LabelIn]:
    """The record's people's labels: ``step_labels`` keyed by the source's message index, and
    the final outcome's label. Refused: a key that is not a message, or not an assistant turn."""
    raw = record.get("step_labels")
    final = as_rating(record.get("final_label"), "final_label")
    if raw in (None, {}, []) and final is None:
        return []
    step_of = {message: k for k, message in enumerate(indexes)}
    ratings: list[int | None] = [None] * len(indexes)
    count = chat.sources
    for key, value in as_dict(raw or {}, "step_labels").items():
        where = f"step_labels.{key}"
        try:
            source = int(key)
        except ValueError:
            raise FieldError(where, "a key is a message's index in messages (0, 1, ...)") from None
        if not 0 <= source < count:
            raise FieldError(
                where, f"message {source} is out of range: the trajectory has {count} messages"
            )
        at = chat.index_of.get(source)
        step = None if at is None else step_of.get(at)
        if step is None:
            role = "an empty" if at is None else f"a {chat.messages[at]['role']}"
            raise FieldError(
                where, f"message {source} is {role} turn; only assistant turns are steps"
            )
        ratings[step] = as_rating(value, where)
    while ratings and ratings[-1] is None:
        ratings.pop()
    reason = ""
    if any(r == -1 for r in ratings):
        reason = FinishReason.FOUND_ERROR.value
    elif len(ratings) == len(indexes):
        reason = FinishReason.SOLUTION.value
    labeler = record.get("labeler") or options.get("labeler") or DEFAULT_LABELER
    steps = [StepLabelIn(r, None, None, [], None, None) for r in ratings]
    return [
        LabelIn(
            labeler=as_labeler(labeler, "labeler"),
            submitted_at=None,
            finish_reason=reason,
            total_time_ms=None,
            steps=steps,
            outcome=final,
        )
    ]


def _solution(
    record: dict, chat: Chat, options: dict, *, fmt: str, task: str, answer: str | None
) -> SolutionIn:
    contents, indexes = trajectory(chat)
    truth = record.get("ground_truth")
    outcome_field = "final_label" if "final_label" in record else "outcome"
    recorded = _outcome(record.get(outcome_field), outcome_field)
    given = ("messages", "tools", "system", *_LABEL_FIELDS)
    kept = {k: v for k, v in record.items() if k not in given}
    trace = {
        "format": fmt,
        "messages": chat.messages,
        "tools": chat.tools,
        "steps": indexes,
        "fields": kept,
    }
    source_id = record.get("id")
    return SolutionIn(
        problem=ProblemIn(text=task, ground_truth_answer=_truth(truth)),
        steps=[AGENT.step_text("", c) for c in contents],
        contents=contents,
        trace=trace,
        answer=answer,
        generator=as_str(record.get("model") or options.get("generator") or "", "model") or "",
        source_ref=str(source_id) if source_id is not None else "",
        id_field="id" if source_id is not None else "",
        answer_is_correct={1: True, -1: False}.get(recorded) if recorded is not None else None,
        labels=_labels(record, chat, indexes, options),
    )


def _first_user(chat: Chat, field_name: str) -> str:
    for message, where in zip(chat.messages, chat.paths, strict=True):
        if message["role"] == "user":
            text = text_of(message.get("content"), f"{where}.content")
            if text.strip():
                return text
    raise FieldError(field_name, "no user message: the task is the first user message")


def _last_answer(chat: Chat) -> str | None:
    for message in reversed(chat.messages):
        if message["role"] == "assistant":
            if message.get("tool_calls"):
                return None
            return text_of(message.get("content"), "messages") or None
    return None


def parse_openai(record: dict, options: dict) -> list[SolutionIn]:
    chat = _openai_chat(record)
    task = as_str(record["task"], "task", nonempty=True) if "task" in record else None
    answer = as_str(record.get("answer"), "answer", null=True)
    return [
        _solution(
            record,
            chat,
            options,
            fmt="agent-openai",
            task=task or _first_user(chat, "messages"),
            answer=answer if answer is not None else _last_answer(chat),
        )
    ]


def parse_anthropic(record: dict, options: dict) -> list[SolutionIn]:
    chat = _anthropic_chat(record)
    task = as_str(record["task"], "task", nonempty=True) if "task" in record else None
    answer = as_str(record.get("answer"), "answer", null=True)
    return [
        _solution(
            record,
            chat,
            options,
            fmt="agent-anthropic",
            task=task or _first_user(chat, "messages"),
            answer=answer if answer is not None else _last_answer(chat),
        )
    ]


def parse_agentprocessbench(record: dict, options: dict) -> list[SolutionIn]:
    chat = _openai_chat(record)
    task = as_str(need(record, "question", "question"), "question", nonempty=True) or ""
    answer = as_str(record.get("answer_text"), "answer_text", null=True)
    return [_solution(record, chat, options, fmt="agentprocessbench", task=task, answer=answer)]
