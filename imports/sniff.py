"""A look at an uploaded file before it becomes an import job: is it text, and which format does
its first record look like?

The importer checks every line and names each bad one; that is the right answer for a file with
a few bad lines, and the wrong one for a file that is not JSON Lines text at all (a spreadsheet,
a zip, a Latin-1 export): twenty "not valid JSON" errors then hide the one thing to fix. So an
upload is read once here first: a binary or non-UTF-8 file is refused with one message, and the
first record's keys tell the formats apart (each format's parser documents its own keys).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable
from dataclasses import dataclass

# What the upload form calls each format, for messages.
FORMAT_NAMES = {
    "jsonl": "jsonl (problems with solutions)",
    "prm800k": "prm800k (PRM800K label lines)",
    "prm800k-trajectories": "prm800k-trajectories (PRM800K phase 1 trajectories)",
    "processbench": "processbench (ProcessBench records)",
    "agent-openai": "agent-openai (OpenAI-style chat messages with tool calls)",
    "agent-anthropic": "agent-anthropic (Anthropic-style tool_use / tool_result blocks)",
    "agentprocessbench": "agentprocessbench (AgentProcessBench records)",
}
AUTO = "auto"

# Magic numbers of the files most often uploaded by mistake.
_MAGIC = {
    b"\x1f\x8b": "a gzip archive",
    b"PK\x03\x04": "a zip archive (or an Excel/Word file)",
    b"PAR1": "a Parquet file",
    b"%PDF": "a PDF",
    b"\xd0\xcf\x11\xe0": "an old Office file",
}
_FIRST_LINE_MAX = 16 * 1024 * 1024  # a first record longer than this is not sniffed


@dataclass(frozen=True)
class Sniffed:
    """What the first look found: a refusal (``problem``) or the format it looks like."""

    problem: str | None = None
    format: str | None = None


def guess_format(record: object) -> str | None:
    """The format whose shape this first record has, or None when it has none of them."""
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("messages"), list):
        return _trajectory_format(record)
    if isinstance(record.get("question"), dict) and "label" in record:
        return "prm800k" if "labeler" in record else "prm800k-trajectories"
    if "problem" in record and isinstance(record.get("steps"), list) and "label" in record:
        return "processbench"
    if "solutions" in record or ("problem" in record and "steps" not in record):
        return "jsonl"  # problems with solutions, or problems alone
    if "question" in record and (
        isinstance(record.get("response"), list) or "ground_truth" in record
    ):
        return "jsonl"
    return None


def _trajectory_format(record: dict) -> str:
    """Which of the three trajectory shapes: AgentProcessBench's names its task ``question``;
    Anthropic's has content blocks of tool use or a top-level ``system``; else OpenAI's."""
    if "question" in record:
        return "agentprocessbench"
    blocks = [
        block
        for message in record["messages"]
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    ]
    if "system" in record or any(b.get("type") in ("tool_use", "tool_result") for b in blocks):
        return "agent-anthropic"
    return "agent-openai"


def sniff(chunks: Iterable[bytes]) -> Sniffed:
    """Read the whole file once: binary or not UTF-8 gives one message; else the first record's
    format (None when the first line is not a JSON object of a known shape)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    first = bytearray()
    first_done = False
    offset = 0
    line = 1
    for chunk in chunks:
        if offset == 0:
            for magic, what in _MAGIC.items():
                if chunk.startswith(magic):
                    return Sniffed(problem=_not_text(f"This file is {what}"))
        if b"\x00" in chunk:
            return Sniffed(problem=_not_text("This file is binary (it contains NUL bytes)"))
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as error:
            at = offset + error.start
            line_at = line + chunk[: error.start].count(b"\n")
            return Sniffed(
                problem=(
                    f"This file is not UTF-8 text (byte {at:,} on line {line_at}, "
                    f"{chunk[error.start : error.start + 1]!r}): nothing was imported. Save it as "
                    "UTF-8 JSON Lines (one JSON object per line) and upload it again."
                )
            )
        line += chunk.count(b"\n")
        offset += len(chunk)
        if not first_done:
            first_done = _take_first_line(first, chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return Sniffed(problem="This file is not UTF-8 text: it ends inside a character.")
    return Sniffed(format=_first_record_format(bytes(first)))


def _not_text(what: str) -> str:
    return (
        f"{what}, not JSON Lines text: nothing was imported. Upload a .jsonl file of UTF-8 "
        "text, one JSON object per line (decompress or convert it first)."
    )


def _take_first_line(first: bytearray, chunk: bytes) -> bool:
    """Add to the first non-blank line; True once it is complete (or too long to sniff)."""
    for piece in chunk.splitlines(keepends=True):
        if not first.strip() and not piece.strip():
            first.clear()
            continue
        first.extend(piece)
        if piece.endswith((b"\n", b"\r")) or len(first) > _FIRST_LINE_MAX:
            return True
    return False


def _first_record_format(line: bytes) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return guess_format(record)


def mismatch_message(*, chosen: str, looks_like: str) -> str:
    """What the upload says when the chosen format is not the one the first record has."""
    return (
        f"You chose {FORMAT_NAMES.get(chosen, chosen)}, but the file's first record looks like "
        f"{FORMAT_NAMES.get(looks_like, looks_like)}. Choose {looks_like} (or "
        "“guess from the first record”) and upload it again."
    )
