"""Rendering problems, steps and instructions: Markdown for the prose, KaTeX for the math.

User text is never trusted: Markdown runs with raw HTML disabled (so ``<script>`` or
``<img onerror=...>`` come out as text) and without images (no requests to outside hosts).
Math is cut out *before* Markdown sees it, because Markdown would otherwise eat its
backslashes (``\\(`` is an escaped parenthesis to Markdown) and turn ``a_1 ... a_2`` into
emphasis. Each formula goes back in, HTML-escaped and with its delimiters, inside a
``<span class="math">`` that ``static/js/label.js`` hands to KaTeX's auto-render (``trust``
off). Without JavaScript the reader sees the TeX as written.
"""

from __future__ import annotations

import html
import re
import secrets
from functools import lru_cache

from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from labeling.models import FinishReason

register = template.Library()

# Model output (problems, steps) puts one equation per line: a newline is a line break there.
# Instructions are prose a person wrapped by hand: a newline is a space.
_markdown = {
    breaks: MarkdownIt("commonmark", {"html": False, "breaks": breaks}).disable("image")
    for breaks in (True, False)
}

# Formulas, in the order they are tried at each position. Inline ``$...$`` follows pandoc's
# rule so that prices are not math ("$5 and $6"): the opening ``$`` is followed by a
# non-space, the closing one is preceded by a non-space and not followed by a digit; ``\$`` is
# a literal dollar everywhere.
_MATH = re.compile(
    r"""
      (?<!\\)\$\$(?P<display>.+?)(?<!\\)\$\$
    | \\\[(?P<bracket>.+?)\\\]
    | \\\((?P<paren>.+?)\\\)
    | (?<![\\$])\$(?P<inline>[^\s$](?:\\\$|[^$])*?)(?<![\s\\])\$(?!\d)
    """,
    re.DOTALL | re.VERBOSE,
)
# TeX's quotation marks, as MATH problems write them (``Are we there yet?''): to Markdown the
# opening pair would start a code span. A real code span closes with backticks, so it is kept.
_TEX_QUOTE = re.compile(r"``(?P<quoted>[^`\n]*?)''")

# A TeX command outside any delimiters, as models write answers (``\\boxed{4:30 \\text{ p.m.}}``):
# a backslash and letters, then its arguments. One with a brace argument is math whatever its
# name; without one, only the names below count (``\\n`` in prose is not math).
_BARE_COMMAND = re.compile(r"\\([A-Za-z]+)")
_BARE_SYMBOLS = frozenset(
    """alpha beta gamma delta epsilon varepsilon theta lambda mu pi rho sigma tau phi varphi chi
    psi omega Gamma Delta Theta Lambda Pi Sigma Phi Psi Omega cdot times div pm mp le leq ge geq
    neq ne approx equiv sim infty circ degree angle triangle cdots ldots dots sqrt to rightarrow
    Rightarrow implies iff in notin subset subseteq cup cap emptyset forall exists partial nabla
    sum prod int lfloor rfloor lceil rceil""".split()
)


def _group_end(text: str, start: int) -> int | None:
    """The index after the brace (or bracket) group opening at ``start``; None if unbalanced."""
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth = 0
    for i in range(start, min(len(text), start + 2000)):
        if text[i] == "\\":
            continue
        if text[i] == opening and (i == start or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == closing and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _bare_tex(prose: str, stash) -> str:
    """``prose`` with each bare TeX command (and its arguments, sub- and superscripts) stashed
    as an inline formula."""
    out, i = [], 0
    while m := _BARE_COMMAND.search(prose, i):
        end, groups = m.end(), 0
        while end < len(prose):
            if prose[end] in "{[":
                if prose[end] == "[" and groups:
                    break  # a bracket argument (\\sqrt[3]{x}) comes before the braces
                close = _group_end(prose, end)
                if close is None:
                    break
                groups += prose[end] == "{"
                end = close
            elif prose[end] in "^_" and end + 1 < len(prose):
                if prose[end + 1] == "{":
                    close = _group_end(prose, end + 1)
                    if close is None:
                        break
                    end = close
                elif prose[end + 1].isalnum():
                    end += 2
                else:
                    break
            else:
                break
        if not groups and m.group(1) not in _BARE_SYMBOLS:
            out.append(prose[i : m.end()])
            i = m.end()
            continue
        out.append(prose[i : m.start()])
        out.append(stash(f"\\({prose[m.start() : end]}\\)"))
        i = end
    out.append(prose[i:])
    return "".join(out)


# Stands in for a formula while Markdown runs: letters and digits only, so Markdown leaves it
# alone; a per-process nonce, so user text cannot forge one.
_NONCE = secrets.token_hex(6)
_TOKEN = re.compile(rf"swmath{_NONCE}x(\d+)x")
# A tag of Markdown's output; its attribute values are escaped, so none holds a raw ">".
_TAG = re.compile(r"<[^<>]*>")


def _math_span(source: str) -> str:
    display = source.startswith(("$$", "\\["))
    css = "math math-display" if display else "math"
    return f'<span class="{css}">{html.escape(source)}</span>'


@lru_cache(maxsize=8192)
def render_markdown_math(text: str, *, breaks: bool = True) -> str:
    """Markdown with math as HTML that is safe to insert as is (cached: texts never change)."""
    formulas: list[str] = []

    def stash_text(formula: str) -> str:
        formulas.append(formula)
        return f"swmath{_NONCE}x{len(formulas) - 1}x"

    def stash(match: re.Match) -> str:
        return stash_text(match.group(0))

    prose = _bare_tex(_MATH.sub(stash, text or ""), stash_text)
    prose = _TEX_QUOTE.sub("\u201c\\g<quoted>\u201d", prose)
    rendered = _markdown[breaks].render(prose)

    def as_text(tag: re.Match) -> str:
        # Inside a tag (a link's URL or title) a formula goes back as plain escaped text: a
        # span there would break the attribute open.
        return _TOKEN.sub(lambda m: html.escape(formulas[int(m.group(1))]), tag.group(0))

    rendered = _TAG.sub(as_text, rendered)
    return _TOKEN.sub(lambda m: _math_span(formulas[int(m.group(1))]), rendered)


@register.filter(name="finish_reason")
def finish_reason(value: str | None) -> str:
    """``{{ a.finish_reason|finish_reason }}``: the finish reason in words."""
    return FinishReason.words(value)


@register.filter(name="markdown_math")
def markdown_math(text: str) -> SafeString:
    """``{{ step.text|markdown_math }}``: escaped Markdown with math left for KaTeX."""
    return mark_safe(render_markdown_math(text))  # escaped by construction


@register.filter(name="markdown_prose")
def markdown_prose(text: str) -> SafeString:
    """``{{ campaign.instructions|markdown_prose }}``: the same, with newlines as spaces."""
    return mark_safe(render_markdown_math(text, breaks=False))  # escaped by construction


@register.filter(name="answer_math")
def answer_math(answer: str) -> SafeString:
    """A final answer as one boxed formula (answers are TeX without delimiters, e.g. ``\\frac12``).

    An answer that carries its own ``$`` goes through the Markdown path instead, so the two
    never nest.
    """
    answer = (answer or "").strip()
    if not answer:
        return mark_safe("")
    if "$" in answer or "\\(" in answer or "\\[" in answer:
        return markdown_math(answer)
    return mark_safe(_math_span(f"\\(\\boxed{{{answer}}}\\)"))
