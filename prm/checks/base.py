"""What every check shares: the check names, findings, the bounds on a step, numeric closeness and
the word lists that silence or loosen a check."""

from __future__ import annotations

import re
from dataclasses import dataclass

CHECKS = (
    "arithmetic",
    "algebra",
    "contradiction",
    "condition",
    "final_answer",
    "percent",
    "units",
)
# The checks' work is bounded by what they read, never by a clock (so a step has the same findings
# at any load): a step of more characters is not read; prm.latex bounds each part of an equation.
MAX_STEP_CHARACTERS = 4000
MEMORY_STEPS = 5  # how many steps back a value still counts for the contradiction check
POINTS = (0.3719, 1.6183, -0.7071)  # where identities are tested (fixed: checks are deterministic)


def any_word(alternatives: str) -> re.Pattern[str]:
    """Any of the words of ``alternatives`` (a regular expression ``w1|w2|...``, each word
    starting with a letter) as a whole word, case ignored: ``\\b(?:w1|w2|...)\\b``, with a
    look-ahead for the words' first letters in front. The matches are the same; Python's ``re``
    otherwise tries every word at every position of the text, and the look-ahead lets it skip the
    positions no word can start at (half the time on PRM800K steps)."""
    words, depth, start = [], 0, 0
    for i, ch in enumerate(alternatives + "|"):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            words.append(alternatives[start:i])
            start = i + 1
    if not all(w[:1].isalpha() for w in words):
        raise ValueError(f"each word starts with a letter: {alternatives!r}")
    first = "".join(sorted({c for w in words for c in (w[0].lower(), w[0].upper())}))
    return re.compile(rf"\b(?=[{first}])(?:{alternatives})\b", re.I)


# Words that make a step's equations not claims: a negation, a question, a check of a guess.
NEGATION_WORDS = any_word(
    "not|no solution|impossible|contradiction|never|cannot|can't|isn't|wrong|false|"
    "incorrect|mistake"
)
# Words of hypotheses and cases: a variable may take another value there without contradiction.
HYPOTHESIS_WORDS = any_word(
    "if|when|whenever|suppose|assume|case|cases|try|trying|either|say|consider|would|"
    "check|whether|instead|otherwise|for example|another|test|testing|plug|plugging|"
    "substitute|substituting|works?|correct"
)
# Answers that count, select or combine in words: the last value computed need not be the answer.
SELECTION_WORDS = any_word(
    "how many|number of|possible|ways|solutions|values|such|pairs|there (?:are|is)|"
    "sum|product|total|digits?|base|largest|smallest|greatest|least|maximum|minimum|prime|"
    "factors?|divisors?|multiples?|remainder|integers?"
)
ROUNDING_WORDS = re.compile(
    r"\b(?:round|rounded|rounding|nearest|approximately|roughly|estimate)\b|\\approx"
)


_DECIMAL = re.compile(r"-?\d+\.(\d+)")


@dataclass(frozen=True, slots=True)
class Finding:
    """One check that fired on a step, and why."""

    check: str
    reason: str


def close(a: float, b: float, written: str = "", rounding: bool = False) -> bool:
    """Equal up to float error, or up to the rounding a written decimal result implies."""
    tolerance = 1e-9 * max(1.0, abs(a), abs(b))
    decimals = _DECIMAL.fullmatch(written.strip()) if "." in written else None
    if decimals:
        tolerance = max(tolerance, 0.5 * 10 ** -len(decimals.group(1)) + 1e-12)
    elif rounding and b == int(b) and a != int(a):
        tolerance = max(tolerance, 1.0)
    return abs(a - b) <= tolerance


def fmt(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:.6g}"
