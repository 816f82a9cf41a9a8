"""The ``prm800k`` rule: an answer is right when PRM800K's reference grader would call it right.

PRM800K's labels were made against that grader (github.com/openai/prm800k,
``prm800k/grading/grader.py``), so a campaign of PRM800K's own solutions grades as it did. Its
semantics, written here as our own code:

1. **MATH's normalisation** (Hendrycks' ``math_equivalence``) of both sides, compared as
   strings (:func:`math_form`): a ``\\text{}`` wrapper around everything, units after
   ``\\text{ `` , ``\\left``/``\\right``, ``^\\circ``, ``\\$``, ``\\%``, spaces and ``\\!`` go;
   ``\\dfrac``/``\\tfrac`` are ``\\frac``, ``\\frac12`` is ``\\frac{1}{2}``, ``\\sqrt2`` is
   ``\\sqrt{2}``, ``.5`` is ``0.5`` and ``0.5`` is ``\\frac{1}{2}``, ``a/b`` is
   ``\\frac{a}{b}``, ``k = 5`` is ``5``.
2. **The grader's own normalisation** (:func:`plain_form`), compared as strings: dollars,
   percent signs and units (degrees, cm, hours, ...) dropped, ``million`` is ``*10^6``,
   ``or``/``and`` are commas, ``5.0`` is ``5``, LaTeX read as text (``latex_text``), mixed
   numbers (``7 3/4``) added up, spaces and braces dropped, lower case, ``28,800`` is ``28800``.
3. **Element by element** (:func:`compare`): a tuple or interval (brackets around, none inside)
   is split at its commas, and its brackets must match the truth's; then each element in order:
   two fractions ``a/b`` must be the same string (``6/10`` is not ``3/5``), an integer equals
   only an integer (``2^9 + 2`` is not ``514``), and anything else is equal when sympy
   simplifies the difference to 0, **only** for what the grader let sympy see: at most two
   distinct letters, no ``^{``, ``^(``, ``^12`` or ``^2^``.

What the reference did not bound (sympy's ``simplify``) is bounded here as everything else is:
the text by ``bounds.text_refusal``, the parsed difference by ``bounds.expression_refusal``,
and it runs in a grading worker (``workers``); a difference outside the bounds is undecided.
Words and clock times are decided before any of this (``readings``), as under the other rule.

Nothing here imports sympy at module level: the web process may normalise.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from labeling.grading.bounds import Limits, expression_refusal, text_refusal
from labeling.grading.latex_text import Unreadable, latex_text

# -- 1. MATH's normalisation ---------------------------------------------------------------------

_ENCLOSING_TEXT = re.compile(r"^\\text\{(?P<text>.+?)\}$")


def math_form(answer: str) -> str:
    """``answer`` as MATH's answer normalisation writes it; the answer itself (stripped) where
    that normalisation fails (two unit wrappers, a ``\\sqrt`` at the end)."""
    answer = answer.strip()
    if m := _ENCLOSING_TEXT.search(answer):
        answer = m.group("text").strip()
    try:
        return _math_form(answer)
    except _Unnormalisable:
        return answer


class _Unnormalisable(ValueError):
    pass


def _math_form(s: str) -> str:
    s = s.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("\\$", "")
    if "\\text{ " in s:  # a unit, always on the right in MATH
        parts = s.split("\\text{ ")
        if len(parts) != 2:
            raise _Unnormalisable(s)
        s = parts[0]
    s = s.replace("\\%", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # "k = 5"
        s = sides[1]
    s = _braced_sqrt(s).replace(" ", "")
    s = _braced_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _slash_as_frac(s)


def _braced_sqrt(s: str) -> str:
    """``\\sqrt3`` -> ``\\sqrt{3}`` (one character)."""
    head, *rest = s.split("\\sqrt")
    out = [head]
    for part in rest:
        if not part:
            raise _Unnormalisable(s)
        out.append("\\sqrt" + (part if part[0] == "{" else "{" + part[0] + "}" + part[1:]))
    return "".join(out)


def _braced_fracs(s: str) -> str:
    """``\\frac12`` -> ``\\frac{1}{2}``, ``\\frac1{72}`` -> ``\\frac{1}{72}``; the string as it
    was when a ``\\frac`` has fewer than two characters after it."""
    head, *rest = s.split("\\frac")
    out = [head]
    for part in rest:
        out.append("\\frac")
        if part.startswith("{"):
            out.append(part)
            continue
        if len(part) < 2:
            return s
        a, b, tail = part[0], part[1], part[2:]
        out.append("{" + a + "}" + (b + tail if b == "{" else "{" + b + "}" + tail))
    return "".join(out)


def _slash_as_frac(s: str) -> str:
    """``3/5`` -> ``\\frac{3}{5}``, only for two plain integers written plainly."""
    parts = s.split("/")
    if len(parts) == 2 and all(re.fullmatch(r"-?\d+", p) for p in parts):
        a, b = (int(p) for p in parts)
        if s == f"{a}/{b}":
            return f"\\frac{{{a}}}{{{b}}}"
    return s


# -- 2. the grader's own normalisation -----------------------------------------------------------

_UNITS = (
    "degree cm centimeter meter mile second minute hour day week month year foot feet inch yard"
).split()
_UNIT_PATTERNS = [re.compile(rf"{unit}(es)?(s)? *(\^[0-9]+)?") for unit in _UNITS]
_PROPER_COMMAS = re.compile(r"(\d)(,)(\d\d\d)($|\D)")
_READ_AS = {"√": "sqrt", "π": "pi", "∞": "inf", "∪": "U", "·": "*", "×": "*"}


def plain_form(answer: str) -> str:
    """``answer`` as the reference grader normalised it before comparing (see the docstring)."""
    s = answer
    if m := _ENCLOSING_TEXT.search(s):
        s = m.group("text")
    s = s.replace("\\%", "%").replace("\\$", "$").replace("$", "").replace("%", "")
    s = s.replace(" or ", " , ").replace(" and ", " , ")
    s = s.replace("million", "*10^6").replace("billion", "*10^9").replace("trillion", "*10^12")
    for unit in _UNIT_PATTERNS:  # one after the other, as the reference did
        s = unit.sub("", s)
    s = re.sub(r"\^ *\\circ", "", s)
    if s[:1] == "{" and s[-1:] == "}":
        s = s[1:-1]
    s = re.sub(r",\\! *", "", s)
    if (number := _float(s)) is not None and _whole(number):
        s = str(round(number))
    if "\\" in s:
        s = _latex_as_text(s)
    s = re.sub(r"- *", "-", s)
    s = re.sub(r"([0-9]) +([0-9])", r"\1+\2", s)  # 7 3/4 is 7+3/4
    s = s.replace(" ", "").replace("{", "").replace("}", "").lower()
    if _is_integer_text(s):
        s = str(int(float(s.replace(",", ""))))
    return s


def _latex_as_text(s: str) -> str:
    """LaTeX as the text the reference handed to sympy; as it was when unreadable."""
    latex = s.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac")
    latex = latex.replace("\\frac", " \\frac")  # a mixed number: 3\frac12 is 3 1/2
    try:
        text = latex_text(latex)
    except Unreadable:
        return s
    for symbol, name in _READ_AS.items():
        text = text.replace(symbol, name)
    return text.strip()


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _whole(x: float) -> bool:
    try:
        return abs(x - round(x)) <= 1e-7
    except (OverflowError, ValueError):  # inf, nan
        return False


def _is_integer_text(s: str) -> bool:
    number = _float(_without_proper_commas(s))
    return number is not None and _whole(number)


def _without_proper_commas(s: str) -> str:
    """``28,800`` -> ``28800``, leaving the commas of a tuple (``(1,2)``) alone."""
    while (next_s := _PROPER_COMMAS.sub(r"\1\3\4", s)) != s:
        s = next_s
    return s


# -- 3. element by element -----------------------------------------------------------------------

_BRACKETS = "()[]"
_FRACTION = re.compile(r"^-?[0-9]+.?/0*[1-9][0-9]*.?$")
_BAD_POWERS = re.compile(r"\^\{|\^\(|\^[0-9]+\^|\^[0-9][0-9]+")


def elements(form: str) -> list[str]:
    """The elements of a normalised tuple or interval; ``[form]`` for anything else."""
    form = _without_proper_commas(form)
    if not form:
        return []
    inner = form[1:-1]
    if (
        len(form) > 2
        and form[0] in _BRACKETS
        and form[-1] in _BRACKETS
        and not any(ch in inner for ch in _BRACKETS)
    ):
        return [element.strip() for element in inner.split(",")]
    return [form]


def may_evaluate(difference: str) -> bool:
    """Whether the reference grader let sympy see this difference: at most two distinct letters
    (``sqrt`` and ``frac`` aside) and no powers it feared would hang."""
    letters = {ch for ch in difference.replace("sqrt", "").replace("frac", "") if ch.isalpha()}
    return len(letters) <= 2 and not _BAD_POWERS.search(difference)


# (truth element, answer element) -> equal, or None when too big to decide
SympyEqual = Callable[[str, str], bool | None]


def compare(answer: str, truth: str, sympy_equal: SympyEqual) -> bool | None:
    """Whether ``answer`` equals ``truth`` under PRM800K's rule. ``sympy_equal`` is asked only
    about elements the reference let sympy see; its ``None`` makes the pair undecided."""
    if math_form(truth) == math_form(answer):
        return True
    truth_form, answer_form = plain_form(truth), plain_form(answer)
    if truth_form == answer_form:
        return True
    if not answer_form:
        return False
    truth_elements, answer_elements = elements(truth_form), elements(answer_form)
    if len(truth_elements) > 1 and (
        truth_form[0] != answer_form[0] or truth_form[-1] != answer_form[-1]
    ):
        return False  # (1, 2] against [1, 2], or 1,2 against (1, 2)
    if len(truth_elements) != len(answer_elements):
        return False
    for truth_element, answer_element in zip(truth_elements, answer_elements, strict=True):
        if _FRACTION.search(truth_element) and _FRACTION.search(answer_element):
            equal: bool | None = truth_element == answer_element  # 6/10 is not 3/5
        elif _is_integer_text(truth_element) != _is_integer_text(answer_element):
            equal = False  # 2^9+2 is not 514
        elif not may_evaluate(f"({truth_element})-({answer_element})"):
            equal = False
        else:
            equal = sympy_equal(truth_element, answer_element)
        if equal is not True:
            return equal
    return True


# -- inside a worker: sympy ----------------------------------------------------------------------


def sympy_equal_bounded(limits: Limits) -> SympyEqual:
    """A ``SympyEqual`` that parses the difference as the reference did (``^`` as a power,
    implicit multiplication), unevaluated, measures it against ``limits`` (``bounds.Limits``)
    and only then simplifies it. Imports sympy: call it in a worker."""
    from sympy import simplify
    from sympy.parsing import sympy_parser

    transformations = (
        *sympy_parser.standard_transformations,
        sympy_parser.implicit_multiplication_application,
    )

    def equal(truth: str, answer: str) -> bool | None:
        difference = f"({truth})-({answer})"
        if text_refusal(difference, limits):
            return None
        try:
            expr = sympy_parser.parse_expr(
                difference.replace("^", "**"), transformations=transformations, evaluate=False
            )
        except Exception:  # text sympy cannot read is unequal, as it was there
            return False
        if expression_refusal(expr, limits):
            return None
        try:
            return bool(simplify(expr) == 0)
        except Exception:  # (1,2)-(2,1) and the like: unequal, as it was there
            return False

    return equal
