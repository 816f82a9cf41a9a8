"""The dashboard's charts and tables, built from a snapshot's figures (no database reads)."""

from __future__ import annotations

from django.http import QueryDict

from common import charts
from common.tables import Column, table


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
        "rated": rated,
    }
