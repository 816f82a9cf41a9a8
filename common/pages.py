"""Small helpers every app's pages share: form data of a POST, the page number of a list."""

from __future__ import annotations

from django.http import HttpRequest


def posted(request: HttpRequest):
    """The form data of a POST (even an empty one, which must fail validation), else None."""
    return request.POST if request.method == "POST" else None


def page_number(request: HttpRequest) -> int:
    """``?page=`` as a number from 1; anything else is the first page."""
    try:
        return max(int(request.GET.get("page", "1")), 1)
    except ValueError:
        return 1
