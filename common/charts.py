"""Charts as server-rendered SVG: no JavaScript, numbers written on the chart, readable as is.

Each function returns a complete ``<svg>`` element (escaped text, colours from CSS classes in
``static/css/manage.css``, so a Content Security Policy without inline styles allows it). Every
chart has a ``<title>`` for screen readers; pages also show the numbers in a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str  # what is written at the end of the bar, e.g. "1,204 (31%)"
    css: str = ""  # an extra class, e.g. "neg"


def svg_document(width: int, height: int, title: str, body: Sequence[str]) -> SafeString:
    head = format_html(
        '<svg class="chart" role="img" viewBox="0 0 {} {}" width="100%" '
        'preserveAspectRatio="xMinYMin meet"><title>{}</title>',
        width,
        height,
        title,
    )
    return mark_safe(head + "".join(body) + "</svg>")  # every part is escaped above


def svg_text(x: float, y: float, text: str, css: str, anchor: str = "start") -> str:
    return format_html(
        '<text x="{}" y="{}" class="{}" text-anchor="{}">{}</text>',
        f"{x:.1f}",
        f"{y:.1f}",
        css,
        anchor,
        text,
    )


def bars_horizontal(*, title: str, bars: Sequence[Bar], width: int = 640) -> SafeString:
    """One bar per row: label on the left, the bar, its number after it."""
    row, label_w, text_w = 24, 170, 120
    height = max(row * len(bars) + 8, 32)
    scale = max((b.value for b in bars), default=0) or 1
    room = width - label_w - text_w
    body = []
    for i, b in enumerate(bars):
        y = 4 + i * row
        w = max(room * b.value / scale, 1 if b.value else 0)
        label = b.label if len(b.label) <= 24 else b.label[:23] + "…"
        body.append(svg_text(label_w - 8, y + 16, label, "label", "end"))
        body.append(
            format_html(
                '<rect x="{}" y="{}" width="{}" height="{}" class="bar {}"></rect>',
                label_w,
                y + 3,
                f"{w:.1f}",
                row - 6,
                b.css,
            )
        )
        body.append(svg_text(label_w + w + 6, y + 16, b.text, "value"))
    if not bars:
        body.append(svg_text(8, 20, "no data yet", "label"))
    return svg_document(width, height, title, body)


def _every(n: int, most: int) -> int:
    """Label every k-th point so that at most ``most`` labels are written."""
    return max(1, -(-n // most))


def _labelled(n: int, k: int, extra: Sequence[int] = ()) -> set[int]:
    """Indexes to write a label at: every k-th and the last, plus ``extra`` (e.g. the peak),
    leaving out any that would sit on top of a neighbour's label."""
    chosen = {n - 1}
    for i in [*extra, *range(0, n, k)]:
        if all(abs(i - j) >= max(k * 0.75, 1) for j in chosen):
            chosen.add(i)
    return chosen


def columns(
    *,
    title: str,
    points: Sequence[tuple[str, float]],
    fmt: Callable[[float], str] = lambda v: f"{v:,.0f}",
    width: int = 720,
    height: int = 220,
    most_labels: int = 12,
) -> SafeString:
    """Vertical bars (e.g. per day) with values on them; with many bars every k-th is labelled,
    and always the highest and the last."""
    left, right, top, bottom = 28, 28, 22, 34
    n = len(points)
    body: list[str] = []
    if not n:
        return svg_document(width, 40, title, [svg_text(8, 20, "no data yet", "label")])
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / n
    scale = max(v for _, v in points) or 1
    k = _every(n, most_labels)
    peak = max(range(n), key=lambda i: points[i][1])
    values, ticks = _labelled(n, k, [peak]), _labelled(n, k)
    body.append(
        format_html(
            '<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"></line>',
            left,
            top + plot_h,
            left + plot_w,
            top + plot_h,
        )
    )
    for i, (label, value) in enumerate(points):
        h = plot_h * value / scale
        x = left + i * step
        body.append(
            format_html(
                '<rect x="{}" y="{}" width="{}" height="{}" class="bar"></rect>',
                f"{x + step * 0.1:.1f}",
                f"{top + plot_h - h:.1f}",
                f"{max(step * 0.8, 1):.1f}",
                f"{h:.1f}",
            )
        )
        if i in values:
            body.append(svg_text(x + step / 2, top + plot_h - h - 4, fmt(value), "value", "middle"))
        if i in ticks:
            body.append(svg_text(x + step / 2, height - bottom + 16, label, "label", "middle"))
    return svg_document(width, height, title, body)


def floor0(value: float | None) -> float | None:
    """A score that can fall below zero (kappa: worse than chance) drawn at the axis."""
    return None if value is None else max(value, 0.0)


def line(
    *,
    title: str,
    points: Sequence[tuple[str, float | None]],
    fmt: Callable[[float], str] = lambda v: f"{v:.0%}",
    y_max: float | None = 1.0,
    width: int = 720,
    height: int = 220,
    most_labels: int = 12,
) -> SafeString:
    """A line through the points (None: a gap), with values written on every k-th point."""
    left, right, top, bottom = 28, 28, 22, 34
    known = [v for _, v in points if v is not None]
    if not known:
        return svg_document(width, 40, title, [svg_text(8, 20, "no data yet", "label")])
    n = len(points)
    plot_w, plot_h = width - left - right, height - top - bottom
    scale = y_max if y_max is not None else (max(known) or 1)
    k = _every(n, most_labels)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + (plot_w * (i + 0.5) / n)
        return x, top + plot_h - plot_h * min(v, scale) / scale

    body: list[str] = [
        format_html(
            '<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"></line>',
            left,
            top + plot_h,
            left + plot_w,
            top + plot_h,
        )
    ]
    segment: list[str] = []
    segments: list[list[str]] = [segment]
    for i, (_, v) in enumerate(points):
        if v is None:
            segment = []
            segments.append(segment)
            continue
        x, y = xy(i, v)
        segment.append(f"{x:.1f},{y:.1f}")
    for seg in segments:
        if len(seg) > 1:
            body.append(
                format_html('<polyline points="{}" class="line"></polyline>', " ".join(seg))
            )
    rated = [i for i, (_, v) in enumerate(points) if v is not None]
    values = _labelled(len(rated), k)
    values = {rated[j] for j in values}
    ticks = _labelled(n, k)
    for i, (label, v) in enumerate(points):
        if v is not None:
            x, y = xy(i, v)
            body.append(
                format_html(
                    '<circle cx="{}" cy="{}" r="3" class="dot"></circle>', f"{x:.1f}", f"{y:.1f}"
                )
            )
            if i in values:
                body.append(svg_text(x, y - 7, fmt(v), "value", "middle"))
        if i in ticks:
            x = left + plot_w * (i + 0.5) / n
            body.append(svg_text(x, height - bottom + 16, label, "label", "middle"))
    return svg_document(width, height, title, body)


def sparkline(
    *,
    title: str,
    values: Sequence[float | None],
    y_max: float | None = 1.0,
    width: int = 72,
    height: int = 18,
) -> SafeString:
    """A word-sized line for a table cell (the trend of one figure), its last point marked;
    empty with no value. ``y_max`` None scales to the largest value."""
    known = [v for v in values if v is not None]
    if not known:
        return mark_safe("")
    scale = y_max if y_max is not None else (max(known) or 1)
    pad = 3
    n = len(values)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = pad + (width - 2 * pad) * (i / (n - 1) if n > 1 else 0.5)
        return x, height - pad - (height - 2 * pad) * max(0.0, min(v, scale)) / scale

    points = [xy(i, v) for i, v in enumerate(values) if v is not None]
    body = [
        format_html(
            '<polyline points="{}" class="line"></polyline>',
            " ".join(f"{x:.1f},{y:.1f}" for x, y in points),
        ),
        format_html(
            '<circle cx="{}" cy="{}" r="2" class="dot"></circle>',
            f"{points[-1][0]:.1f}",
            f"{points[-1][1]:.1f}",
        ),
    ]
    head = format_html(
        '<svg class="sparkline" role="img" viewBox="0 0 {} {}" width="{}" height="{}">'
        "<title>{}</title>",
        width,
        height,
        width,
        height,
        title,
    )
    return mark_safe(head + "".join(body) + "</svg>")  # every part is escaped above
