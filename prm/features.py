"""Text features shared by the backbones: tokens, hashed n-grams and structural cues of a step.

What we learnt on PRM800K phase 1 (held-out problems, see README "The PRM"): the words of the
problem and of previous steps let a model memorise each training problem's error rate, which does
not carry over to new problems. What does carry over are *relations* and *coarse* facts: where the
step sits in the solution, whether its arithmetic checks out, how many numbers it introduces that
the problem and previous steps do not contain, how much it repeats the previous step, whether it
states the final answer, and how long and how mathematical the problem is. Those are the
"structural" tokens below; every backbone can use them.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from prm.latex import PLAIN_NUMBER

# Bump when tokens or structural tokens change: a checkpoint's weights only mean something with
# the features it was trained on, and loading refuses a mismatch rather than scoring garbage.
# 3: the exact checks of prm.checks (``bow`` option ``checks``; a version 2 model is one without).
FEATURES_VERSION = 3

# Texts each per-step cache keeps (``step_facts``, the checks' ``read_step`` and
# ``word_findings``): steps seldom repeat beyond a problem and the solutions that come with it. On
# 30,000 synthetic solutions, caches 8 and 16 times as large found 1-2% more of their texts, and
# cost 150 MB more in each featurising process and, with two of them on this 2-core machine,
# about 11% more CPU (their evictions scatter memory the two processes compete for).
STEP_CACHE_SIZE = 1 << 12

# Keeps single characters and symbols (`x`, `2`, `=`, `$`): sklearn's default pattern drops them
# and loses about 0.04 AUROC on this data.
TOKEN_RE = re.compile(r"\b\w+\b|[^\w\s]")
NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
_DIGIT = re.compile(r"\d")
# A number (or a closing bracket) before "=" and a number, sign, bracket or command after it:
# the cheap test that most steps fail before the real parse.
_NUMERIC_EQUATION = re.compile(r"[\d)}]\s*=\s*[-\d(\\{$]")


def clean(text: str) -> str:
    """One line of text: MiniLM's tokenizer drops newlines, so words across them would merge."""
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text.lower())


def stable_hash(token: str) -> int:
    """A hash that is the same in every process (Python's ``hash`` is salted per process)."""
    return zlib.crc32(token.encode("utf-8"))


# -- arithmetic --------------------------------------------------------------------------------

_OPS: dict[type[ast.operator | ast.unaryop], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(\d),(\d{3})(?!\d)")
_RUN = re.compile(r"[0-9.\s+\-*/()=]+")
_DECIMAL = re.compile(r"-?\d+\.(\d+)")
_REPLACE = (
    ("$", " "),
    ("\\(", " "),
    ("\\)", " "),
    ("\\[", " "),
    ("\\]", " "),
    ("\\left", ""),
    ("\\right", ""),
    ("\\,", ""),
    ("\\!", ""),
    ("\\times", "*"),
    ("\\cdot", "*"),
    ("×", "*"),
    ("·", "*"),
    ("\\div", "/"),
    ("÷", "/"),
    ("^", "**"),
    ("\\%", "*0.01"),
    ("%", "*0.01"),
    ("−", "-"),
)


def _binary(op: type[ast.operator], left: float, right: float) -> float:
    if op is ast.Pow and (abs(right) > 64 or abs(left) > 1e6):
        raise ValueError("power too large to check cheaply")
    return _OPS[op](left, right)


def _evaluate_node(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _binary(type(node.op), _evaluate_node(node.left), _evaluate_node(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate_node(node.operand))
    raise ValueError("not plain arithmetic")


# One operation on two numbers as written (``60 * 7``, ``3**2``): half the parts that are not a
# number alone, evaluated as the tree of ``ast.parse`` would be (an int where no point is written).
# Spaces and tabs only around the operator: ast.parse refuses a line break there.
_TWO_NUMBERS = re.compile(
    rf"({PLAIN_NUMBER.pattern})[ \t\f]*(\*\*|[-+*/])[ \t\f]*({PLAIN_NUMBER.pattern})"
)
_OPERATOR = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "**": ast.Pow}


def _literal(number: str) -> float:
    return float(number) if "." in number else int(number)


def _evaluate(expression: str) -> float | None:
    # a stated result before the full stop ("= 8 .") keeps a space when the stop goes
    expression = expression.strip().rstrip(".").rstrip()
    if PLAIN_NUMBER.fullmatch(expression):  # most parts: what ast.parse would read, directly
        return float(expression)
    if not _DIGIT.search(expression):
        return None
    try:
        two = _TWO_NUMBERS.fullmatch(expression)
        if two:
            left, op, right = two.groups()
            return float(_binary(_OPERATOR[op], _literal(left), _literal(right)))
        value = _evaluate_node(ast.parse(expression, mode="eval").body)
        return float(value)
    except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, TypeError, RecursionError):
        return None


def _to_python_arithmetic(text: str) -> str:
    for old, new in _REPLACE:
        text = text.replace(old, new)
    if "," in text:
        text = _THOUSANDS.sub(r"\1\2", text)
    if "frac" in text or "sqrt" in text:  # each pattern's own letters (most steps have neither)
        for _ in range(3):  # nested \frac / \sqrt, innermost first
            text = _FRAC.sub(r"((\1)/(\2))", text)
            text = _SQRT.sub(r"((\1)**0.5)", text)
    return text.replace("{", "(").replace("}", ")")


def arithmetic_check(text: str) -> tuple[int, int]:
    """(equalities that hold, equalities that do not) among the step's purely numeric equations.

    Checks chains like ``60 * 7 = 420`` or ``$\\frac{3}{4} \\cdot 8 = 6$`` and skips anything that
    touches a variable (``2x + 3 = 7``) or an unknown operator. A stated result is allowed its own
    rounding (``22/7 = 3.14``) and an integer result may be a floor or a rounding. On PRM800K phase
    1 about 1% of steps have a failing equation, and 89% of those were rated negative (37% overall).
    """
    good = bad = 0
    for _, holds in _numeric_links(text):
        if holds:
            good += 1
        else:
            bad += 1
    return good, bad


def arithmetic_failures(text: str) -> list[str]:
    """The numeric equations of ``arithmetic_check`` that do not hold, as written (normalised)."""
    return [run for run, holds in _numeric_links(text) if not holds]


def arithmetic_results(text: str) -> list[float]:
    """The value each numeric equation of ``arithmetic_check`` arrives at (its last part)."""
    out = []
    for run, holds in _numeric_links(text):
        value = _evaluate(run.split("=")[-1])
        if holds and value is not None:
            out.append(value)
    return out


@lru_cache(maxsize=1 << 12)
def _numeric_links(text: str) -> tuple[tuple[str, bool], ...]:
    # Cached: the checks ask for a step's failures and results of the same text in turn.
    if "=" not in text or not _NUMERIC_EQUATION.search(text):
        return ()
    t = _to_python_arithmetic(text)
    out = []
    for match in _RUN.finditer(t):
        start, end = match.span()
        while start < end and t[start].isspace():
            start += 1
        while end > start and t[end - 1].isspace():
            end -= 1
        run = t[start:end]
        if "=" not in run or run[0] in "+*/=)" or run[-1] in "+-*/=(":
            continue
        before = t[start - 1] if start else " "
        after = t[end] if end < len(t) else " "
        if before.isalnum() or before in "\\_)]}!|^#@" or after.isalnum() or after in "\\_([{!^":
            continue
        if run[0] == "-":  # `x - 1 = 0`: the minus belongs to an expression with a variable
            k = start - 1
            while k >= 0 and t[k].isspace():
                k -= 1
            if k >= 0 and (t[k].isalnum() or t[k] in ")]}!"):
                continue
        parts = run.split("=")
        values = [_evaluate(p) for p in parts]
        for left, right, right_text in zip(values, values[1:], parts[1:], strict=False):
            if left is None or right is None:
                continue
            decimals = _DECIMAL.fullmatch(right_text.strip().rstrip("."))
            if decimals:
                tolerance = 0.5 * 10 ** -len(decimals.group(1))
            elif right == int(right) and left != int(left):
                tolerance = 1.0
            else:
                tolerance = 0.0
            holds = abs(left - right) <= tolerance + 1e-9 * max(1.0, abs(left), abs(right))
            out.append((" ".join(run.split()), holds))
    return tuple(out)


# -- structural tokens ---------------------------------------------------------------------------


def _bucket(x: float, edges: Sequence[float]) -> int:
    for i, edge in enumerate(edges):
        if x < edge:
            return i
    return len(edges)


@dataclass(frozen=True, slots=True)
class StepFacts:
    """What the structural tokens need from one step's text, computed once per distinct text."""

    tokens: tuple[str, ...]
    token_set: frozenset[str]
    numbers: tuple[str, ...]
    arithmetic: tuple[int, int]
    answer: bool
    equals: int
    dollars: int
    end: str


@lru_cache(maxsize=STEP_CACHE_SIZE)
def step_facts(text: str) -> StepFacts:
    # Cached: a problem's text comes back with each of its solutions, and repeated steps with it.
    toks = tokens(text)
    return StepFacts(
        tokens=tuple(toks),
        token_set=frozenset(toks),
        numbers=tuple(NUMBER_RE.findall(text)),
        arithmetic=arithmetic_check(text),
        answer="# Answer" in text or "\\boxed" in text,
        equals=text.count("="),
        dollars=text.count("$"),
        end=text.rstrip()[-1:] if text.rstrip()[-1:] in ".?$]!:" else "",
    )


_POSITIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 24, 32)

# SolutionContext.structural_key: position, length, first token, end, equals signs, maths,
# problem length, problem maths, arithmetic, numbers, new numbers, words in the problem, answer,
# numbers from the previous step, numbers given, overlap with the previous step.
StructuralKey = tuple[
    int,
    int,
    str,
    str,
    int,
    int,
    int,
    int,
    str,
    int,
    int,
    int,
    bool,
    int | None,
    int | None,
    int | None,
]


class SolutionContext:
    """Facts about a problem and the steps so far, built up step by step while scoring one."""

    def __init__(self, problem: str) -> None:
        facts = step_facts(problem)
        self.numbers = set(facts.numbers)
        self.problem_words = facts.token_set
        self.problem_length = int(math.log2(len(facts.tokens) + 1))
        self.problem_math = _bucket(
            problem.count("$") // 2 + problem.count("\\"), (1, 2, 4, 6, 10, 16)
        )
        self.problem_numbers = frozenset(facts.numbers)
        self.previous_words: frozenset[str] = frozenset()
        self.previous_numbers: frozenset[str] = frozenset()
        self.position = 0

    def structural(self, facts: StepFacts) -> list[str]:
        """Coarse tokens for one step given what came before it (never what comes after)."""
        return structural_tokens(self.structural_key(facts))

    def structural_key(self, facts: StepFacts) -> StructuralKey:
        """What the structural tokens of one step say, as a tuple (``structural_tokens`` writes
        them out): steps with the same key have the same tokens, so a featuriser can keep their
        ids by key instead of writing and hashing the tokens of every step."""
        good, bad = facts.arithmetic
        words = facts.token_set
        numbers = facts.numbers
        from_previous = given = overlap = None
        if numbers:
            from_previous = min(sum(1 for n in numbers if n in self.previous_numbers), 3)
            share = sum(1 for n in numbers if n in self.problem_numbers) / len(numbers)
            given = 0 if share == 0 else 2 if share == 1 else 1
        if self.position:
            union = len(words | self.previous_words)
            overlap = int(len(words & self.previous_words) / max(1, union) * 5)
        return (
            _bucket(self.position, _POSITIONS),
            int(math.log2(len(facts.tokens) + 1)),
            facts.tokens[0] if facts.tokens else "",
            facts.end,
            min(facts.equals, 4),
            min(facts.dollars // 2, 4),
            self.problem_length,
            self.problem_math,
            "bad" if bad else "ok" if good else "none",
            min(len(numbers), 5),
            min(sum(1 for n in numbers if n not in self.numbers), 5),
            int(len(words & self.problem_words) / max(1, len(words)) * 5),
            facts.answer,
            from_previous,
            given,
            overlap,
        )

    def advance(self, facts: StepFacts) -> None:
        self.numbers.update(facts.numbers)
        self.previous_words = facts.token_set
        self.previous_numbers = frozenset(facts.numbers)
        self.position += 1


def structural_tokens(key: StructuralKey) -> list[str]:
    """The structural tokens of a step from its ``SolutionContext.structural_key``."""
    pos, length, first, end, eqs, dollars, plen, pmath, arith, nums, new, inproblem = key[:12]
    answer, from_previous, given, overlap = key[12:]
    out = [
        f"pos:{pos}",
        f"len:{length}",
        f"first:{first}",
        f"end:{end}",
        f"eqs:{eqs}",
        f"math:{dollars}",
        f"plen:{plen}",
        f"pmath:{pmath}",
        f"arith:{arith}",
        f"nums:{nums}",
        f"newnums:{new}",
        f"inproblem:{inproblem}",
    ]
    if answer:
        out.append("answer")
    if from_previous is not None:
        out.append(f"fromprev:{from_previous}")
        out.append(f"given:{given}")
    if overlap is not None:
        out.append(f"prevoverlap:{overlap}")
    return out
