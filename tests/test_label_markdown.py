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
