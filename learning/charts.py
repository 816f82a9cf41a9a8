"""The best-of-N chart: accuracy against N, one line per method, as server-rendered SVG.

``common.charts`` draws one series per chart; this one needs several on one set of axes, told
apart by their dash pattern (an SVG attribute: the page's CSS colours every ``.line`` alike, and
the Content Security Policy forbids inline styles) and by the name written at each line's end.
It uses ``common.charts``' SVG frame and text helpers, so it looks like the page's other charts.
"""

from __future__ import annotations

import math

from django.utils.html import format_html
from django.utils.safestring import SafeString

from common.charts import _svg, _text

# Dash patterns, in the order methods come (PRM product, PRM min, ORM, majority, random, oracle).
DASHES = ("", "6 3", "2 3", "10 4 2 4", "1 5", "12 3")


def best_of_n_chart(curve: dict, *, width: int = 720, height: int = 260) -> SafeString:
    """Accuracy (0 to 1) against N on a log2 axis for every method of a ``prm.bestofn`` curve."""
    title = "Best-of-N accuracy on held-out problems"
    ns = curve.get("n") or []
    series = curve.get("accuracy") or {}
    if not ns or not series:
        return _svg(width, 40, title, [_text(8, 20, "no data yet", "label")])
    left, right, top, bottom = 36, 120, 16, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    span = math.log2(ns[-1]) if ns[-1] > 1 else 1.0

    def xy(n: int, v: float) -> tuple[float, float]:
        x = left + plot_w * (math.log2(n) / span if ns[-1] > 1 else 0.5)
        return x, top + plot_h - plot_h * max(0.0, min(1.0, v))

    body = [
        format_html(
            '<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"></line>',
            left,
            top + plot_h,
            left + plot_w,
            top + plot_h,
        )
    ]
    for tick in (0.0, 0.5, 1.0):
        _, y = xy(1, tick)
        body.append(_text(left - 4, y + 4, f"{tick:.0%}", "label", "end"))
    for n in ns:
        x, _ = xy(n, 0.0)
        body.append(_text(x, height - bottom + 16, f"N={n}", "label", "middle"))
    ends: list[float] = []
    for k, (name, values) in enumerate(series.items()):
        points = [xy(n, v) for n, v in zip(ns, values, strict=True) if v is not None]
        if not points:
            continue
        dash = DASHES[k % len(DASHES)]
        body.append(
            format_html(
                '<polyline points="{}" class="line"{}></polyline>',
                " ".join(f"{x:.1f},{y:.1f}" for x, y in points),
                format_html(' stroke-dasharray="{}"', dash) if dash else "",
            )
        )
        for x, y in points:
            body.append(
                format_html(
                    '<circle cx="{}" cy="{}" r="2.5" class="dot"></circle>', f"{x:.1f}", f"{y:.1f}"
                )
            )
        x, y = points[-1]
        while any(abs(y - e) < 11 for e in ends):  # keep the end labels apart
            y += 11
        ends.append(y)
        body.append(_text(x + 6, y + 4, f"{name} {values[-1]:.0%}", "value"))
    return _svg(width, height, title, body)
