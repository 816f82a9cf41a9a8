"""Small filters for the manager's pages: shares, ratings, numbers that may be missing."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils.dateparse import parse_datetime
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()

RATING_TEXT = {1: "+1", 0: "0", -1: "−1"}
RATING_CLASS = {1: "pos", 0: "neu", -1: "neg"}


@register.filter
def pct(value) -> str:
    """A share as a percentage; a dash when undefined."""
    if value is None or value == "":
        return "–"
    return f"{float(value):.0%}"


@register.filter
def num(value, digits: int = 2) -> str:
    """A number with ``digits`` decimals; a dash when undefined."""
    if value is None or value == "":
        return "–"
    return f"{float(value):,.{int(digits)}f}"


@register.filter
def rating(value) -> str:
    """A rating as text (+1, 0, −1); a dash when not rated."""
    return RATING_TEXT.get(value, "–")


@register.filter
def rating_class(value) -> str:
    return RATING_CLASS.get(value, "none")


@register.simple_tag
def cell(row: dict, column) -> str:
    """One table cell, written as its column says (escaped by the template engine)."""
    value = row.get(column.key)
    if column.fmt == "pct":
        return pct(value)
    if column.fmt == "num":
        return num(value)
    if column.fmt == "int":
        return "–" if value is None else f"{int(value):,}"
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
    return mark_safe(_markdown.render(text or ""))  # markdown-it escapes (html disabled)
