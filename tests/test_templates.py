"""Templates: Django's ``{# ... #}`` comments end on their own line, or the page shows them."""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def test_every_short_comment_closes_on_its_line():
    unclosed = [
        f"{path.relative_to(TEMPLATES)}:{number}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.count("{#") > line.count("#}")
    ]
    assert unclosed == [], "use {% comment %} for comments over several lines"
