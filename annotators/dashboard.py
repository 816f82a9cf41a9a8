"""The dashboard's charts and tables, built from a snapshot's figures (no database reads)."""

from __future__ import annotations

from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import SafeString

from annotators.quality import QC_BLOCK, WORK_BLOCK
from common import charts
from common.tables import Column, Table, table


def _share_text(n: int, total: int) -> str:
    return f"{n:,} ({n / total:.0%})" if total else f"{n:,}"


ANNOTATOR_COLUMNS = [
    Column("username", "annotator"),
    Column("assignments", "solutions", numeric=True, fmt="int"),
    Column("labels", "step labels", numeric=True, fmt="int"),
    Column("hours", "hours", numeric=True, fmt="num"),
    Column("labels_per_hour", "labels / hour", numeric=True, fmt="num"),
    Column("median_seconds_per_step", "median s / step", numeric=True, fmt="num"),
    Column("qc_score", "QC score", numeric=True, fmt="num"),
    Column("qc_agreement", "QC steps alike", numeric=True, fmt="pct"),
    Column("qc_steps", "QC steps", numeric=True, fmt="int"),
    Column("kappa", "kappa", numeric=True, fmt="num"),
    Column("last", "last submitted", fmt="time"),
]


# Quality over time (``annotators.quality``): key, what pages call it, its blocks, how a value is
# written, and the top of its scale (None: the largest value).
QUALITY_MEASURES = [
    ("qc_score", "QC score", "qc_blocks", "num", 1.0),
    ("consensus", "agreement with the consensus", "work_blocks", "pct", 1.0),
    ("adjudicated", "agreement with adjudication", "work_blocks", "pct", 1.0),
    ("seconds_per_step", "median seconds per step", "work_blocks", "num", None),
    ("flag_rate", "flag rate", "work_blocks", "pct", 1.0),
]

QUALITY_COLUMNS = [Column("username", "annotator")] + [
    column
    for key, label, _, fmt, _ in QUALITY_MEASURES
    for column in (
        Column(f"{key}_latest", f"{label} (latest)", numeric=True, fmt=fmt),
        Column(f"{key}_trend", "trend", fmt="html"),
    )
]


def trend_words(trend: dict | None) -> str:
    """A trend as the pages say it: "falling since 2025-03-02", "steady", or nothing."""
    direction = (trend or {}).get("direction")
    if direction in ("falling", "rising"):
        return f"{direction} since {trend['since']}" if trend and trend.get("since") else direction
    return direction or ""


def _written(value: float | None, fmt: str) -> str:
    if value is None:
        return "–"
    return f"{value:.0%}" if fmt == "pct" else f"{value:.2f}"


def quality_latest(quality: dict | None) -> dict:
    """One annotator's latest value of each measure (``<key>_latest``: the latest block's, what
    tables sort on), from their ``quality`` figures in the snapshot (None: no work yet)."""
    trends = (quality or {}).get("trends", {})
    return {f"{key}_latest": (trends.get(key) or {}).get("latest") for key, *_ in QUALITY_MEASURES}


def quality_trends(quality: dict | None) -> dict:
    """``<key>_trend`` per measure: a sparkline of every block and the trend in words, from the
    snapshot's summary (``quality.quality_summary``). Drawn for the rows a table shows, after it
    is sorted and cut (``with_quality_trends``)."""
    quality = quality or {}
    out: dict = {}
    for key, label, _, fmt, y_max in QUALITY_MEASURES:
        trend = quality.get("trends", {}).get(key) or {}
        series = quality.get("series", {}).get(key, [])
        out[f"{key}_trend"] = _trend_cell(label, series, trend, fmt=fmt, y_max=y_max)
    return out


def with_quality_trends(shown: Table) -> Table:
    """The table's shown rows with their trend cells (``quality_trends``)."""
    for row in shown.rows:
        row |= quality_trends(row.get("quality"))
    return shown


def _trend_cell(
    label: str, series: list, trend: dict, *, fmt: str, y_max: float | None
) -> SafeString | None:
    if all(v is None for v in series):
        return None
    spark = charts.sparkline(
        title=f"{label} by block: " + ", ".join(_written(v, fmt) for v in series),
        values=series,
        y_max=y_max,
    )
    return format_html("{}{}", spark, trend_words(trend))


def quality_charts(quality: dict | None, *, name: str) -> list[dict]:
    """The member page's chart and table rows per measure, one point per block."""
    quality = quality or {}
    out = []
    for key, label, blocks, fmt, y_max in QUALITY_MEASURES:
        rows = [b for b in quality.get(blocks, []) if b.get(key) is not None]
        out.append(
            {
                "key": key,
                "label": label,
                "fmt": fmt,
                "trend": trend_words(quality.get("trends", {}).get(key)),
                "chart": charts.line(
                    title=f"{name}: {label}, by block of their work",
                    points=[((b["to"] or "")[5:], charts.floor0(b[key])) for b in rows],
                    fmt=(lambda v: f"{v:.0%}") if fmt == "pct" else (lambda v: f"{v:.2f}"),
                    y_max=y_max,
                    height=150,
                ),
            }
        )
    return out


def dashboard_context(data: dict, *, query: QueryDict, show_imported: bool = False) -> dict:
    """Charts (SVG) and tables of the dashboard from ``CampaignSnapshot.data``.

    The accounts an import made (``imported`` rows) are left out of the per-annotator chart and
    table unless ``show_imported``; the campaign-wide figures count every label.
    """
    data = data | {
        "annotators": [r for r in data["annotators"] if show_imported or not r.get("imported")]
    }
    days = data["progress"]
    ratings = data["ratings"]
    rated = ratings["negative"] + ratings["neutral"] + ratings["positive"]
    queue = data["queue"]
    by_kind = queue["by_kind"]
    people = sorted(data["annotators"], key=lambda r: -r["labels"])
    qc_days = data["qc"]["days"]
    histogram = data["seconds_per_step"]["histogram"]
    return {
        "charts": {
            "cumulative": charts.line(
                title="Step labels submitted, cumulative, by day (UTC)",
                points=[(d["day"][5:], d["cum_labels"]) for d in days],
                fmt=lambda v: f"{v:,.0f}",
                y_max=None,
            ),
            "per_day": charts.columns(
                title="Step labels submitted per day (UTC)",
                points=[(d["day"][5:], d["labels"]) for d in days],
            ),
            "throughput": charts.bars_horizontal(
                title="Step labels per annotator (top 15)",
                bars=[
                    charts.Bar(
                        r["username"],
                        r["labels"],
                        f"{r['labels']:,} labels"
                        + (
                            f", {r['labels_per_hour']:,.0f}/h"
                            if r.get("labels_per_hour") is not None
                            else ""
                        ),
                    )
                    for r in people[:15]
                ],
            ),
            "seconds": charts.columns(
                title="Seconds per step (solutions by their average)",
                points=[
                    (f"{b['from']}–{b['to']}" if b["to"] else f"{b['from']}+", b["n"])
                    for b in histogram
                ],
                most_labels=20,
            ),
            "ratings": charts.bars_horizontal(
                title="Ratings of submitted steps",
                bars=[
                    charts.Bar(
                        "+1 positive",
                        ratings["positive"],
                        _share_text(ratings["positive"], rated),
                        "pos",
                    ),
                    charts.Bar(
                        "0 neutral",
                        ratings["neutral"],
                        _share_text(ratings["neutral"], rated),
                        "neu",
                    ),
                    charts.Bar(
                        "−1 negative",
                        ratings["negative"],
                        _share_text(ratings["negative"], rated),
                        "neg",
                    ),
                    charts.Bar(
                        "flagged unsure", ratings["flagged"], _share_text(ratings["flagged"], rated)
                    ),
                ],
            ),
            "qc": charts.line(
                title="QC score (kappa with gold and first errors found), by day (UTC)",
                points=[(d["day"][5:], charts.floor0(d.get("score"))) for d in qc_days],
                fmt=lambda v: f"{v:.2f}",
            ),
            "queue": charts.bars_horizontal(
                title="Open solutions in the queue",
                bars=[
                    charts.Bar(
                        "regular", by_kind.get("regular", 0), f"{by_kind.get('regular', 0):,}"
                    ),
                    charts.Bar(
                        "  wrong final answer",
                        queue["wrong"],
                        _share_text(queue["wrong"], queue["regular"]),
                        "neg",
                    ),
                    charts.Bar(
                        "  right final answer",
                        queue["correct"],
                        _share_text(queue["correct"], queue["regular"]),
                        "pos",
                    ),
                    charts.Bar(
                        "  not graded",
                        queue["ungraded"],
                        _share_text(queue["ungraded"], queue["regular"]),
                    ),
                    charts.Bar(
                        "next 100: wrong answer",
                        queue["head_wrong"],
                        _share_text(queue["head_wrong"], queue["head"]),
                        "neg",
                    ),
                    charts.Bar(
                        "quality control", by_kind.get("qc", 0), f"{by_kind.get('qc', 0):,}"
                    ),
                    charts.Bar(
                        "screening", by_kind.get("screening", 0), f"{by_kind.get('screening', 0):,}"
                    ),
                ],
            ),
        },
        "annotators": table(
            data["annotators"], ANNOTATOR_COLUMNS, query=query, default_sort="-labels", prefix="a_"
        ),
        "quality": with_quality_trends(
            table(
                [r | quality_latest(r.get("quality")) for r in data["annotators"]],
                QUALITY_COLUMNS,
                query=query,
                default_sort="qc_score_latest",
                prefix="q_",
            )
        ),
        "rated": rated,
        "quality_block_qc": QC_BLOCK,
        "quality_block_work": WORK_BLOCK,
    }
