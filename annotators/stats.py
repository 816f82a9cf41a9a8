"""A campaign's progress and quality figures, as plain JSON for ``CampaignSnapshot.data``.

``campaign_stats`` reads every submitted label of the campaign, so at a million labels it takes
seconds: a Celery task runs it (``annotators.snapshot_refresh``) and pages render what it stored.
Definitions, all over submitted assignments:

- progress: assignments and rated step labels per day (UTC) of submission, and cumulative;
- seconds per step: an assignment's total time over its rated steps (both recorded by the queue
  and by PRM800K's ``total_time``); the median over assignments, overall and per annotator;
- QC score: on quality-control solutions, the queue's own score against gold
  (``labeling.gold.scores``: the mean of Cohen's kappa with the gold ratings and the share of
  gold first errors found, what screening passes on), with its parts and the old figure, the
  share of scored steps equal to the gold rating (steps with a gold rating, up to the first gold
  negative with stop-at-first-error; an unrated step disagrees);
- inter-annotator agreement: Krippendorff's alpha (nominal, and interval as a second figure) and
  pairwise Cohen's kappa over steps rated by at least two annotators, on regular and QC solutions
  (screening is left out: it is everyone's first, unscreened work). Raw ratings: a reviewer's
  corrections are the reviewer's, not the annotator's;
- quality over time, per annotator (``annotators.quality``): QC score, agreement with the
  consensus and with adjudicated decisions, seconds per step and flag rate, over consecutive
  blocks of their own work, with each measure's trend;
- queue: open solutions by kind, and among open regular ones how many have a wrong final answer
  (``answer_is_correct`` false), in the whole queue and in its head (the next 100 served).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db.models import Count, Q

from annotators import agreement
from annotators.quality import quality_over_time, quality_summary
from labeling.gold.scores import gold_score
from labeling.models import Assignment, Campaign, Membership, Review, Solution, Step, StepLabel

# The queue's head: how many solutions the next annotators will be served (active learning puts
# convincing wrong answers there).
QUEUE_HEAD = 100
# Pairs of annotators kept in a snapshot, most shared steps first: with hundreds of annotators the
# full list would be tens of thousands of rows nobody reads; the per-annotator figures use them all.
MAX_PAIRS = 5000


def _day(value: datetime | None) -> str | None:
    """The UTC day of a time, as ``YYYY-MM-DD`` (JSON keys and chart labels)."""
    return value.astimezone(UTC).date().isoformat() if value else None


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def campaign_stats(*, campaign: Campaign) -> dict:
    """Every figure the dashboard, the members list and the agreement page show (JSON-ready)."""
    submitted = Assignment.objects.filter(campaign=campaign, status__in=Assignment.DONE_STATUSES)
    work = work_rows(submitted, campaign=campaign)
    qc_work = qc_assignments(campaign=campaign)
    qc = qc_agreement(campaign=campaign, assignments=qc_work)
    shared = agreement_labels(campaign=campaign)
    inter = _agreement(triples=[t[:3] for t in shared])
    quality = quality_over_time(
        campaign=campaign, qc=qc_work, shared=shared, work=work.pop("blocks_work")
    )
    users = dict(
        get_user_model()
        .objects.filter(pk__in=set(work["annotators"]) | set(qc["annotators"]) | inter["coders"])
        .values_list("pk", "username")
    )
    imported = set(
        Membership.objects.filter(campaign=campaign, is_imported=True).values_list(
            "user_id", flat=True
        )
    )
    annotators = []
    for uid in sorted(set(work["annotators"]) | set(qc["annotators"]) | inter["coders"]):
        name = users.get(uid, str(uid))
        row = {
            "id": uid,
            "username": Membership.short_name(name, imported=uid in imported),
            "imported": uid in imported,
        }
        row.update(work["annotators"].get(uid, _empty_work()))
        q = qc["annotators"].get(uid, {"agree": 0, "scored": 0})
        row["qc_steps"] = q["scored"]
        row["qc_agreement"] = _ratio(q["agree"], q["scored"])
        row["qc_score"] = q.get("score")
        row["qc_kappa"] = q.get("kappa")
        row["qc_first_error"] = q.get("first_error")
        row.update(inter["per_annotator"].get(uid, _empty_agreement()))
        row["quality"] = quality_summary(quality.get(uid))
        annotators.append(row)
    for pair in inter["pairs"]:
        for side in ("a", "b"):
            uid = pair[f"{side}_id"]
            pair[side] = Membership.short_name(users.get(uid, str(uid)), imported=uid in imported)
        pair["imported"] = pair["a_id"] in imported or pair["b_id"] in imported
    return {
        "totals": _totals(campaign=campaign, work=work, imported=imported),
        "progress": work["days"],
        "ratings": _ratings(submitted),
        "seconds_per_step": work["seconds_per_step"],
        "annotators": annotators,
        "qc": {
            "steps": qc["scored"],
            "agreement": _ratio(qc["agree"], qc["scored"]),
            "score": qc["score"],
            "kappa": qc["kappa"],
            "first_error": qc["first_error"],
            "days": qc["days"],
        },
        "agreement": {key: inter[key] for key in ("alpha_nominal", "alpha_interval", "units")}
        | {"labels": inter["labels"], "pairs": inter["pairs"], "pairs_total": inter["pairs_total"]},
        "queue": _queue(campaign=campaign),
        "reviews": _reviews(campaign=campaign),
        "members": _members(campaign=campaign),
        # Every block, stored apart (``CampaignSnapshot.quality``): the member page reads it.
        "quality_blocks": {f"u{uid}": q for uid, q in quality.items()},
    }


def _empty_work() -> dict:
    return {
        "assignments": 0,
        "labels": 0,
        "hours": 0.0,
        "labels_per_hour": None,
        "median_seconds_per_step": None,
        "first": None,
        "last": None,
    }


def _empty_agreement() -> dict:
    return {"shared": 0, "percent": None, "kappa": None, "alpha": None}


def work_rows(submitted, *, campaign: Campaign) -> dict:
    """Per day and per annotator: assignments, rated labels, time; medians of seconds per step."""
    rows = submitted.annotate(
        n=Count("labels", filter=Q(labels__rating__isnull=False)),
        flagged=Count("labels", filter=Q(labels__rating__isnull=False, labels__flagged=True)),
    ).values_list(
        "annotator_id", "submitted_at", "total_time_ms", "n", "pk", "flagged", "solution_id"
    )
    # Screening solutions are few: their ids, rather than a join on every assignment.
    screening = set(
        Solution.objects.filter(campaign=campaign, kind=Solution.Kind.SCREENING).values_list(
            "pk", flat=True
        )
    )
    days: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per: dict[int, dict] = {}
    per_step: dict[int, list[float]] = defaultdict(list)
    everyone: list[float] = []
    # Regular and QC work, for quality over time (``annotators.quality``).
    blocks_work = []
    for uid, at, total_ms, n, pk, flagged, solution_id in rows.iterator(chunk_size=10_000):
        if solution_id not in screening:
            blocks_work.append((pk, uid, at, total_ms, n, flagged))
        day = _day(at)
        if day is not None:
            days[day][0] += 1
            days[day][1] += n
        p = per.setdefault(uid, {"assignments": 0, "labels": 0, "ms": 0, "timed_labels": 0})
        p["assignments"] += 1
        p["labels"] += n
        if total_ms is not None and n:
            p["ms"] += total_ms
            p["timed_labels"] += n
            seconds = total_ms / 1000 / n
            per_step[uid].append(seconds)
            everyone.append(seconds)
        if at is not None:
            p["first"] = min(p.get("first") or at, at)
            p["last"] = max(p.get("last") or at, at)
    out_days, cum_a, cum_l = [], 0, 0
    for day in sorted(days):
        a, n = days[day]
        cum_a, cum_l = cum_a + a, cum_l + n
        out_days.append(
            {
                "day": day,
                "assignments": a,
                "labels": n,
                "cum_assignments": cum_a,
                "cum_labels": cum_l,
            }
        )
    annotators = {}
    for uid, p in per.items():
        hours = p["ms"] / 3_600_000
        annotators[uid] = {
            "assignments": p["assignments"],
            "labels": p["labels"],
            "hours": round(hours, 3),
            "labels_per_hour": round(p["timed_labels"] / hours, 1) if hours else None,
            "median_seconds_per_step": (
                round(statistics.median(per_step[uid]), 2) if per_step[uid] else None
            ),
            "first": p.get("first").isoformat() if p.get("first") else None,
            "last": p.get("last").isoformat() if p.get("last") else None,
        }
    return {
        "blocks_work": blocks_work,
        "days": out_days,
        "annotators": annotators,
        "assignments": sum(p["assignments"] for p in per.values()),
        "labels": sum(p["labels"] for p in per.values()),
        "seconds_per_step": {
            "median": round(statistics.median(everyone), 2) if everyone else None,
            "assignments": len(everyone),
            "histogram": _histogram(everyone),
        },
    }


# Bins of the seconds-per-step histogram: fine where most work falls, one bin for the long tail.
BINS = [0, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300]


def _histogram(values: Iterable[float]) -> list[dict]:
    counts = Counter()
    for v in values:
        for lo, hi in zip(BINS, [*BINS[1:], None], strict=True):
            if hi is None or v < hi:
                counts[lo] += 1
                break
    return [
        {"from": lo, "to": hi, "n": counts[lo]}
        for lo, hi in zip(BINS, [*BINS[1:], None], strict=True)
    ]


def _ratings(submitted) -> dict:
    labels = StepLabel.objects.filter(assignment__in=submitted.values("pk"))
    by_rating = dict(
        labels.filter(rating__isnull=False)
        .values_list("rating")
        .annotate(n=Count("id"))
        .values_list("rating", "n")
    )
    return {
        "negative": by_rating.get(-1, 0),
        "neutral": by_rating.get(0, 0),
        "positive": by_rating.get(1, 0),
        "flagged": labels.filter(flagged=True).count(),
    }


def qc_assignments(
    *, campaign: Campaign, annotator_id: int | None = None
) -> list[tuple[int, datetime | None, list[tuple[int, int | None]], dict[int, int]]]:
    """(annotator id, submitted at, gold steps, their ratings by step index) of every submitted
    quality-control assignment, in submission order (only ``annotator_id``'s with it)."""
    assignments = Assignment.objects.filter(
        campaign=campaign,
        status__in=Assignment.DONE_STATUSES,
        solution__kind=Solution.Kind.QUALITY_CONTROL,
    )
    if annotator_id is not None:
        assignments = assignments.filter(annotator_id=annotator_id)
    meta = list(
        assignments.order_by("submitted_at", "pk").values_list(
            "pk", "solution_id", "annotator_id", "submitted_at"
        )
    )
    gold: dict[int, list[tuple[int, int | None]]] = defaultdict(list)
    for sid, index, rating in (
        Step.objects.filter(solution_id__in={m[1] for m in meta})
        .order_by("solution_id", "index")
        .values_list("solution_id", "index", "gold_rating")
    ):
        gold[sid].append((index, rating))
    given: dict[int, dict[int, int]] = defaultdict(dict)
    ids = [m[0] for m in meta]
    # By explicit ids, in chunks: a subquery lets PostgreSQL scan every label of the campaign,
    # and SQLite takes a limited number of parameters.
    for start in range(0, len(ids), 5000):
        for aid, index, rating in (
            StepLabel.objects.filter(assignment_id__in=ids[start : start + 5000])
            .filter(rating__isnull=False)
            .order_by()
            .values_list("assignment_id", "step__index", "rating")
        ):
            given[aid][index] = rating
    return [(uid, at, gold[sid], given[aid]) for aid, sid, uid, at in meta]


def qc_agreement(
    *, campaign: Campaign, annotator_id: int | None = None, assignments: list | None = None
) -> dict:
    """Scores against gold on quality-control solutions: overall, per day, per annotator.

    Each annotator's work is scored as the screening gate scores it (``gold_score``: kappa, first
    errors found, their mean ``score``, and the old share of steps alike, ``agree``/``scored``);
    overall and per day, everyone's QC work is scored together. With ``annotator_id`` only that
    annotator's work is read (the member page, live); ``days`` is then their series.
    ``assignments``: what ``qc_assignments`` read, when the caller has it already.
    """
    if assignments is None:
        assignments = qc_assignments(campaign=campaign, annotator_id=annotator_id)
    per: dict[int, list] = defaultdict(list)
    days: dict[str, list] = defaultdict(list)
    everything = []
    for uid, at, gold, given in assignments:
        item = (gold, given)
        per[uid].append(item)
        everything.append(item)
        if (day := _day(at)) is not None:
            days[day].append(item)

    def score(items) -> dict:
        return gold_score(items, stop_at_first_error=campaign.stop_at_first_error).as_dict()

    overall = score(everything)
    return overall | {
        "annotators": {uid: score(items) for uid, items in per.items()},
        "days": [{"day": d} | score(items) for d, items in sorted(days.items())],
    }


def agreement_triples(*, campaign: Campaign) -> list[tuple[int, int, int]]:
    """(step, annotator, rating) of every submitted rating on a step that two or more rated."""
    return [t[:3] for t in agreement_labels(campaign=campaign)]


def agreement_labels(*, campaign: Campaign) -> list[tuple[int, int, int, int]]:
    """(step, annotator, rating, assignment) of every submitted rating on a step that two or
    more rated.

    Only solutions with two or more submitted assignments can have such steps: they are found
    first among the assignments (a small GROUP BY), so only their labels are read.
    """
    submitted = Assignment.objects.filter(
        campaign=campaign, status__in=Assignment.DONE_STATUSES
    ).exclude(solution__kind=Solution.Kind.SCREENING)
    shared = (
        submitted.order_by()
        .values("solution_id")
        .annotate(n=Count("id"))
        .filter(n__gte=2)
        .values("solution_id")
    )
    # Rated labels only (``rating`` is never null here).
    by_step: dict[int, list] = defaultdict(list)
    for step, annotator, rating, assignment in (
        StepLabel.objects.filter(
            assignment__in=submitted.filter(solution_id__in=shared).values("pk"),
            rating__isnull=False,
        )
        .order_by()
        .values_list("step_id", "assignment__annotator_id", "rating", "assignment_id")
    ):
        by_step[step].append((step, annotator, rating, assignment))
    return [t for ratings in by_step.values() if len(ratings) >= 2 for t in ratings]


def _agreement(*, triples: list[tuple[int, int, int]]) -> dict:
    pairs = agreement.pairwise_kappa(triples)
    coders = agreement.per_coder(pairs)
    by_unit: dict[int, list] = defaultdict(list)
    by_coder: dict[int, list] = defaultdict(list)
    for t in triples:
        by_unit[t[0]].append(t)
        by_coder[t[1]].append(t[0])
    per_annotator = {}
    for coder, units in by_coder.items():
        # Alpha over the steps this annotator rated, with everyone's ratings of them.
        mine = [t for unit in units for t in by_unit[unit]]
        c = coders.get(coder)
        per_annotator[coder] = {
            "shared": c.shared if c else 0,
            "percent": c.percent if c else None,
            "kappa": c.kappa if c else None,
            "alpha": agreement.krippendorff_alpha(mine),
        }
    ordered = sorted(pairs, key=lambda p: (-p.shared, str(p.coder_a), str(p.coder_b)))
    return {
        "alpha_nominal": agreement.krippendorff_alpha(triples, metric="nominal"),
        "alpha_interval": agreement.krippendorff_alpha(triples, metric="interval"),
        "units": len({t[0] for t in triples}),
        "labels": len(triples),
        "coders": set(by_coder),
        "per_annotator": per_annotator,
        "pairs_total": len(pairs),
        "pairs": [
            {
                "a_id": p.coder_a,
                "b_id": p.coder_b,
                "shared": p.shared,
                "percent": p.percent,
                "kappa": p.kappa,
            }
            for p in ordered[:MAX_PAIRS]
        ],
    }


def _totals(*, campaign: Campaign, work: dict, imported: set[int]) -> dict:
    kinds = {
        kind: {"solutions": n, "open": n_open, "done": n_done}
        for kind, n, n_open, n_done in Solution.objects.filter(campaign=campaign)
        .values_list("kind")
        .annotate(
            n=Count("id"),
            n_open=Count("id", filter=Q(is_open=True)),
            n_done=Count("id", filter=Q(assignment_count__gte=campaign.overlap)),
        )
        .values_list("kind", "n", "n_open", "n_done")
    }
    regular = kinds.get(Solution.Kind.REGULAR, {"solutions": 0, "open": 0, "done": 0})
    return {
        "solutions": sum(k["solutions"] for k in kinds.values()),
        "by_kind": kinds,
        "regular": regular["solutions"],
        # "Done": holds as many slots as the overlap asks for (submitted, or still being labelled).
        "regular_done": regular["done"],
        "regular_done_share": _ratio(regular["done"], regular["solutions"]),
        "assignments": work["assignments"],
        "labels": work["labels"],
        # Active annotators: people with submitted work, not the accounts an import made.
        "annotators": len(set(work["annotators"]) - imported),
        "imported_annotators": len(set(work["annotators"]) & imported),
    }


def _queue(*, campaign: Campaign) -> dict:
    open_ = Solution.objects.filter(campaign=campaign, is_open=True)
    by_kind = dict(open_.values_list("kind").annotate(n=Count("id")).values_list("kind", "n"))
    answers = dict(
        open_.filter(kind=Solution.Kind.REGULAR)
        .values_list("answer_is_correct")
        .annotate(n=Count("id"))
        .values_list("answer_is_correct", "n")
    )
    head = list(
        open_.filter(kind=Solution.Kind.REGULAR)
        .order_by("-priority", "pk")
        .values_list("answer_is_correct", flat=True)[:QUEUE_HEAD]
    )
    regular = sum(answers.values())
    return {
        "open": sum(by_kind.values()),
        "by_kind": by_kind,
        "regular": regular,
        "wrong": answers.get(False, 0),
        "correct": answers.get(True, 0),
        "ungraded": answers.get(None, 0),
        "wrong_share": _ratio(answers.get(False, 0), regular),
        "head": len(head),
        "head_wrong": sum(1 for c in head if c is False),
        "head_wrong_share": _ratio(sum(1 for c in head if c is False), len(head)),
    }


def _reviews(*, campaign: Campaign) -> dict:
    reviews = Review.objects.filter(assignment__campaign=campaign)
    by = dict(reviews.values_list("decision").annotate(n=Count("id")).values_list("decision", "n"))
    return {
        "accepted": by.get(Review.Decision.ACCEPTED, 0),
        "rejected": by.get(Review.Decision.REJECTED, 0),
        "corrected": reviews.exclude(corrections={}).count(),
    }


def _members(*, campaign: Campaign) -> dict:
    rows = (
        Membership.objects.filter(campaign=campaign)
        .values_list("role", "status", "screening", "is_imported")
        .annotate(n=Count("id"))
        .values_list("role", "status", "screening", "is_imported", "n")
    )
    out: dict[str, Counter] = {"role": Counter(), "status": Counter(), "screening": Counter()}
    imported = 0
    for role, status, screening, is_imported, n in rows:
        if is_imported:
            # Accounts an import made: counted apart, never in a role or waiting for screening.
            imported += n
            continue
        out["status"][status] += n
        if status == Membership.Status.REMOVED:
            continue
        out["role"][role] += n
        if role == Membership.Role.ANNOTATOR:
            out["screening"][screening] += n
    return {k: dict(v) for k, v in out.items()} | {"imported": imported}
