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

    def stash(match: re.Match) -> str:
        formulas.append(match.group(0))
        return f"swmath{_NONCE}x{len(formulas) - 1}x"

    prose = _TEX_QUOTE.sub("\u201c\\g<quoted>\u201d", _MATH.sub(stash, text or ""))
    rendered = _markdown[breaks].render(prose)

    def as_text(tag: re.Match) -> str:
        # Inside a tag (a link's URL or title) a formula goes back as plain escaped text: a
        # span there would break the attribute open.
        return _TOKEN.sub(lambda m: html.escape(formulas[int(m.group(1))]), tag.group(0))

    rendered = _TAG.sub(as_text, rendered)
    return _TOKEN.sub(lambda m: _math_span(formulas[int(m.group(1))]), rendered)


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
