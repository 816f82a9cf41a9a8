"""Reading the mathematics of a step: LaTeX spans, equation chains, expressions to evaluate.

The checks in ``prm.checks`` need, for every equation a step states, its parts as expressions
they can evaluate at numbers. Most of what PRM800K and MATH solutions write (``2x + 3``,
``\\frac{7}{2}``, ``3^{4}``, ``\\sqrt{16}``) is translated here directly into a small Python
expression whose syntax tree is made into closures once and evaluated with bounded operations
(microseconds). What the translator does not know (``\\binom``, ``5!``, ``|x|``, ``\\sin``,
``\\lfloor``) goes through the LaTeX parser that math-verify brings (``latex2sympy2_extended``,
i.e. sympy) and comes back as the same kind of expression. Every operation is bounded by size,
never by time
(so a step gets the same findings on an idle machine and a busy one): a part is at most
``MAX_PART_LENGTH`` characters, evaluation bounds exponents, factorials, binomials and
magnitudes, and the parser gets only what it reads cheaply: at most ``MAX_FALLBACK_LENGTH``
characters, LaTeX commands from ``_FALLBACK_COMMANDS``, and none of the constructs it would
compute while parsing (large binomial coefficients, substitutions ``|_{x=...}``), see
:func:`fallback_refusal`.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

MAX_EXPONENT = 64
MAX_FACTORIAL = 60
MAX_MAGNITUDE = 1e60
MAX_PART_LENGTH = 160
MAX_FALLBACK_LENGTH = 60
MAX_FALLBACK_DIGITS = 6  # digits of a number given to latex2sympy (4 in real steps)
# latex2sympy computes a binomial coefficient as it parses (\binom{10^6}{5*10^5}: 91 s)
MAX_BINOMIAL_DIGITS = 3

_SPAN = re.compile(
    r"\$\$(.+?)\$\$|\$(.+?)\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|"
    r"\\begin\{(?:align|equation|eqnarray|gather|multline)\*?\}(.+?)\\end\{"
    r"(?:align|equation|eqnarray|gather|multline)\*?\}",
    re.S,
)
_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3})((?:,\d{3})+)(?![\d])")
DOLLAR = "\x01"  # an escaped dollar sign, so that it neither opens maths nor vanishes
_MIXED = re.compile(r"(?<![\d.])(\d+)\s*(\\[dt]?frac\s*\{\d+\}\s*\{\d+\})")
_TEXT = re.compile(r"\\(?:text|textbf|mbox|mathrm|operatorname|textnormal)\s*\{([^{}]*)\}")
# Anything that makes an expression more than arithmetic and algebra we can evaluate here.
_UNSUPPORTED = re.compile(
    r"\\(?:sum|prod|int|lim|infty|cdots|ldots|dots|vdots|ddots|begin|end|overline|vec|angle|"
    r"triangle|deg|in|subset|cup|cap|to|mapsto|pmod|bmod|mod|equiv|cong|sim|parallel|perp|"
    r"approx|pm|mp|neq|ne|le|ge|leq|geq|lt|gt|not|pmatrix|matrix|det|sqrt\[|log|ln|exp|sin|cos|"
    r"tan|cot|sec|csc|arcsin|arccos|arctan|binom|choose|lfloor|rfloor|lceil|rceil|overset|"
    r"underbrace|hat|bar|max|min|gcd|lcm)\b|[<>|!'\"?:;]|\\\{|\\\}"
)
# What latex2sympy may take instead (a subset of the above that it reads reliably).
# (Not trigonometry: degrees or radians is anyone's guess.)
# What the translator reads itself, though _UNSUPPORTED lists it: 5!, \binom{5}{2}, |x - 3|,
# \lfloor x \rfloor (anything else with these symbols goes to latex2sympy).
_OWN = re.compile(
    r"(?<![\w)}])\d+!|\\[dt]?binom|\\lfloor|\\rfloor|\\lceil|\\rceil|"
    r"(?<![|\\])\|(?=[^|]+\|)[^|]+\|"
)
_NOT_FOR_FALLBACK = re.compile(
    r"\\(?:sum|int|lim|begin|infty|mathbf|bold|boldsymbol|vec|overline|gcd|lcm|sin|cos|tan|"
    r"angle|lvert|rvert|\|)"
)
_FALLBACK_ONLY = re.compile(r"\\(?:binom|lfloor|lceil|log|ln)\b|!|\|")
# The commands latex2sympy may see: those of real steps that reach it (PRM800K phase 1, the
# corruption suite's sources) and Greek letters. Not \Gamma or \gamma (the Gamma function,
# computed as it parses), \det or \operatorname (matrix algebra).
_FALLBACK_COMMANDS = frozenset(
    "frac dfrac tfrac sqrt lfloor rfloor lceil rceil log ln cdot times div left right big Big "
    "bigg Bigg pi binom dbinom tbinom choose dots dotsm ldots cdots end alpha beta delta Delta "
    "epsilon varepsilon zeta eta theta vartheta Theta iota kappa lambda Lambda mu nu xi Xi rho "
    "sigma Sigma tau upsilon phi varphi Phi chi psi Psi omega Omega".split()
)
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+)")
_BINOMIAL = re.compile(r"\\[dt]?binom(?![A-Za-z])|\\choose(?![A-Za-z])")
_SUBSTITUTION = re.compile(r"\|\s*_")  # \left. f(x) \right|_{x=2}: latex2sympy substitutes

_FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": lambda x: _check(math.sqrt(x)),
    "factorial": lambda x: _factorial(x),
    "binomial": lambda n, k: _binomial(n, k),
    "Abs": abs,
    "floor": math.floor,
    "ceiling": math.ceil,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "log": lambda x, b=None: math.log(x) if b is None else math.log(x, b),
}
_CONSTANTS = {"pi": math.pi}
_OPS: dict[type[ast.operator | ast.unaryop], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


class Unevaluable(ValueError):
    """The expression cannot be evaluated cheaply and exactly enough here: the check says
    "unknown"."""


def _check(value: float) -> float:
    if isinstance(value, complex) or value != value or abs(value) > MAX_MAGNITUDE:
        raise Unevaluable("out of range")
    return value


def _factorial(x: float) -> float:
    if x != int(x) or not 0 <= x <= MAX_FACTORIAL:
        raise Unevaluable("factorial out of range")
    return float(math.factorial(int(x)))


def _binomial(n: float, k: float) -> float:
    if n != int(n) or k != int(k) or not 0 <= n <= 200:
        raise Unevaluable("binomial out of range")
    return float(math.comb(int(n), int(k)))


def _power(base: float, exponent: float) -> float:
    if abs(exponent) > MAX_EXPONENT or (abs(base) > 1e6 and abs(exponent) > 4):
        raise Unevaluable("power too large to check")
    if base < 0 and exponent != int(exponent):
        raise Unevaluable("complex power")
    if base == 0 and exponent < 0:
        raise Unevaluable("division by zero")
    return _check(float(base) ** exponent)


@dataclass(frozen=True, slots=True)
class Expr:
    """One side of an equation, ready to evaluate: ``symbols`` are its free variables."""

    text: str
    tree: ast.AST
    symbols: frozenset[str]
    numbers: tuple[str, ...]  # the literal numbers as written (for rounding tolerances)
    units: frozenset[str] = frozenset()  # words in \\text{...} (and dollars): "3 feet" is not 3
    percent: bool = False
    # ``tree`` made into nested closures once (``_compile``): the checks evaluate one side at
    # several points (identities, solving), and walking the tree each time was most of it.
    evaluate: Callable[[dict[str, float]], float] | None = field(
        default=None, compare=False, repr=False
    )

    def value(self, env: dict[str, float] | None = None) -> float:
        evaluate = self.evaluate or _compile(self.tree)
        return _check(float(evaluate(env or {})))


def _compile(node: ast.AST) -> Callable[[dict[str, float]], float]:
    """The tree's value at ``env`` as nested closures, its node types decided once: constants,
    ``+ - * /`` and bounded powers, variables from ``env``, the functions of ``_FUNCTIONS``;
    anything else is :class:`Unevaluable` (raised when evaluated, after the operands that come
    first, as a walk of the tree would)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        constant = float(node.value)
        return lambda env: constant
    if isinstance(node, ast.BinOp):
        left, right = _compile(node.left), _compile(node.right)
        if isinstance(node.op, ast.Pow):
            return lambda env: _power(left(env), right(env))
        op = _OPS.get(type(node.op))
        if op is None:
            return _refuse(node, ("left", "right"), "operator")
        if isinstance(node.op, ast.Div):

            def divide(env: dict[str, float]) -> float:
                a, b = left(env), right(env)
                if b == 0:
                    raise Unevaluable("division by zero")
                return _check(op(a, b))

            return divide
        return lambda env: _check(op(left(env), right(env)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        unary, operand = _OPS[type(node.op)], _compile(node.operand)
        return lambda env: unary(operand(env))
    if isinstance(node, ast.Name):
        name = node.id

        def lookup(env: dict[str, float]) -> float:
            if name in env:
                return env[name]
            if name in _CONSTANTS:
                return _CONSTANTS[name]
            raise Unevaluable(f"unknown {name}")

        return lookup
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is None:
            return _refuse(node, (), f"function {node.func.id}")
        arguments = [_compile(a) for a in node.args]

        def call(env: dict[str, float]) -> float:
            try:
                return _check(float(function(*(a(env) for a in arguments))))
            except (ValueError, OverflowError, TypeError, ZeroDivisionError) as error:
                raise Unevaluable(str(error)) from None

        return call
    return _refuse(node, (), "not arithmetic")


def _refuse(
    node: ast.AST, first: tuple[str, ...], reason: str
) -> Callable[[dict[str, float]], float]:
    """A node that cannot be evaluated: its ``first`` operands are, then it refuses."""
    operands = [_compile(getattr(node, name)) for name in first]

    def refuse(env: dict[str, float]) -> float:
        for operand in operands:
            operand(env)
        raise Unevaluable(reason)

    return refuse


def _free(node: ast.AST) -> frozenset[str]:
    """The tree's variables (names that are neither constants nor functions): ``ast.walk``'s
    Name nodes, with the node types every expression is made of followed without its
    generic field iteration."""
    names = set()
    stack = [node]
    while stack:
        sub = stack.pop()
        kind = type(sub)
        if kind is ast.Name:
            if sub.id not in _CONSTANTS and sub.id not in _FUNCTIONS:  # type: ignore[attr-defined]
                names.add(sub.id)  # type: ignore[attr-defined]
        elif kind is ast.BinOp:
            stack += (sub.left, sub.right)  # type: ignore[attr-defined]
        elif kind is ast.UnaryOp:
            stack.append(sub.operand)  # type: ignore[attr-defined]
        elif kind is not ast.Constant:
            stack += ast.iter_child_nodes(sub)
    return frozenset(names)


# -- spans and chains ------------------------------------------------------------------------------


def math_spans(text: str) -> list[str]:
    """The LaTeX math of a step (``$...$``, ``$$...$$``, ``\\[...\\]``, ``\\(...\\)``), in order."""
    text = text.replace("\\$", DOLLAR).replace("\\!", "")
    return [next(g for g in m.groups() if g is not None) for m in _SPAN.finditer(text)]


def strip_math(text: str) -> str:
    """The step without its LaTeX math (plain-text equations such as ``60 * 7 = 420`` stay)."""
    return _SPAN.sub(" ; ", text.replace("\\$", DOLLAR))


def _top_level_split(text: str, separators: str) -> list[str]:
    if not any(ch in text for ch in separators):
        return [text]
    if len(separators) == 1 and not any(ch in text for ch in "({[)}]"):
        return text.split(separators)  # every separator at depth 0
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch in separators and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


_CLAUSE = re.compile(
    r"\\(?:quad|qquad|implies|Rightarrow|Longrightarrow|therefore|Leftrightarrow|iff|text\s*\{"
    r"\s*(?:and|or|so|thus|then|hence|since|where|if|which|gives)\b[^{}]*\})|\\\\|;|&"
)
ALTERNATIVES = re.compile(r"\\pm|\\mp|\bor\b|\\text\s*\{\s*or\s*\}|\\vee|\bcases?\b")


def clauses(span: str) -> list[str]:
    """Pieces of a math span that state one thing each (``a = b \\quad c = d``, ``x=1, y=2``)."""
    if "," in span:
        span = _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), span)
    out = []
    pieces = _CLAUSE.split(span) if "\\" in span or ";" in span or "&" in span else [span]
    for piece in pieces:
        out += [p for p in _top_level_split(piece, ",") if p.strip()]
    return out


def chain(clause: str) -> list[str] | None:
    """The parts of ``a = b = c``; None when the clause is no equation or mixes in relations."""
    if "=" not in clause or _RELATION.search(clause):
        return None
    parts = [p.strip() for p in _top_level_split(clause, "=")]
    if len(parts) < 2 or any(not p for p in parts):
        return None
    return parts


# -- translation -----------------------------------------------------------------------------------

_SIMPLE = (
    ("\\left", ""),
    ("\\right", ""),
    ("\\displaystyle", ""),
    ("\\!", ""),
    ("\\,", " "),
    ("\\;", " "),
    ("\\:", " "),
    ("\\ ", " "),
    ("~", " "),
    ("\\$", " "),
    (DOLLAR, " "),
    ("\\times", "*"),
    ("\\cdot", "*"),
    ("\\ast", "*"),
    ("×", "*"),
    ("·", "*"),
    ("\\div", "/"),
    ("÷", "/"),
    ("−", "-"),
    ("\\%", "*(1/100)"),
    ("%", "*(1/100)"),
    ("\\pi", " pi "),
    ("^\\circ", ""),
    ("^{\\circ}", ""),
)
_COMMAND = re.compile(r"\\[dt]?frac|\\sqrt|\\[dt]?binom")
_ARG = re.compile(r"\s*(\{|\d|[A-Za-z])")
_UNIT_WORDS = re.compile(r"^[A-Za-z\s.]*$")


def _argument(text: str, i: int) -> tuple[str, int]:
    """The next LaTeX argument from ``i``: ``{...}`` (balanced) or a single digit or letter."""
    m = _ARG.match(text, i)
    if not m:
        raise Unevaluable("missing argument")
    j = m.start(1)
    if text[j] != "{":
        return text[j], j + 1
    depth = 0
    for k in range(j, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return text[j + 1 : k], k + 1
    raise Unevaluable("unbalanced braces")


def _expand_commands(text: str) -> str:
    """``\\frac{a}{b}`` -> ``((a)/(b))``, ``\\sqrt{a}`` -> ``sqrt(a)``, innermost arguments too."""
    out, i = [], 0
    while i < len(text):
        m = _COMMAND.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i : m.start()])
        if m.group().endswith("frac"):
            a, j = _argument(text, m.end())
            b, j = _argument(text, j)
            out.append(f"(({_expand_commands(a)})/({_expand_commands(b)}))")
        elif m.group().endswith("binom"):
            a, j = _argument(text, m.end())
            b, j = _argument(text, j)
            out.append(f"binomial(({_expand_commands(a)}),({_expand_commands(b)}))")
        else:
            a, j = _argument(text, m.end())
            out.append(f"sqrt({_expand_commands(a)})")
        i = j
    return "".join(out)


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.\d+|\d+|\.\d+)|(?P<fn>sqrt|binomial|factorial|floor|ceiling|Abs)\(|(?P<const>pi)(?![A-Za-z])|"
    r"(?P<name>[A-Za-z](?:_[A-Za-z0-9]+)?)|(?P<op>\*\*|[-+*/^(),]))"
)
_SUBSCRIPT = re.compile(r"([A-Za-z])_\{?([A-Za-z0-9]+)\}?")
_FACTORIAL = re.compile(r"(?<![\w)}])(\d+)!")
_ABSOLUTE = re.compile(r"\|([^|]+)\|")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# A number as Python reads it, written alone (no sign; no leading zeros: ``007`` is a syntax error).
PLAIN_NUMBER = re.compile(r"(?:0|[1-9]\d*)(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z]+")
_RELATION = re.compile(r"\\(?:le|ge|leq|geq|ne|neq|approx)\b|[<>]|:=|==")


# Words that change a number (2 dozen), name an operation (3 Y 2, cis) or a remainder: the
# expression is not the number beside them.
_NOT_UNITS = re.compile(
    r"^\s*(?:dozen|hundred|thousand|million|billion|remainder|r|R|[A-Z]|cis|mod|choose|of|"
    r"and|or|if|for|when|where)\s*$"
)


def _text_or_refuse(m: re.Match[str]) -> str:
    word = m.group(1)
    if not _UNIT_WORDS.match(word) or _NOT_UNITS.match(word):
        return "\x00"
    after = m.string[m.end() : m.end() + 2].lstrip()
    return "\x00" if after.startswith("(") else " "


def _to_python(text: str) -> str:
    """LaTeX arithmetic and algebra as a Python expression, with implicit products made explicit."""
    # Each substitution only where its pattern's own characters are (most parts have none).
    if "frac" in text:
        text = _MIXED.sub(r"(\1+\2)", text)
    if "\\" in text:
        text = _TEXT.sub(_text_or_refuse, text)
    for old, new in _SIMPLE:
        text = text.replace(old, new)
    if "_" in text:
        text = _SUBSCRIPT.sub(r"\1_\2", text)
    if "!" in text:
        text = _FACTORIAL.sub(r"factorial(\1)", text)
    text = text.replace("\\lfloor", "floor(").replace("\\rfloor", ")")
    text = text.replace("\\lceil", "ceiling(").replace("\\rceil", ")")
    if "|" in text:
        text = _ABSOLUTE.sub(r"Abs(\1)", text)
    text = _expand_commands(text).replace("{", "(").replace("}", ")").replace("[", "(")
    text = text.replace("]", ")")
    if "\\" in text or "\x00" in text:
        raise Unevaluable("unknown command")
    tokens, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            if text[i:].strip() == "":
                break
            raise Unevaluable(f"unexpected {text[i]!r}")
        i = m.end()
        kind = m.lastgroup  # each alternative of _TOKEN is one named group
        if kind == "fn":
            tokens.append(("fn", m.group("fn") + "("))
        elif kind == "const":
            tokens.append(("name", "pi"))
        else:
            tokens.append((kind, m.group(kind)))  # type: ignore[arg-type]
    out: list[str] = []
    previous: tuple[str, str] | None = None
    for kind, value in tokens:
        starts_operand = kind in ("num", "name", "fn") or value == "("
        ends_operand = previous is not None and (
            previous[0] in ("num", "name") or previous[1] == ")"
        )
        if starts_operand and previous is not None and ends_operand:
            if previous[0] == "name" and value == "(" and previous[1] in "fghFGHPQpq":
                raise Unevaluable("function application")
            out.append("*")
        out.append("**" if value == "^" else value)
        previous = (kind, value)
    python = "".join(out)
    if not python.strip():
        raise Unevaluable("empty")
    return python


@lru_cache(maxsize=1)
def load_parser() -> tuple[Any, Any, Any]:  # Any: latex2sympy2_extended has no types
    """Import latex2sympy2_extended (and sympy: about a second) once, before the first step."""
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig, latex2sympy
    from latex2sympy2_extended.math_normalization import NormalizationConfig

    parser = ConversionConfig, latex2sympy, NormalizationConfig
    for warm in (r"\log(8)+\ln(2)", r"\frac{8!}{4!(8-4)!}", r"|x-3|+\lfloor x\rfloor"):
        # the parser builds its prediction tables on first use (most of a call's cost): once
        # here, before a scorer forks its workers
        latex2sympy(warm)
    return parser


def fallback_refusal(part: str) -> str | None:
    """Why latex2sympy may not parse this part (``None``: it may). latex2sympy evaluates some
    things while it parses, where nothing can bound them: each rule here keeps one of those
    small, so the work depends on the part alone and never on a clock."""
    if len(part) > MAX_FALLBACK_LENGTH:  # the parser takes ~0.1 s on a long expression
        return "too long for latex2sympy"
    if any(name not in _FALLBACK_COMMANDS for name in _LATEX_COMMAND.findall(part)):
        return "a command latex2sympy is not given"
    if max(map(len, re.findall(r"\d+", part)), default=0) > MAX_FALLBACK_DIGITS:
        return "a number too long for latex2sympy"
    if _SUBSTITUTION.search(part):
        return "a substitution, which latex2sympy evaluates"
    for m in _BINOMIAL.finditer(part):
        if m.group().endswith("choose"):  # {n \choose k}: the group around it
            arguments = [_enclosing_group(part, m.start()).replace("\\choose", " ")]
        else:
            first, j = _argument(part, m.end())
            arguments = [first, _argument(part, j)[0]]
        for argument in arguments:
            digits = max(map(len, re.findall(r"\d+", argument)), default=0)
            if digits > MAX_BINOMIAL_DIGITS or re.search(r"[\^!]|\\[dt]?binom|\\choose", argument):
                return "a binomial coefficient too large to compute while parsing"
    return None


def _enclosing_group(text: str, i: int) -> str:
    """The innermost ``{...}`` around position ``i`` (its contents), or the whole text."""
    depth = 0
    for start in range(i - 1, -1, -1):
        if text[start] == "}":
            depth += 1
        elif text[start] == "{":
            if depth == 0:
                break
            depth -= 1
    else:
        return text
    depth = 0
    for end in range(start, len(text)):
        if text[end] == "{":
            depth += 1
        elif text[end] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : end]
    return text


def _from_sympy(text: str) -> str:
    """The same Python expression through latex2sympy2_extended, for what the translator lacks."""
    ConversionConfig, latex2sympy, NormalizationConfig = load_parser()

    try:
        expr = latex2sympy(
            text,
            normalization_config=NormalizationConfig(
                basic_latex=True, units=True, malformed_operators=False, nits=False, boxed="none"
            ),
            conversion_config=ConversionConfig(
                interpret_as_mixed_fractions=False, lowercase_symbols=False
            ),
        )
    except Exception as error:  # the parser raises bare Exceptions on bad input
        raise Unevaluable(f"latex2sympy: {type(error).__name__}") from None
    if not hasattr(expr, "free_symbols") or type(expr).__name__ in ("Equality", "FiniteSet"):
        raise Unevaluable("not an expression")
    return str(expr).replace("^", "**")


@lru_cache(maxsize=1 << 15)
def parse(part: str) -> Expr:
    """One side of an equation as an :class:`Expr`; raises :class:`Unevaluable` when it is not
    something these checks can evaluate. Cached: solutions repeat their expressions."""
    part = part.strip().rstrip(".").strip()
    if not part or len(part) > MAX_PART_LENGTH:
        raise Unevaluable("empty or too long")
    if PLAIN_NUMBER.fullmatch(part):  # most parts: the tree the translation below would make
        tree: ast.expr = ast.Constant(float(part) if "." in part else int(part))
        return Expr(part, tree, frozenset(), (part,), frozenset(), False, _compile(tree))
    if _UNSUPPORTED.search(_OWN.sub(" ", part)):
        if not _FALLBACK_ONLY.search(part) or _NOT_FOR_FALLBACK.search(part):
            raise Unevaluable("unsupported notation")
        refusal = fallback_refusal(part)
        if refusal:
            raise Unevaluable(refusal)
        python = _from_sympy(part)
    else:
        python = _to_python(part)
    try:
        tree = ast.parse(python, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise Unevaluable("syntax") from None
    symbols = _free(tree)
    if "i" in symbols:
        raise Unevaluable("i is the imaginary unit here as often as a variable")
    numbers = tuple(_NUMBER.findall(part))
    words = (w for t in _TEXT.findall(part) for w in _WORD.findall(t))
    units = {w.lower().rstrip("s") for w in words}
    if DOLLAR in part or "\\$" in part:
        units.add("dollar")
    return Expr(part, tree, symbols, numbers, frozenset(units), "%" in part, _compile(tree))


def try_parse(part: str) -> Expr | None:
    try:
        return parse(part)
    except Unevaluable:
        return None
