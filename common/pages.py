"""Small helpers every app's pages share: form data of a POST, the page number of a list."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import HttpRequest, QueryDict

# The database's integer range: a page (or id) past it cannot exist, and its OFFSET would fail.
PAGE_MAX = 2**31 - 1


class QueryInvalid(BadRequest):
    """A query parameter no page can answer: 400, naming the parameter (``handler400``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def posted(request: HttpRequest) -> QueryDict | None:
    """The form data of a POST (even an empty one, which must fail validation), else None."""
    return request.POST if request.method == "POST" else None


def page_number(request: HttpRequest) -> int:
    """``?page=`` as a number from 1; anything not a number is the first page; a number past
    ``PAGE_MAX`` is a 400 that names ``page``."""
    try:
        value = int(request.GET.get("page", "1"))
    except ValueError:
        return 1
    if value > PAGE_MAX:
        raise QueryInvalid("page", f"must be a page number from 1 to {PAGE_MAX}.")
    return max(value, 1)


def query_id(value: str) -> int | None:
    """A database id typed into a page's search box, or None when it cannot be one."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        return None
    return int(value)
