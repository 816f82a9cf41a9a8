"""Small filters for the manager's pages: shares, ratings, numbers that may be missing."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django import template
from django.utils.dateparse import parse_datetime
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

if TYPE_CHECKING:
    from common.tables import Column

register = template.Library()

RATING_TEXT: dict[int | None, str] = {1: "+1", 0: "0", -1: "−1"}
RATING_CLASS: dict[int | None, str] = {1: "pos", 0: "neu", -1: "neg"}


@register.filter
def pct(value: float | str | None) -> str:
    """A share as a percentage; a dash when undefined."""
    if value is None or value == "":
        return "–"
    return f"{float(value):.0%}"


@register.filter
def num(value: float | str | None, digits: int = 2) -> str:
    """A number with ``digits`` decimals; a dash when undefined."""
    if value is None or value == "":
        return "–"
    return f"{float(value):,.{int(digits)}f}"


@register.filter
def duration_ms(value: int | None) -> str:
    """A time measured in milliseconds as people say it: "2.5 s", "3 min 05 s", "1 h 02 min"."""
    if value is None:
        return "–"
    seconds = int(value) / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


@register.filter
def rating(value: int | None) -> str:
    """A rating as text (+1, 0, −1); a dash when not rated."""
    return RATING_TEXT.get(value, "–")


@register.filter
def rating_class(value: int | None) -> str:
    return RATING_CLASS.get(value, "none")


@register.simple_tag
def cell(row: dict[str, Any], column: Column) -> str:
    """One table cell, written as its column says (escaped by the template engine)."""
    value = row.get(column.key)
    if column.fmt == "pct":
        return pct(value)
    if column.fmt == "num":
        return num(value)
    if column.fmt == "int":
        return "–" if value is None else f"{int(value):,}"
    if column.fmt == "html":
        # Markup the server built and escaped (a sparkline with its words); anything else is
        # written as text.
        return value if isinstance(value, SafeString) else ("" if value is None else str(value))
    if column.fmt == "time":
        if isinstance(value, str):
            value = parse_datetime(value)
        return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else "–"
    return "" if value is None else str(value)


# HTML in the text stays text; markdown-it also refuses javascript: and similar links.
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


@register.filter
def markdown(text: str) -> SafeString:
    """Campaign instructions (Markdown) as HTML, with any HTML in them escaped."""
    html: str = _markdown.render(text or "")
    return mark_safe(html)  # markdown-it escapes (html disabled)
