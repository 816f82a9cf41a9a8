"""Problems and steps as HTML: Markdown without raw HTML, math kept whole for KaTeX."""

from __future__ import annotations

import pytest

from labeling.templatetags.labeling_tags import (
    answer_math,
    markdown_math,
    markdown_prose,
    render_markdown_math,
)


def test_math_survives_markdown_untouched():
    html = markdown_math(r"Let $a_1 = 2$ and $a_2 = 3$, so \(a_1 * a_2\) is *six*.")
    assert '<span class="math">$a_1 = 2$</span>' in html
    assert '<span class="math">$a_2 = 3$</span>' in html
    assert r'<span class="math">\(a_1 * a_2\)</span>' in html
    assert "<em>six</em>" in html


@pytest.mark.parametrize(
    "source",
    [r"$$\sum_{i=1}^n i$$", "$$\n\\frac{1}{2}\n$$", r"\[\int_0^1 x\,dx\]"],
)
def test_display_math_is_marked_for_display(source):
    html = markdown_math(source)
    assert '<span class="math math-display">' in html
    assert "<em>" not in html


def test_prices_are_not_math():
    assert "math" not in markdown_math("He pays $5 and $6, then $10 + $20 = $30.")


def test_an_escaped_dollar_is_a_dollar():
    html = markdown_math(r"It costs \$5, and $x$ is math.")
    assert "It costs $5" in html and '<span class="math">$x$</span>' in html


@pytest.mark.parametrize(
    "payload",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "$<img src=x onerror=alert(1)>$",
        r"\(</span><script>alert(1)</script>\)",
    ],
)
def test_html_in_text_or_math_comes_out_as_text(payload):
    html = markdown_math(payload)
    assert "<script" not in html and "<img" not in html
    assert "&lt;" in html


def test_no_javascript_links_and_no_remote_images():
    html = markdown_math("[click](javascript:alert(1)) ![pixel](http://example.com/p.png)")
    assert 'href="javascript' not in html
    assert "<img" not in html


def test_a_forged_placeholder_stays_text():
    assert markdown_math("swmath0x0x and $y$").startswith("<p>swmath0x0x and")


def test_the_answer_is_one_boxed_formula():
    assert answer_math(r"\frac{1}{9}") == r'<span class="math">\(\boxed{\frac{1}{9}}\)</span>'
    assert answer_math("") == ""
    assert "<script" not in answer_math("<script>x</script>")


def test_instructions_wrapped_by_hand_keep_their_paragraphs_but_not_the_line_breaks():
    html = markdown_prose("Flag a step you are unsure\nof. Use $x$.\n\nNew paragraph.")
    assert "<br" not in html and html.count("<p>") == 2
    assert '<span class="math">$x$</span>' in html
    assert "<br" in markdown_math("x = 1\ny = 2")


def test_tex_quotation_marks_are_quotes_not_code():
    html = render_markdown_math("Bobbi asks, ``Are we there yet?'' and waits for ``$x$ more''.")

    assert "<code>" not in html
    assert "\u201cAre we there yet?\u201d" in html
    assert '\u201c<span class="math">$x$</span> more\u201d' in html


def test_a_markdown_code_span_with_double_backticks_stays_code():
    assert "<code>a ` b</code>" in render_markdown_math("``a ` b``")


# --- bare TeX outside delimiters (model answers) ------------------------------------------------


def test_a_bare_boxed_answer_is_math():
    html = markdown_math(r"So she arrives at \boxed{4:30 \text{ p.m.}}.")
    assert r'<span class="math">\(\boxed{4:30 \text{ p.m.}}\)</span>' in html
    assert html.endswith(".</p>\n")


@pytest.mark.parametrize(
    ("source", "formula"),
    [
        (r"which is \frac{1}{2} of it", r"\(\frac{1}{2}\)"),
        (r"the root \sqrt[3]{8}^{2} here", r"\(\sqrt[3]{8}^{2}\)"),
        (r"an area of 4\pi square units", r"\(\pi\)"),
        (r"since a \le b", r"\(\le\)"),
        (r"\dfrac{\sqrt{3}}{2} is the sine", r"\(\dfrac{\sqrt{3}}{2}\)"),
    ],
)
def test_other_bare_tex_commands_are_math(source, formula):
    assert f'<span class="math">{formula}</span>' in markdown_math(source)


@pytest.mark.parametrize(
    "source",
    [r"a line\nbreak written out", r"a \foo word", r"\boxed{never closed", r"a \\ b"],
)
def test_backslashes_that_are_not_tex_commands_stay_text(source):
    assert "math" not in markdown_math(source)


def test_tex_already_in_delimiters_is_not_wrapped_twice():
    html = markdown_math(r"Already $\boxed{2}$ and \(\frac12\).")
    assert html.count('<span class="math">') == 2
    assert r"\(\boxed" not in html


def test_html_in_a_bare_command_comes_out_as_text():
    html = markdown_math(r"\boxed{<img src=x onerror=alert(1)>}")
    assert "<img" not in html and "&lt;img" in html


# --- corrections and review comments ----------------------------------------------------------


@pytest.mark.django_db
def test_corrections_and_review_comments_render_as_markdown_with_math(client):
    from django.urls import reverse

    from tests.factories import (
        make_campaign,
        make_labelled,
        make_member,
        make_review,
        make_solution,
    )

    campaign = make_campaign()
    reviewer = make_member(campaign=campaign, role="reviewer").user
    work = make_labelled(
        solution=make_solution(campaign=campaign),
        ratings=[1, -1],
        annotator=make_member(campaign=campaign).user,
        human_completions={1: r"Instead, **divide**: $x = \frac{6}{3} = 2$."},
    )
    review = make_review(assignment=work, decision="rejected", reviewer=reviewer)
    review.comment = "Step 2 *multiplies*; it should give \\boxed{2}.\n\n<script>x</script>"
    review.save()
    client.force_login(reviewer)
    url = reverse("annotators:review", kwargs={"slug": campaign.slug, "pk": work.pk})
    html = client.get(url).content.decode()
    assert "<strong>divide</strong>" in html
    assert r'<span class="math">$x = \frac{6}{3} = 2$</span>' in html
    assert "<em>multiplies</em>" in html
    assert r'<span class="math">\(\boxed{2}\)</span>' in html
    assert "<script>x</script>" not in html
    assert "katex.min.js" in html

    client.force_login(work.annotator)
    mine = client.get(reverse("annotators:my-reviews", kwargs={"slug": campaign.slug}))
    assert "<em>multiplies</em>" in mine.content.decode()
    assert r'<span class="math">\(\boxed{2}\)</span>' in mine.content.decode()
