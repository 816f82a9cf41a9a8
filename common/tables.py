"""Sortable, paginated tables over rows already in memory (snapshot figures, member lists).

A table reads ``<prefix>sort`` (a column key, ``-`` first for descending) and ``<prefix>page``
from the query string, so several tables on one page sort and page on their own, and links keep
the other tables' parameters. Rows are dicts; a missing value (None) sorts last either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

PER_PAGE = 25


@dataclass(frozen=True)
class Column:
    """``fmt`` says how a cell is written: text, int, pct, num (2 decimals), time, or html
    (markup the server built and escaped, e.g. a sparkline; plain strings stay text).
    ``link``: the cell links to the row's ``url``."""

    key: str
    label: str
    numeric: bool = False
    fmt: str = "text"
    link: bool = False


@dataclass
class Header:
    column: Column
    url: str
    direction: str  # "ascending", "descending" or "" (aria-sort)


@dataclass
class Table:
    headers: list[Header]
    rows: list[dict[str, Any]]
    page: int
    pages: int
    total: int
    previous_url: str | None = None
    next_url: str | None = None
    first_index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _url(query: QueryDict, **changes: object) -> str:
    q = query.copy()
    for key, value in changes.items():
        if value is None:
            q.pop(key, None)
        else:
            q[key] = str(value)
    return "?" + q.urlencode()


def table(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    *,
    query: QueryDict,
    default_sort: str,
    prefix: str = "",
    per_page: int = PER_PAGE,
) -> Table:
    """Sort ``rows`` by the requested column and cut out the requested page."""
    keys = {c.key for c in columns}
    sort = query.get(prefix + "sort", default_sort)
    if sort.lstrip("-") not in keys:
        sort = default_sort
    key, descending = sort.lstrip("-"), sort.startswith("-")
    present = [r for r in rows if r.get(key) is not None]
    missing = [r for r in rows if r.get(key) is None]
    present.sort(
        key=lambda r: r[key].lower() if isinstance(r[key], str) else r[key], reverse=descending
    )
    ordered = present + missing
    total = len(ordered)
    pages = max(1, -(-total // per_page))
    try:
        page = min(max(int(query.get(prefix + "page", "1")), 1), pages)
    except ValueError:
        page = 1
    start = (page - 1) * per_page
    headers = []
    for c in columns:
        if c.key == key:
            direction = "descending" if descending else "ascending"
            target = c.key if descending else "-" + c.key
        else:
            direction = ""
            target = "-" + c.key if c.numeric else c.key
        headers.append(
            Header(c, _url(query, **{prefix + "sort": target, prefix + "page": None}), direction)
        )
    return Table(
        headers=headers,
        rows=ordered[start : start + per_page],
        page=page,
        pages=pages,
        total=total,
        first_index=start,
        previous_url=_url(query, **{prefix + "page": page - 1}) if page > 1 else None,
        next_url=_url(query, **{prefix + "page": page + 1}) if page < pages else None,
    )
