"""Each annotator's quality over the campaign's life, for the snapshot (``campaign_stats``).

A point is a block of the annotator's own work in submission order, not a calendar week: a week
holds three solutions of one annotator and three hundred of another, so weekly figures are noise
for the first and late for the second, and a campaign a few days old has one week and no trend.
Blocks of the same size give every point the same weight of evidence, show a trend within a
campaign's first days, and follow each person at their own pace; each point carries the days it
spans, so "falling since" is a date. Past ``MAX_BLOCKS`` blocks an annotator's blocks grow (all
of one size again), so a series keeps at most 24 points. Two kinds of block:

- **QC blocks**: ``QC_BLOCK`` (10) consecutive quality-control questions, scored as the screening
  gate and the pause rule score (``labeling.gold.scores``: kappa with the gold ratings and
  the share of gold first errors found);
- **work blocks**: ``WORK_BLOCK`` (25) consecutive submitted solutions (regular and QC; screening is
  everyone's unscreened first work and is left out, as in the agreement figures), with

  - *agreement with the consensus*: the share of their rated steps that match the other
    annotators' consensus, the rating a strict majority of the others gave
    (``labeling.consensus.strict_majority_rating``; a step without one, or rated by nobody else,
    is not counted);
  - *agreement with adjudication*: the share of their rated steps that carry a reviewer's current
    decision (``Adjudication``) and match it;
  - *seconds per step*: the median over the block's timed solutions of a solution's time over
    its rated steps (as ``stats``'s figure);
  - *flag rate*: flagged steps over rated steps.

Ratings are the annotators' own (a reviewer's corrections are the reviewer's). A trend compares
the last block with the one before, leaving out a last block under half its size (too little
evidence); "since" is the end of the block where the run of falls (or rises) began.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from labeling.consensus import strict_majority_rating
from labeling.gold.scores import gold_score
from labeling.models import Adjudication, Assignment, Campaign, Solution, StepLabel

QC_BLOCK = 10
WORK_BLOCK = 25
# The most points a series has: blocks grow past their base size to keep to it (``block_size``).
MAX_BLOCKS = 24
# A last block under half its size is drawn but left out of trends (too little evidence).
TREND_MIN_SHARE = 0.5
# Changes smaller than these are "steady": shares and scores in absolute terms, seconds relative.
STEADY_ABS = 0.02
STEADY_REL = 0.05

# The measures, in the order pages show them.
MEASURES = ("qc_score", "consensus", "adjudicated", "seconds_per_step", "flag_rate")


def _day(value: datetime | None) -> str | None:
    """The UTC day of a time, as ``YYYY-MM-DD``."""
    return value.astimezone(UTC).date().isoformat() if value else None


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def quality_over_time(
    *,
    campaign: Campaign,
    qc: Iterable[tuple[int, object, list, dict]],
    shared: Iterable[tuple[int, int, int, int]],
    work: Iterable[tuple[int, int, datetime | None, int | None, int, int]],
    qc_block: int = QC_BLOCK,
    work_block: int = WORK_BLOCK,
) -> dict[int, dict]:
    """Blocks and trends per annotator id (see the module docstring).

    ``qc``: (annotator id, submitted at, gold steps, their ratings by step index) per submitted
    QC assignment, as ``stats.qc_assignments`` reads them; ``shared``: (step id, annotator id,
    rating, assignment id) of every submitted rating on a step two or more rated
    (``stats.agreement_labels``); ``work``: (assignment id, annotator id, submitted at, total
    time in ms, rated steps, flagged steps) of every submitted regular and QC assignment
    (``stats`` reads them once for its own figures too). Reads the ratings on adjudicated steps
    (one query per 5,000 decided steps).
    """
    per_qc: dict[int, list] = defaultdict(list)
    for uid, at, gold, given in sorted(qc, key=lambda q: (q[0], q[1] is None, q[1])):
        per_qc[uid].append((at, gold, given))
    consensus = _consensus_by_assignment(shared)
    adjudicated = _adjudicated_by_assignment(campaign=campaign)
    per_work: dict[int, list] = defaultdict(list)
    for row in sorted(work, key=lambda r: (r[1], r[2] is None, r[2], r[0])):
        per_work[row[1]].append(row)
    out = {}
    for uid in set(per_qc) | set(per_work):
        qc_items, work_items = per_qc.get(uid, []), per_work.get(uid, [])
        qc_size, work_size = (
            block_size(len(qc_items), qc_block),
            block_size(len(work_items), work_block),
        )
        qc_blocks = [
            _qc_block(block, stop_at_first_error=campaign.stop_at_first_error)
            for block in _chunks(qc_items, qc_size)
        ]
        work_blocks = [
            _work_block(block, consensus=consensus, adjudicated=adjudicated)
            for block in _chunks(work_items, work_size)
        ]
        out[uid] = {
            "qc_blocks": qc_blocks,
            "work_blocks": work_blocks,
            "trends": {
                "qc_score": trend(qc_blocks, "qc_score", size=qc_size, size_key="questions"),
                **{
                    key: trend(work_blocks, key, size=work_size, size_key="solutions")
                    for key in ("consensus", "adjudicated", "seconds_per_step", "flag_rate")
                },
            },
        }
    return out


def quality_summary(quality: dict | None) -> dict | None:
    """What lists draw of one annotator (``data``'s part): each measure's trend and its values
    block by block (3 decimals), without the blocks' other figures."""
    if quality is None:
        return None
    kinds = {"qc_score": "qc_blocks"}
    series = {
        key: [
            None if (v := b.get(key)) is None else round(v, 3)
            for b in quality[kinds.get(key, "work_blocks")]
        ]
        for key in MEASURES
    }
    return {"trends": quality["trends"], "series": series}


def block_size(n: int, base: int) -> int:
    """``base``, or more once ``n`` items would make over ``MAX_BLOCKS`` blocks: the series keeps
    at most ``MAX_BLOCKS`` points of equal size, so an annotator with thousands of solutions
    costs the snapshot (and every page that reads it) no more than one with a few hundred."""
    return max(base, math.ceil(n / MAX_BLOCKS))


def _qc_block(block, *, stop_at_first_error: bool) -> dict:
    score = gold_score(((g, r) for _, g, r in block), stop_at_first_error=stop_at_first_error)
    return {
        "from": _day(block[0][0]),
        "to": _day(block[-1][0]),
        "questions": len(block),
        "qc_score": score.score,
        "kappa": score.kappa,
        "found": score.found,
        "errors": score.errors,
    }


def _work_block(block, *, consensus: dict, adjudicated: dict) -> dict:
    seconds = [ms / 1000 / n for _, _, _, ms, n, _ in block if ms is not None and n]
    rated = sum(row[4] for row in block)
    flagged = sum(row[5] for row in block)
    agree = compared = adj_agree = adj_compared = 0
    for pk, *_ in block:
        a, c = consensus.get(pk, (0, 0))
        agree, compared = agree + a, compared + c
        a, c = adjudicated.get(pk, (0, 0))
        adj_agree, adj_compared = adj_agree + a, adj_compared + c
    return {
        "from": _day(block[0][2]),
        "to": _day(block[-1][2]),
        "solutions": len(block),
        "steps": rated,
        "seconds_per_step": round(statistics.median(seconds), 2) if seconds else None,
        "flag_rate": flagged / rated if rated else None,
        "consensus": agree / compared if compared else None,
        "consensus_steps": compared,
        "adjudicated": adj_agree / adj_compared if adj_compared else None,
        "adjudicated_steps": adj_compared,
    }


def _consensus_by_assignment(shared) -> dict[int, tuple[int, int]]:
    """assignment id -> (steps matching the others' consensus, steps with a consensus).

    Per step, the ratings' counts once; each rater's "others" are those less their own (plain
    lists of three counts: at a million labels a Counter per rating took seconds)."""
    by_step: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for step, uid, rating, aid in shared:
        by_step[step].append((uid, rating, aid))
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for ratings in by_step.values():
        if len(ratings) == 2 and ratings[0][0] != ratings[1][0]:
            # Two raters (most steps): each one's consensus is the other's rating.
            same = ratings[0][1] == ratings[1][1]
            for _, _, aid in ratings:
                counted = out[aid]
                counted[0] += same
                counted[1] += 1
            continue
        total = [0, 0, 0]
        mine: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
        for uid, rating, _ in ratings:
            total[rating + 1] += 1
            mine[uid][rating + 1] += 1
        for uid, rating, aid in ratings:
            own = mine[uid]
            majority = strict_majority_rating([total[i] - own[i] for i in range(3)])
            if majority is None:
                continue
            counted = out[aid]
            counted[0] += rating == majority
            counted[1] += 1
    return {aid: (a, c) for aid, (a, c) in out.items()}


def _adjudicated_by_assignment(*, campaign: Campaign) -> dict[int, tuple[int, int]]:
    """assignment id -> (ratings equal to the step's current decision, ratings of decided steps)."""
    decided = dict(
        Adjudication.objects.filter(campaign=campaign, replaced_at__isnull=True).values_list(
            "step_id", "rating"
        )
    )
    steps = list(decided)
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for start in range(0, len(steps), 5000):
        for aid, step, rating in (
            StepLabel.objects.filter(
                step_id__in=steps[start : start + 5000],
                rating__isnull=False,
                assignment__status__in=Assignment.DONE_STATUSES,
            )
            .exclude(assignment__solution__kind=Solution.Kind.SCREENING)
            .order_by()
            .values_list("assignment_id", "step_id", "rating")
        ):
            out[aid][0] += rating == decided[step]
            out[aid][1] += 1
    return {aid: (a, c) for aid, (a, c) in out.items()}


def trend(blocks: list[dict], key: str, *, size: int, size_key: str) -> dict:
    """The latest value of ``key`` and where it is heading: ``direction`` (rising, falling,
    steady; None with fewer than two blocks) and ``since`` (the day the run began)."""
    usable = [
        b
        for i, b in enumerate(blocks)
        if b.get(key) is not None and (i < len(blocks) - 1 or b[size_key] >= size * TREND_MIN_SHARE)
    ]
    # The latest value: of the last block big enough for a trend, else of whatever there is
    # (a young campaign's first, partial block).
    known = [b[key] for b in blocks if b.get(key) is not None]
    latest = usable[-1][key] if usable else (known[-1] if known else None)
    if len(usable) < 2:
        return {"latest": latest, "direction": None, "since": None, "blocks": len(usable)}

    def step(a: float, b: float) -> int:
        margin = STEADY_REL * abs(a) if key == "seconds_per_step" else STEADY_ABS
        return 0 if abs(b - a) <= margin else (1 if b > a else -1)

    values = [b[key] for b in usable]
    direction = step(values[-2], values[-1])
    start = len(values) - 1
    if direction:
        while start > 0 and step(values[start - 1], values[start]) == direction:
            start -= 1
    since = usable[start]["to"] if direction else None
    words = {1: "rising", -1: "falling", 0: "steady"}[direction]
    return {"latest": latest, "direction": words, "since": since, "blocks": len(usable)}
