"""Checks on the words and plain-text arithmetic of a step: percentages, units, ``8 x 2 = 16``."""

from __future__ import annotations

import re
from functools import lru_cache

from prm.checks.base import ROUNDING_WORDS, Finding, close, fmt
from prm.features import STEP_CACHE_SIZE
from prm.latex import (
    DOLLAR,
    strip_math,
)

_NUM = r"(\d[\d,]*(?:\.\d+)?)"
BARE_PERCENT = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*\\?%\s*$")
_PERCENT_MENTION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:%|percent\b)\s*of\b[^.;]{0,40}?(?<![\d.])(\d[\d,]*(?:\.\d+)?)"
    r"([^;]{0,120})"
)
_ANY_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?")
_PERCENT = re.compile(
    _NUM + r"\s*(?:\\?%|percent)\s+of\s+(?:the\s+)?\$?\s*\\?\$?" + _NUM + r"\s*\$?\s*"
    r"(?:[a-z]+\s+){0,2}(?:is|are|=|equals|gives|would be|comes to)\s+\$?\\?\$?\s*"
    + _NUM
    + r"(?![\d,]|\.\d)(?!\s*[(\\*×·])"
)
_UNITS = {
    "second": ("time", 1),
    "minute": ("time", 60),
    "hour": ("time", 3600),
    "day": ("time", 86400),
    "week": ("time", 604800),
    "millimeter": ("length", 0.001),
    "centimeter": ("length", 0.01),
    "meter": ("length", 1),
    "kilometer": ("length", 1000),
    "inch": ("length", 0.0254),
    "inche": ("length", 0.0254),
    "foot": ("length", 0.3048),
    "feet": ("length", 0.3048),
    "yard": ("length", 0.9144),
    "mile": ("length", 1609.344),
    "gram": ("mass", 1),
    "kilogram": ("mass", 1000),
    "cent": ("money", 0.01),
    "dollar": ("money", 1),
    "ounce": ("mass", 28.349523125),
    "pound": ("mass", 453.59237),
}
_UNIT = r"(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")s?\b"
_CONVERSION = re.compile(
    r"(?<![\d.,])(?<![*×/+\-x]\s)(?<![*×/+\-x])"
    + _NUM
    + r"\s*"
    + _UNIT
    + r"\s*(?:is|are|=|equals|is equal to|is the same as|make|makes)\s+"
    r"(?:equal to\s+)?" + _NUM + r"\s*" + _UNIT
)
_PER = re.compile(
    r"\b(?:are|is)\s+" + _NUM + r"\s*" + _UNIT + r"\s+in\s+(?:a|an|one|1|" + _NUM + r")\s+" + _UNIT
)
# "8 feet + 2 feet = 10 feet": two numbers with their nouns, one operation, a result
_UNIT_WORD = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s+([a-z]{3,})\s*([-+*/])\s*(\d+(?:\.\d+)?)\s+([a-z]{3,})"
    r"\s*=\s*(\d+(?:\.\d+)?)(?![\d.]\d)"
)
_WORDS_IN_MATH = re.compile(r"\\(?:text|mbox|mathrm)\s*\{([^{}]*)\}")
_MATH_MARKS = re.compile(r"[$]|\\[,;!]|\\\(|\\\)|\\\[|\\\]")
_TIMES = re.compile(r"(?<=[\d\w])\s*[x×]\s*(?=[\d.])")


def plain_arithmetic(text: str) -> str:
    """A step's words, ready for the plain-text arithmetic check: no maths, no currency signs,
    ``8 x 2`` as ``8 * 2``, dashes as minus signs."""
    text = strip_math(text).replace(DOLLAR, " ").replace("$", " ")
    return _TIMES.sub(" * ", text.replace("–", "-").replace("—", "-"))


def worded_failures(text: str) -> list[str]:
    """``8 feet + 2 feet = 13 feet``: one operation on two numbers with their nouns."""
    out = []
    for m in _UNIT_WORD.finditer(text):
        a, noun_a, op, b, noun_b, result = m.groups()
        if noun_a.lower().rstrip("s") != noun_b.lower().rstrip("s"):
            continue  # 3 hours + 20 minutes, 1 teacher + 1 himself: not one quantity
        if re.search(r"[-+*/]\s*$", text[: m.start()]) or re.match(r"\s*[-+*/]", text[m.end() :]):
            continue  # the middle of a longer sum
        x, y = number_of(a), number_of(b)
        value = {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y else None}[op]
        if value is not None and not close(value, number_of(result), result):
            out.append(f"{a} {noun_a} {op} {b} {noun_b} = {result}")
    return out


def number_of(text: str) -> float:
    return float(text.replace(",", ""))


@lru_cache(maxsize=1 << 10)  # a step's words are read by its own check and by word_findings
def plain_text(text: str) -> str:
    if "\\" in text:
        text = _WORDS_IN_MATH.sub(r" \1 ", text)
    return _MATH_MARKS.sub(" ", text).replace("\\%", "%")


@lru_cache(maxsize=STEP_CACHE_SIZE)
def word_findings(text: str) -> list[Finding]:
    """``percent`` and ``units``: what the words and numbers of one step get wrong by themselves."""
    plain, found = plain_text(text), []
    percent = "%" in plain or "percent" in plain  # what both percentage patterns need
    for m in _PERCENT.finditer(plain) if percent else ():
        p, whole, result = (number_of(g) for g in m.groups())
        if not close(p * whole / 100, result, m.group(3), bool(ROUNDING_WORDS.search(plain))):
            reason = f"{m.group(1)}% of {m.group(2)} is {fmt(p * whole / 100)}, not {m.group(3)}"
            found.append(Finding("percent", reason))
    if percent and not found:  # "25% of 80 ... 2000": the product, never divided by 100
        for m in _PERCENT_MENTION.finditer(plain):
            p, w = number_of(m.group(1)), number_of(m.group(2))
            later = [number_of(n) for n in _ANY_NUMBER.findall(m.group(3))]
            if p in (0.0, 100.0) or w in (0.0, 1.0):
                continue
            if any(close(r, p * w) and not close(r, p * w / 100) for r in later):
                reason = f"{fmt(p * w)} is {fmt(p)} times {fmt(w)}, not {fmt(p)}% of it"
                found.append(Finding("percent", reason))
    if not any(map(plain.__contains__, _UNITS)):  # both unit patterns need a unit's name
        return found
    for m in _CONVERSION.finditer(plain):
        a, unit_a, b, unit_b = number_of(m[1]), m[2], number_of(m[3]), m[4]
        (kind_a, fa), (kind_b, fb) = _UNITS[unit_a], _UNITS[unit_b]
        if kind_a == kind_b and unit_a != unit_b and not close(a * fa / fb, b, m[3], True):
            found.append(Finding("units", f"{m[1]} {unit_a}s is {fmt(a * fa / fb)} {unit_b}s"))
    for m in _PER.finditer(plain):
        a, unit_a, count, unit_b = number_of(m[1]), m[2], m[3], m[4]
        (kind_a, fa), (kind_b, fb) = _UNITS[unit_a], _UNITS[unit_b]
        n = number_of(count) if count else 1.0
        if kind_a == kind_b and unit_a != unit_b and not close(n * fb / fa, a, m[1], True):
            found.append(Finding("units", f"{fmt(n)} {unit_b}(s) is {fmt(n * fb / fa)} {unit_a}s"))
    return found
