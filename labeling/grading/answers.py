"""The answer a solution states, and the pairs that need no mathematics to grade."""

from __future__ import annotations

import re

from labeling.grading.readings import decide, unwrap
from labeling.grading.rules import MATHEMATICAL

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_PRM800K_ANSWER = re.compile(r"^#\s*Answer\s*$", re.MULTILINE)
_GSM8K_HASHES = re.compile(r"^####\s*(.+?)\s*$", re.MULTILINE)
_GSM8K_A = re.compile(r"^A:\s*(.+?)\s*$", re.MULTILINE)
_INTEGER = re.compile(r"[+-]?\d{1,100}")


def extract_answer(text: str | None) -> str | None:
    """The final answer a solution text states, or ``None``.

    In order: PRM800K's closing ``# Answer`` section, GSM8K's ``#### x`` or ``A: x`` as the last
    line, else the last ``\\boxed{...}`` (MATH, Qwen). Explicit end markers win because a PRM800K
    or GSM8K solution may box intermediate results along the way.
    """
    if not text:
        return None
    text = text.strip()
    if marks := list(_PRM800K_ANSWER.finditer(text)):
        answer = text[marks[-1].end() :].strip()
        return answer or None
    last_line = text.rsplit("\n", 1)[-1]
    for pattern in (_GSM8K_HASHES, _GSM8K_A):
        if m := pattern.match(last_line):
            return m.group(1)
    return _last_boxed(text)


def _last_boxed(text: str) -> str | None:
    starts = list(_BOXED.finditer(text))
    if not starts:
        return None
    i = starts[-1].end()
    depth = 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip() or None
    return None  # unbalanced: the answer was cut off


def normalise(answer: str | None) -> str | None:
    """Whitespace and surrounding ``$`` removed; ``None`` for an empty answer."""
    if answer is None:
        return None
    answer = answer.strip().strip("$").strip()
    return answer or None


def quick(
    answer: str | None, truth: str | None, rule: str = MATHEMATICAL
) -> tuple[bool, bool | None]:
    """(decided, result) for pairs that need no sympy, under either rule: a missing side, the
    same string (also once a wrapper around all of it is gone: ``\\text{A,B,E}``), two plain
    integers (math-verify would agree; it just takes milliseconds to), words and clock times
    (``readings``: read wrongly as algebra)."""
    a, t = normalise(answer), normalise(truth)
    if a is None or t is None:
        return True, None
    if a == t or unwrap(a) == unwrap(t):
        return True, True
    if _INTEGER.fullmatch(a) and _INTEGER.fullmatch(t):
        return True, int(a) == int(t)
    result = decide(a, t, rule)
    return result is not None, result
