"""Math that KaTeX cannot render fails for that formula alone, under the Content Security Policy,
and a formula inside a Markdown link's URL or title stays text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from labeling.models import Membership
from labeling.templatetags.labeling_tags import render_markdown_math
from tests.factories import make_campaign, make_member, make_solution


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_a_formula_in_a_link_url_or_title_is_left_as_text():
    html = render_markdown_math('See [the $x$ proof]($a$ "about $b onmouseover=alert(1) $").')
    tags = _tags(html)
    (link,) = [attrs for tag, attrs in tags if tag == "a"]
    assert link["href"] == "$a$"
    assert link["title"] == "about $b onmouseover=alert(1) $"
    assert set(link) == {"href", "title"}
    # The formula in the link's text is still math.
    assert ("span", {"class": "math"}) in tags
    assert 'class="math">$x$</span>' in html


def test_a_link_whose_url_is_a_formula_cannot_become_a_script_url():
    html = render_markdown_math("[x]($javascript:alert(1)$)")
    (link,) = [attrs for tag, attrs in _tags(html) if tag == "a"]
    assert not link["href"].lower().startswith("javascript:")


def test_the_page_script_renders_each_formula_alone_with_limits():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[1] / "static" / "js" / "math.js").read_text()
    assert "throwOnError: true" in script and "throwOnError: false" not in script
    assert "maxExpand" in script and "maxSize" in script
    assert "renderMathInElement" not in script  # its error markup has an inline style


BAD_FRAC = "$" + r"\frac{1}{" * 3000 + "x" + "}" * 3000 + "$"
BAD_DEF = r"$\def\a{\a\a}\a$"
LISTEN = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_formulas_katex_cannot_render_fail_alone_without_a_csp_violation(page, live_server, client):
    campaign = make_campaign(slug="katex")
    make_solution(
        campaign=campaign,
        steps=[f"First {BAD_FRAC} then $x^2$.", f"Loop {BAD_DEF} and $\\frac12$.", "Ok $y$."],
    )
    manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
    annotator = make_member(campaign=campaign).user
    assert manager
    client.force_login(annotator)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.add_init_script(LISTEN)
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    page.goto(live_server.url + reverse("labeling:label", kwargs={"slug": "katex"}))
    page.wait_for_selector("#workspace")
    page.wait_for_selector("#steps .katex")
    errors = page.locator("#steps .math-error")
    rendered = page.locator("#steps .math .katex")
    assert errors.count() >= 1
    assert rendered.count() >= 1
    assert errors.first.get_attribute("style") is None
    assert "\\frac" in errors.first.inner_text() or "\\def" in errors.first.inner_text()
    assert page.evaluate("window.__csp") == []
    assert not [c for c in console if "Content Security Policy" in c]
