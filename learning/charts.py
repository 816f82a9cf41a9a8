"""The best-of-N chart: accuracy against N, one line per method, as server-rendered SVG.

``common.charts`` draws one series per chart; this one needs several on one set of axes. Each
method has its own colour (a CSS class, ``.series-<slug>`` in ``static/css/manage.css``, with
light and dark values: the Content Security Policy forbids inline styles) *and* its own dash
pattern (an SVG attribute), so the lines stay apart in print and for colour-blind readers. The
legend is HTML under the chart, never on the lines, and wraps on a phone. Under each N the axis
says how many problems have that many graded solutions (the support of that point).
"""

from __future__ import annotations

import math

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from common.charts import svg_document, svg_text
from learning.bestofn import supported_n

# Each known method's CSS class and dash pattern: the same method looks the same in every run.
SERIES = {
    "PRM (product)": ("prm-product", ""),
    "PRM (min)": ("prm-min", "6 3"),
    "ORM": ("orm", "2 3"),
    "served PRM (product)": ("served", "10 4 2 4"),
    "majority": ("majority", "12 3"),
    "random": ("random", "1 4"),
    "oracle": ("oracle", "4 2 1 2"),
}
# A method not listed above takes the next unused one of these (by its place in the curve).
SPARE = tuple(SERIES.values())
TICK_SPACING = 56  # the least room, in chart units, between two N labels on the axis


def series_style(name: str, k: int) -> tuple[str, str]:
    """The CSS class suffix and dash pattern of the ``k``-th method of a curve, called ``name``."""
    return SERIES.get(name) or SPARE[k % len(SPARE)]


def _ticks(xs: list[float]) -> list[int]:
    """Indexes of the N labels to write: the last always, the others when they leave room."""
    kept: list[int] = []
    for i in range(len(xs)):
        if kept and xs[i] - xs[kept[-1]] < TICK_SPACING:
            if i == len(xs) - 1:
                kept[-1] = i
            continue
        kept.append(i)
    return kept


def _legend(curve: dict) -> SafeString:
    """One item per method: a swatch of its line (colour and dash), its name and its value at
    the N that enough problems support (``supported_n``)."""
    ns = curve.get("n") or []
    items = []
    for k, (name, values) in enumerate((curve.get("accuracy") or {}).items()):
        css, dash = series_style(name, k)
        known = [k for k, v in enumerate(values) if v is not None]
        said = "no value"
        if known:
            # The N the verdict quotes: one that enough problems support (the axis says how
            # many), never the last N when it rests on a problem or two.
            k = supported_n(curve, known)
            said = f"{values[k]:.0%} at N={ns[k]}"
        items.append((css, format_html(' stroke-dasharray="{}"', dash) if dash else "", name, said))
    return format_html(
        '<ul class="chart-legend" id="best-of-n-legend" aria-label="Lines of the chart">{}</ul>',
        format_html_join(
            "",
            '<li><svg class="swatch" viewBox="0 0 36 10" width="36" height="10" '
            'aria-hidden="true"><line x1="1" y1="5" x2="35" y2="5" class="series-{}"{}>'
            '</line></svg> {} <span class="legend-value">{}</span></li>',
            items,
        ),
    )


def best_of_n_chart(curve: dict, *, width: int = 600, height: int = 280) -> SafeString:
    """Accuracy (0 to 1) against N on a log2 axis for every method of a ``prm.bestofn`` curve,
    the problems behind each N under it, and the legend after the chart."""
    title = "Best-of-N accuracy on held-out problems"
    ns = curve.get("n") or []
    series = curve.get("accuracy") or {}
    if not ns or not series:
        return svg_document(width, 40, title, [svg_text(8, 20, "no data yet", "label")])
    support = curve.get("problems_at_n") or []
    left, right, top, bottom = 58, 44, 12, 46  # right: half of "147 problems" under the last N
    plot_w, plot_h = width - left - right, height - top - bottom
    span = math.log2(ns[-1]) if ns[-1] > 1 else 1.0

    def xy(n: int, v: float) -> tuple[float, float]:
        x = left + plot_w * (math.log2(n) / span if ns[-1] > 1 else 0.5)
        return x, top + plot_h - plot_h * max(0.0, min(1.0, v))

    body = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        _, y = xy(1, tick)
        body.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" class="{}"></line>',
                left,
                f"{y:.1f}",
                left + plot_w,
                f"{y:.1f}",
                "axis" if tick == 0 else "grid",
            )
        )
        if tick in (0.0, 0.5, 1.0):
            body.append(svg_text(left - 4, y + 4, f"{tick:.0%}", "label", "end"))
    xs = [xy(n, 0.0)[0] for n in ns]
    for i in _ticks(xs):
        body.append(svg_text(xs[i], top + plot_h + 16, f"N={ns[i]}", "label tick-n", "middle"))
        if i < len(support) and support[i] is not None:
            body.append(
                format_html(
                    '<text x="{}" y="{}" class="label tick-support" text-anchor="middle">{}'
                    '<tspan class="unit"> problem{}</tspan></text>',
                    f"{xs[i]:.1f}",
                    f"{top + plot_h + 32:.1f}",
                    support[i],
                    "" if support[i] == 1 else "s",
                )
            )
    for k, (name, values) in enumerate(series.items()):
        points = [xy(n, v) for n, v in zip(ns, values, strict=True) if v is not None]
        if not points:
            continue
        css, dash = series_style(name, k)
        body.append(
            format_html(
                '<polyline points="{}" class="line series-{}"{}><title>{}</title></polyline>',
                " ".join(f"{x:.1f},{y:.1f}" for x, y in points),
                css,
                format_html(' stroke-dasharray="{}"', dash) if dash else "",
                name,
            )
        )
        for x, y in points:
            body.append(
                format_html(
                    '<circle cx="{}" cy="{}" r="2.5" class="dot series-{}"></circle>',
                    f"{x:.1f}",
                    f"{y:.1f}",
                    css,
                )
            )
    note = (
        '<p class="chart-note"><small>Under each N: the held-out problems with at least N '
        "graded solutions to choose among; every point averages over all the problems, one with "
        "fewer than N choosing among all of its own.</small></p>"
    )
    return mark_safe(  # every part is escaped above
        '<figure class="best-of-n">'
        + svg_document(width, height, title, body)
        + _legend(curve)
        + note
        + "</figure>"
    )
