"""Values that JSON can spell but nothing downstream can hold, found with the path to them.

``json.loads`` accepts ``NaN`` and ``Infinity`` (and turns ``1e999`` into infinity), ``\\u0000``
and lone surrogates such as ``\\ud800``, and nesting up to the interpreter's recursion limit.
PostgreSQL text cannot hold NUL, no encoder can write a lone surrogate, strict JSON (the API's
answers, the exports) has no NaN, and deep nesting overflows the stack of whatever walks it
next. Imports and the API refuse such input up front, naming where it is.
"""

from __future__ import annotations

import json
import math
import re

# JSON nested deeper than this is no record of any format (PRM800K's deepest is 6 levels).
MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Unfit(Exception):
    """A value no import may hold; ``path`` grows as the walk unwinds (free when all is well)."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.path: list[str] = []


def text_unfit(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which text cannot hold"
    if not text.isascii() and _SURROGATE.search(text):
        return "contains a lone surrogate (\\ud800-\\udfff), which is not text"
    return None


def _check(value: object, depth: int) -> None:
    # Exact types (a str subclass is not JSON); ``type(value) is`` also tells the type checker.
    if type(value) is str:
        if (problem := text_unfit(value)) is not None:
            raise _Unfit(problem)
    elif type(value) is float:
        if not math.isfinite(value):
            raise _Unfit(f"{json.dumps(value)} is not a number (NaN and infinities are refused)")
    elif type(value) is dict:
        if depth >= MAX_DEPTH:
            raise _Unfit(f"nested more than {MAX_DEPTH} levels deep")
        for key, item in value.items():
            try:
                if (problem := text_unfit(key)) is not None:
                    raise _Unfit(f"a key {problem}")
                _check(item, depth + 1)
            except _Unfit as unfit:
                unfit.path.append("." + key if text_unfit(key) is None else ".<key>")
                raise
    elif type(value) is list:
        if depth >= MAX_DEPTH:
            raise _Unfit(f"nested more than {MAX_DEPTH} levels deep")
        for i, item in enumerate(value):
            try:
                _check(item, depth + 1)
            except _Unfit as unfit:
                unfit.path.append(f"[{i}]")
                raise


def json_unfit(value: object) -> tuple[str, str] | None:
    """``(path, reason)`` for the first value in parsed JSON that cannot be stored (NaN or an
    infinity, a NUL character, a lone surrogate, nesting deeper than ``MAX_DEPTH``), else None.
    The path reads like ``solutions[0].steps[2]``."""
    try:
        _check(value, 0)
    except _Unfit as unfit:
        return "".join(reversed(unfit.path)).lstrip("."), unfit.message
    return None
