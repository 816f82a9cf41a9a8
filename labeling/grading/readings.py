"""Answers that are not algebra: words and letter sequences, and clock times.

Both were graded wrongly when handed to math-verify as they are, whatever the rule:

- ``LXQS`` against ``LQSX`` was equal: letters read as a product of symbols, which commutes.
  An answer made only of letters (a word, a name, an order of points, a set of choices such as
  ``ACF``) is text here, and equals only the same text (case and spaces aside);
- ``4:30 \\text{ p.m.}`` against ``4:30 p.m.`` was unequal, and ``2:30`` against ``1:15`` equal:
  wrapped, math-verify reads ``h:mm`` as a ratio. A clock time is read as a time here.

A single letter (``x``, ``C``, ``(C)``) stays mathematics: it is a variable or a choice that
math-verify already compares well (``C`` equals ``\\text{(C)}``). Plain ``re``, no sympy: the
web process decides these pairs without a worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labeling.grading.rules import PRM800K

# Commands whose argument is the text itself (MATH writes words as \text{Monday}).
_WRAPPER = r"\\(?:text|textbf|textrm|textit|mbox|hbox|mathrm)\s*"
_ENCLOSING = re.compile(rf"^{_WRAPPER}\{{(?P<inner>.*)\}}$", re.DOTALL)
_INNER = re.compile(rf"{_WRAPPER}\{{([^{{}}]*)\}}")
# Spacing commands and MATH's tight colon (4\!:\!51).
_SPACING = re.compile(r"\\[,;: ]|~|\\quad|\\qquad")
_LETTERS_ONLY = re.compile(r"[A-Za-z][A-Za-z\s,.'\-]*")
_A_WORD = re.compile(r"[A-Za-z]{2,}")
_ITEM_SPLIT = re.compile(r",|\band\b")
_TIME = re.compile(
    r"(?P<h>\d{1,2})\s*:\s*(?P<m>[0-5]\d)(?:\s*:\s*(?P<s>[0-5]\d))?\s*(?:(?P<ap>[ap])\.?\s*m\.?)?",
    re.IGNORECASE,
)


def unwrap(answer: str) -> str:
    """``answer`` without wrappers around all of it: ``\\text{4:30 p.m.}`` is ``4:30 p.m.``.

    Only a wrapper around the whole answer goes (MATH's normalisation does the same); one
    around a unit (``5 \\text{ cm}``) is left for math-verify, which drops units."""
    while m := _ENCLOSING.match(answer):
        inner = m.group("inner")
        if not _balanced(inner):  # \text{a} + \text{b}: not one wrapper
            break
        answer = inner.strip()
    return answer


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _plain(answer: str) -> str:
    """The answer with every text wrapper and spacing command replaced by its content."""
    answer = _SPACING.sub(" ", unwrap(answer).replace("\\!", ""))
    while True:
        stripped = _INNER.sub(r"\1", answer)
        if stripped == answer:
            return answer.strip()
        answer = stripped


# -- words ---------------------------------------------------------------------------------------


def letters(answer: str) -> list[str] | None:
    """The items of an answer made only of letters (a word, a name, ``LQSX``, ``A, B and E``),
    lower-cased and without spaces or dots; ``None`` for anything else (digits, operators,
    commands, or no two letters in a row: ``x``, ``(C)``, ``x, y`` are mathematics)."""
    text = _plain(answer)
    if not _LETTERS_ONLY.fullmatch(text) or not _A_WORD.search(re.sub(r"\s", "", text)):
        return None
    items = [re.sub(r"[\s.]", "", item).lower() for item in _ITEM_SPLIT.split(text)]
    return [item for item in items if item]


def same_letters(answer: list[str], truth: list[str], rule: str) -> bool:
    """Whether two letter answers are the same text. A list of words is a set under the
    mathematical rule (as a list of numbers is) and ordered under PRM800K's; the letters of
    one item are always in order (``LXQS`` is not ``LQSX``)."""
    if rule == PRM800K:
        return answer == truth
    return sorted(answer) == sorted(truth)


# -- clock times ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClockTime:
    """``h:mm`` or ``h:mm:ss``, with ``a.m.``/``p.m.`` or without."""

    hours: int
    minutes: int
    seconds: int | None
    meridiem: str | None  # "a", "p" or None

    @property
    def definite(self) -> bool:
        """Whether it can only be a time (a ratio has no seconds and no p.m.)."""
        return self.meridiem is not None or self.seconds is not None

    def readings(self) -> set[int]:
        """The seconds after midnight it may mean: ``4:30`` is 4:30 or 16:30 when it does not
        say which (MATH's answers treat ``p.m.`` as a unit an answer need not repeat)."""
        rest = self.minutes * 60 + (self.seconds or 0)
        if self.meridiem is not None:
            return {((self.hours % 12) + (12 if self.meridiem == "p" else 0)) * 3600 + rest}
        found = {self.hours * 3600 + rest}
        if self.hours <= 12:
            found |= {(self.hours % 12) * 3600 + rest, (self.hours % 12 + 12) * 3600 + rest}
        return found


def clock_time(answer: str) -> ClockTime | None:
    """The time an answer states (``4:30 \\text{ p.m.}``, ``4\\!:\\!51\\!:\\!06``, ``05:00``,
    ``1:03 PM``), or ``None`` when it is not one."""
    m = _TIME.fullmatch(_plain(answer))
    if m is None:
        return None
    hours = int(m.group("h"))
    meridiem = m.group("ap").lower() if m.group("ap") else None
    if hours > 23 or (meridiem is not None and not 1 <= hours <= 12):
        return None
    seconds = int(m.group("s")) if m.group("s") else None
    return ClockTime(hours, int(m.group("m")), seconds, meridiem)


def same_time(answer: ClockTime, truth: ClockTime) -> bool:
    return bool(answer.readings() & truth.readings())


def decide(answer: str, truth: str, rule: str) -> bool | None:
    """Whether ``answer`` equals ``truth`` when either is text or a clock time; ``None`` when
    neither is, and the pair is mathematics.

    Two times are compared as times. A definite time (with seconds or ``p.m.``) against
    anything else is unequal; a bare ``h:mm`` against a non-time stays mathematics (``19:60``
    is a ratio). When either side is letters, both are compared as text: a word never equals
    an expression, and letters never commute."""
    answer_time, truth_time = clock_time(answer), clock_time(truth)
    if answer_time is not None and truth_time is not None:
        return same_time(answer_time, truth_time)
    if (answer_time and answer_time.definite) or (truth_time and truth_time.definite):
        return False
    answer_letters, truth_letters = letters(answer), letters(truth)
    if answer_letters is None and truth_letters is None:
        return None
    if answer_letters is None or truth_letters is None:
        return False
    return same_letters(answer_letters, truth_letters, rule)
