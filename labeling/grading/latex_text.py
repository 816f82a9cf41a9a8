"""LaTeX read as plain text the way PRM800K's reference grader read it, before sympy.

The reference grader turns an answer's LaTeX into text with a general LaTeX-to-text converter
and hands that text to sympy. What it produced decided PRM800K's grades, including its quirks,
so the ``prm800k`` rule reads LaTeX the same way:

- ``\\frac{a}{b}`` is ``a/b`` with no brackets: ``\\frac{x+1}{2}`` reads ``x+1/2``, so
  ``\\frac{8-7x}{6}`` and ``\\frac{-7x+8}{6}`` differ, and ``\\frac{4}{3\\sqrt{3}}`` is
  ``4/3·√3``;
- ``\\sqrt[3]{x}`` loses its index; ``\\sqrt{x}`` is ``√(x)``;
- a command the converter did not know vanishes and its arguments are read as plain groups
  (``\\binom{5}{2}`` is ``52``, ``\\cot x`` is ``x``, ``\\mbox{four}`` is empty);
- symbols become their Unicode characters, and the grader then maps √ π ∞ ∪ · × to names sympy
  reads; any other symbol leaves text sympy cannot parse (so only the same string is equal);
- a matrix is ``[ a b; c d ]``.

Written from the converter's observed behaviour on the answers of MATH, PRM800K and the
Qwen2.5-Math samples (``tests/test_grading_rules.py`` holds the cases), not from its code. Plain
Python: the web process may call it.
"""

from __future__ import annotations

# Commands without arguments and what they read as (the converter's Unicode; "" for the ones
# it drops).
SYMBOLS: dict[str, str] = {
    "pi": "π", "infty": "∞", "cup": "∪", "cap": "∩", "cdot": "·", "times": "×", "div": "÷",
    "pm": "±", "mp": "∓", "le": "≤", "leq": "≤", "leqslant": "⩽", "ge": "≥", "geq": "≥",
    "geqslant": "⩾", "neq": "≠", "ne": "", "circ": "∘", "in": "∈", "notin": "∉",
    "emptyset": "∅", "varnothing": "∅", "ldots": "…", "dots": "…", "cdots": "⋯",
    "vdots": "⋮", "ddots": "⋱", "to": "→", "rightarrow": "→", "Rightarrow": "⇒",
    "approx": "≈", "sim": "∼", "equiv": "≡", "setminus": "∖", "angle": "∠", "mid": "|",
    "vert": "|", "lvert": "|", "rvert": "|", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊",
    "rfloor": "⌋", "langle": "⟨", "rangle": "⟩", "prime": "'", "subset": "⊂", "perp": "⊥",
    "parallel": "∥", "nmid": "∤", "cong": "≅", "propto": "∝", "forall": "∀", "exists": "∃",
    "wedge": "∧", "vee": "∨", "oplus": "⊕", "partial": "∂", "nabla": "∇", "sum": "∑",
    "prod": "∏", "int": "∫", "ell": "ℓ", "hbar": "ħ", "aleph": "ℵ", "star": "⋆", "ast": "∗",
    "bullet": "∙", "dagger": "†", "textdegree": "°", "quad": "  ", "qquad": "    ",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "rho": "ρ", "sigma": "σ", "tau": "τ",
    "upsilon": "υ", "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π",
    "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
# Function names the converter writes out; others (\cot, \sec, \csc, \gcd, \det, \deg) vanish.
FUNCTIONS = frozenset(
    "sin cos tan arcsin arccos arctan sinh cosh tanh log ln lg exp lim max min sup inf".split()
)
# One argument, read as itself.
_TEXT = frozenset(
    "text textbf textrm textit textnormal emph hbox mathrm operatorname boxed overline "
    "underline displaystyle".split()
)
# One argument, dropped with it.
_DROPPED = frozenset("mbox textsf texttt textup".split())
# One argument, followed by a combining accent.
_ACCENTS = {"vec": "\u20d7", "hat": "\u0302", "bar": "\u0305", "tilde": "\u0303", "dot": "\u0307"}
# Control symbols: spacing, a line break, display and inline math delimiters (\[ \( go).
_SPACES = {
    **{"!": "", ",": " ", ";": " ", ":": " ", " ": " ", "\\": "\n"},
    **{"[": "", "]": "", "(": "", ")": ""},
}
_MATRICES = frozenset("matrix pmatrix bmatrix Bmatrix vmatrix Vmatrix smallmatrix".split())


class Unreadable(ValueError):
    """The converter failed on this text (a command missing its argument): the grader then
    kept the text as it was."""


def latex_text(latex: str) -> str:
    """``latex`` as the reference grader's converter read it (see the module's docstring)."""
    return _Reader(latex).read_until(None)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def read_until(self, close: str | None) -> str:
        out: list[str] = []
        while self.i < len(self.text):
            ch = self.text[self.i]
            if close is not None and ch == close:
                self.i += 1
                return "".join(out)
            if ch == "{":
                self.i += 1
                out.append(self.read_until("}"))
            elif ch == "}":
                self.i += 1  # an unmatched brace
            elif ch == "\\":
                out.append(self.command())
            else:
                out.append(ch)
                self.i += 1
        return "".join(out)

    def command(self) -> str:
        start = self.i + 1
        end = start
        while end < len(self.text) and self.text[end].isalpha():
            end += 1
        if end == start:  # a control symbol: \! \, \{ \% ...
            if start >= len(self.text):
                self.i = start
                return ""
            self.i = start + 1
            ch = self.text[start]
            return _SPACES.get(ch, ch)
        name = self.text[start:end]
        self.i = end
        self.skip_spaces()
        return self.expand(name)

    def expand(self, name: str) -> str:
        if name == "frac":
            numerator = self.argument()
            return f"{numerator}/{self.argument()}"
        if name == "sqrt":
            if self.peek() == "[":
                self.i = self.text.index("]", self.i) + 1 if "]" in self.text[self.i :] else -1
                if self.i < 0:
                    raise Unreadable("\\sqrt[ without ]")
                self.skip_spaces()
            return f"√({self.argument()})"
        if name == "begin":
            return self.environment(self.argument())
        if name == "end":
            self.argument()
            return ""
        if name in _TEXT:
            return self.argument()
        if name in _DROPPED:
            self.argument()
            return ""
        if name in _ACCENTS:
            return self.argument() + _ACCENTS[name]
        if name.startswith("math"):  # \mathbf, \mathbb ...: styled letters, read as letters
            return self.argument()
        if name in FUNCTIONS:
            return name
        return SYMBOLS.get(name, "")  # \left, \right, unknown commands: nothing

    def environment(self, name: str) -> str:
        end = f"\\end{{{name}}}"
        stop = self.text.find(end, self.i)
        if stop < 0:
            raise Unreadable(f"\\begin{{{name}}} without its end")
        body = latex_text(self.text[self.i : stop])
        self.i = stop + len(end)
        if name not in _MATRICES:
            return body
        rows = [" ".join(cell.strip() for cell in row.split("&")) for row in body.split("\n")]
        return "[ " + "; ".join(row.strip() for row in rows if row.strip()) + " ]"

    def argument(self) -> str:
        self.skip_spaces()
        if self.i >= len(self.text):
            raise Unreadable("a command without its argument")
        ch = self.text[self.i]
        if ch == "{":
            self.i += 1
            return self.read_until("}")
        if ch == "\\":
            return self.command()
        self.i += 1
        return ch

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def skip_spaces(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1
