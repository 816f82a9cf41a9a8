"""Curating a campaign's solutions from the data browser: requeue, archive, restore, make gold
(from the consensus: ``labeling.gold`` sets it), ground truth, send to
adjudication or for review (``AdjudicationRequest``, ``ReviewRequest``), grade the answers again
(after a change of the campaign's grading rule).

One solution or many: the bulk functions take a queryset (a selection, or everything a
``labeling.curation.filters.SolutionFilter`` matches). Many at once run as a
``SolutionBulkAction``, one kind of job (``BULK_ACTIONS``, ``common.jobs``) that a Celery worker
runs (``bulk_action_create`` / ``bulk_action_run``), all or nothing: one transaction, which also
records the outcome, its progress written from the job's heartbeat thread while it is open.

Queue state follows the queue's rules (``Solution.is_open``): a requeue wants more labels than the
campaign's overlap (``extra_labels``) and reopens the solution; an archived solution is never open
and never claimed, and keeps its labels; a restore reopens it if it still wants labels. Rows are
locked in id order, as every writer of the queue does (``labeling.queue``). Every change leaves a
``SolutionEvent`` for the solution's history.
"""

from __future__ import annotations

import functools
import logging

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from common.jobs import DONE, JobAttempt, JobKind, JobPage, job_run, stage_pause
from labeling.curation.filters import SolutionFilter
from labeling.gold.services import solutions_gold_from_consensus
from labeling.grading import solutions_grade
from labeling.models import (
    AdjudicationRequest,
    Assignment,
    Campaign,
    Problem,
    ReviewRequest,
    Solution,
    SolutionBulkAction,
    SolutionEvent,
    Step,
    StepEvidence,
    StepLabel,
    open_expression,
)
from labeling.permissions import MANAGE

log = logging.getLogger(__name__)

# Up to this many solutions an action runs in the request; more go to a worker as a job.
INLINE_MAX = 200
CHUNK = 500  # rows per UPDATE (SQLite's limit on query parameters)

Action = SolutionBulkAction.Action


def _locked_ids(solutions: QuerySet) -> list[int]:
    return list(
        solutions.order_by("pk").select_for_update(no_key=True).values_list("pk", flat=True)
    )


def _events(ids: list[int], action: str, actor, detail: dict | None = None) -> None:
    _events_each([(pk, detail or {}) for pk in ids], action, actor)


def _events_each(rows: list[tuple[int, dict]], action: str, actor) -> None:
    """One event per (solution id, detail)."""
    now = timezone.now()
    actor_id = getattr(actor, "pk", None)
    SolutionEvent.objects.bulk_create(
        [
            SolutionEvent(
                solution_id=pk, action=action, actor_id=actor_id, detail=detail, created_at=now
            )
            for pk, detail in rows
        ],
        batch_size=2000,
    )


def solution_event_add(*, solution: Solution, action: str, actor=None, detail=None) -> None:
    """Record something a manager did to one solution elsewhere (made it gold) for its history."""
    _events([solution.pk], action, actor, detail)


def _chunks(ids: list[int]):
    for start in range(0, len(ids), CHUNK):
        yield ids[start : start + CHUNK]


def solutions_requeue(
    *, campaign: Campaign, solutions: QuerySet, actor=None, labels: int = 1, progress=None
) -> int:
    """Ask for ``labels`` more labels of each solution than it has wanted so far, and reopen it.

    Archived solutions are left alone (restore them first). Returns how many were requeued.
    """
    if labels < 1:
        raise ValueError("A requeue asks for at least one more label.")
    with transaction.atomic():
        ids = _locked_ids(solutions.filter(campaign=campaign, archived=False))
        not_bad = Q(bad_problem_reports__lt=campaign.bad_problem_limit)
        # Every right-hand side of an UPDATE reads the old row: the bound counts the new labels.
        room = Q(assignment_count__lt=F("extra_labels") + (campaign.overlap + labels))
        for chunk in _chunks(ids):
            Solution.objects.filter(pk__in=chunk).update(
                extra_labels=F("extra_labels") + labels, is_open=open_expression(room, not_bad)
            )
            if progress:
                progress(len(chunk))
        _events(ids, SolutionEvent.Action.REQUEUED, actor, {"labels": labels})
    return len(ids)


def solutions_archive(*, campaign: Campaign, solutions: QuerySet, actor=None, progress=None) -> int:
    """Take solutions out of the queue for good, keeping their labels; returns how many."""
    with transaction.atomic():
        ids = _locked_ids(solutions.filter(campaign=campaign, archived=False))
        for chunk in _chunks(ids):
            Solution.objects.filter(pk__in=chunk).update(archived=True, is_open=False)
            if progress:
                progress(len(chunk))
        _events(ids, SolutionEvent.Action.ARCHIVED, actor)
    return len(ids)


def solutions_restore(*, campaign: Campaign, solutions: QuerySet, actor=None, progress=None) -> int:
    """Bring archived solutions back; each is open again if it still wants labels."""
    with transaction.atomic():
        ids = _locked_ids(solutions.filter(campaign=campaign, archived=True))
        room = Q(assignment_count__lt=F("extra_labels") + campaign.overlap)
        not_bad = Q(bad_problem_reports__lt=campaign.bad_problem_limit)
        for chunk in _chunks(ids):
            rows = Solution.objects.filter(pk__in=chunk)
            rows.update(archived=False)
            rows.update(is_open=open_expression(room, not_bad))
            if progress:
                progress(len(chunk))
        _events(ids, SolutionEvent.Action.RESTORED, actor)
    return len(ids)


def problem_ground_truth_set(*, problem: Problem, answer: str, actor=None) -> int:
    """Change a problem's ground-truth answer and grade its solutions again against it.

    Returns how many solutions were graded right or wrong. With no ground truth left, every
    solution of the problem is ungraded.
    """
    answer = (answer or "").strip()
    with transaction.atomic():
        before = problem.ground_truth_answer
        Problem.objects.filter(pk=problem.pk).update(ground_truth_answer=answer)
        problem.ground_truth_answer = answer
        solutions = Solution.objects.filter(problem=problem)
        ids = list(solutions.values_list("pk", flat=True))
        _events(ids, SolutionEvent.Action.GROUND_TRUTH, actor, {"from": before, "to": answer})
        # Solutions with no answer, or all of them when the truth is gone, are ungraded.
        solutions.update(answer_is_correct=None)
    return solutions_grade(solutions=solutions, regrade=True).graded


def solutions_regrade(*, campaign: Campaign, solutions: QuerySet, actor=None, progress=None) -> int:
    """Grade these solutions' final answers again under the campaign's grading rule as it is
    now; returns how many changed (each changed one gets a ``regraded`` event: from, to, rule).

    The campaign's row is locked first, so two rule changes in a row regrade one after the
    other, each under the rule then current: the last one to run leaves the grades of the rule
    the campaign shows.
    """
    with transaction.atomic():
        rule = Campaign.objects.select_for_update().values_list("grading_rule", flat=True)
        rule_now = rule.get(pk=campaign.pk)
        mine = solutions.filter(campaign=campaign)
        before = dict(mine.values_list("pk", "answer_is_correct"))
        solutions_grade(solutions=mine, regrade=True, rule=rule_now)
        after = dict(
            Solution.objects.filter(pk__in=list(before)).values_list("pk", "answer_is_correct")
        )
        changed = [
            (pk, {"from": was, "to": after[pk], "rule": rule_now})
            for pk, was in sorted(before.items())
            if after[pk] != was
        ]
        _events_each(changed, SolutionEvent.Action.REGRADED, actor)
        if progress:
            progress(len(before))
    return len(changed)


def solutions_make_gold(
    *, campaign: Campaign, solutions: QuerySet, kind: str, actor=None, progress=None
) -> int:
    """Make solutions quality-control or screening questions whose gold is the consensus of
    their submitted ratings (``labeling.consensus.plurality_rating`` per step: ties to the more
    negative; a step nobody rated has no gold). A solution nobody rated is left as it is. Returns
    how many became gold.
    """
    if kind not in (Solution.Kind.QUALITY_CONTROL, Solution.Kind.SCREENING):
        raise ValueError(f"Gold is qc or screening, not {kind!r}.")
    made: list[int] = []
    with transaction.atomic():
        ids = _locked_ids(solutions.filter(campaign=campaign))
        for chunk in _chunks(ids):
            made += solutions_gold_from_consensus(solution_ids=chunk, kind=kind)
            if progress:
                progress(len(chunk))
        _events(made, SolutionEvent.Action.MADE_GOLD, actor, {"kind": kind, "from": "consensus"})
    return len(made)


def solutions_send_to_adjudication(
    *, campaign: Campaign, solutions: QuerySet, actor=None, progress=None
) -> int:
    """Put steps of the solutions in the adjudication queue, where a reviewer sets each one's
    final rating; returns how many solutions had a step sent.

    Which steps: those whose machine evidence the human labels contradict
    (``StepEvidenceQuerySet.conflicting``, the rule's one home); for a solution without such a
    conflict, every step an annotator rated (submitted work). A solution nobody rated, and a
    quality-control or screening one (their gold decides), sends nothing. Sending a step again
    renews its request.
    """
    sent: dict[int, list[int]] = {}
    now = timezone.now()
    actor_id = getattr(actor, "pk", None)
    with transaction.atomic():
        ids = _locked_ids(solutions.filter(campaign=campaign, kind=Solution.Kind.REGULAR))
        for chunk in _chunks(ids):
            conflicting = set(
                StepEvidence.objects.filter(solution_id__in=chunk)
                .conflicting()
                .values_list("step_id", flat=True)
            )
            rated = set(
                StepLabel.objects.submitted()
                .filter(assignment__solution_id__in=chunk, rating__isnull=False)
                .values_list("step_id", flat=True)
            )
            steps: dict[int, list[tuple[int, int]]] = {}
            for step_id, solution_id, index in Step.objects.filter(
                solution_id__in=chunk
            ).values_list("pk", "solution_id", "index"):
                steps.setdefault(solution_id, []).append((index, step_id))
            requests = []
            for solution_id, own in steps.items():
                chosen = [s for s in own if s[1] in conflicting] or [
                    s for s in own if s[1] in rated
                ]
                for index, step_id in sorted(chosen):
                    requests.append(
                        AdjudicationRequest(
                            campaign=campaign,
                            solution_id=solution_id,
                            step_id=step_id,
                            requested_by_id=actor_id,
                            requested_at=now,
                        )
                    )
                    sent.setdefault(solution_id, []).append(index)
            AdjudicationRequest.objects.bulk_create(
                requests,
                update_conflicts=True,
                unique_fields=["step"],
                update_fields=["requested_by", "requested_at"],
                batch_size=1000,
            )
            if progress:
                progress(len(chunk))
        _events_each(
            [
                (pk, {"steps": ", ".join(str(i + 1) for i in sorted(indexes))})
                for pk, indexes in sorted(sent.items())
            ],
            SolutionEvent.Action.SENT_TO_ADJUDICATION,
            actor,
        )
    return len(sent)


def solutions_send_to_review(
    *, campaign: Campaign, solutions: QuerySet, actor=None, progress=None
) -> int:
    """Queue the solutions' submitted work for review (the review queue's "sent for review"),
    reviewed before or not; returns how many solutions had work to send. Sending a solution again
    renews its request.
    """
    now = timezone.now()
    actor_id = getattr(actor, "pk", None)
    sent: dict[int, int] = {}
    with transaction.atomic():
        ids = _locked_ids(solutions.filter(campaign=campaign))
        for chunk in _chunks(ids):
            for solution_id in Assignment.objects.filter(
                solution_id__in=chunk, status=Assignment.Status.SUBMITTED
            ).values_list("solution_id", flat=True):
                sent[solution_id] = sent.get(solution_id, 0) + 1
            ReviewRequest.objects.bulk_create(
                [
                    ReviewRequest(
                        campaign=campaign,
                        solution_id=pk,
                        requested_by_id=actor_id,
                        requested_at=now,
                    )
                    for pk in chunk
                    if pk in sent
                ],
                update_conflicts=True,
                unique_fields=["solution"],
                update_fields=["requested_by", "requested_at"],
                batch_size=1000,
            )
            if progress:
                progress(len(chunk))
        _events_each(
            [(pk, {"submissions": n}) for pk, n in sorted(sent.items())],
            SolutionEvent.Action.SENT_TO_REVIEW,
            actor,
        )
    return len(sent)


# --- Many at once: a background job ------------------------------------------------------------


def bulk_action_create(
    *, campaign: Campaign, action: str, solution_filter: SolutionFilter, created_by=None
) -> SolutionBulkAction:
    """Record a bulk action over what the filter matches; run it now when it is small, else have
    a Celery worker run it once the row is committed.

    A small one runs in the request like any job (``bulk_action_run``); its failure is recorded
    on the job, which the page shows, and never fails the request.
    """
    if action not in Action.values:
        raise ValueError(f"Unknown action {action!r}.")
    matching = solution_filter.apply(Solution.objects.filter(campaign=campaign))
    total = matching.count()
    job = SolutionBulkAction.objects.create(
        campaign=campaign,
        action=action,
        selection=solution_filter.to_params(with_sort=False),
        total=total,
        created_by=created_by,
    )
    if total > INLINE_MAX:
        BULK_ACTIONS.send(job.pk)
        return job
    try:
        return bulk_action_run(job=job)
    except Exception:  # recorded on the job by job_run, and logged
        job.refresh_from_db()
        return job


_RUNNERS = {
    Action.REQUEUE: solutions_requeue,
    Action.ARCHIVE: solutions_archive,
    Action.RESTORE: solutions_restore,
    Action.GOLD_QC: functools.partial(solutions_make_gold, kind=Solution.Kind.QUALITY_CONTROL),
    Action.GOLD_SCREENING: functools.partial(solutions_make_gold, kind=Solution.Kind.SCREENING),
    Action.ADJUDICATE: solutions_send_to_adjudication,
    Action.REVIEW: solutions_send_to_review,
    Action.REGRADE: solutions_regrade,
}


def bulk_action_run(*, job: SolutionBulkAction) -> SolutionBulkAction:
    """Run a bulk action in this process, as its Celery task does (``common.jobs.job_run``).

    A job that is finished, or taken by a live worker, is returned as it is; a failure changes
    nothing, is recorded on the job, then raised.
    """
    return job_run(BULK_ACTIONS, job) or job


def _bulk_action_work(job: SolutionBulkAction, attempt: JobAttempt) -> None:
    """Apply the action to every solution its selection matches now, in one transaction that
    also marks the job done (only while this attempt owns it): all or nothing.

    So a worker killed half way leaves nothing changed, and the sweep's next attempt applies the
    whole action afresh (the selection is resolved again then).
    """
    seen = {"done": 0}

    def progress(n: int) -> None:
        seen["done"] += n
        done = seen["done"]
        share = min(1.0, done / job.total) if job.total else 0.0
        attempt.report(done=done, progress=round(share, 3))

    selection = SolutionFilter.from_params(job.selection)
    solutions = selection.apply(Solution.objects.filter(campaign=job.campaign))
    with transaction.atomic():
        changed = _RUNNERS[job.action](
            campaign=job.campaign, solutions=solutions, actor=job.created_by, progress=progress
        )
        stage_pause("bulk_actions.apply")
        attempt.finish(DONE, changed=changed, done=job.total, progress=1.0)


BULK_ACTIONS = JobKind(
    name="bulk_actions",
    model=SolutionBulkAction,
    task="labeling.bulk_action_run",
    work=_bulk_action_work,
    related=("campaign", "created_by"),
    page=JobPage(
        template="labeling/_bulk_action_job.html",
        url="labeling:browser",
        viewers=MANAGE,
        element="section",
        css_class="card bulk-job",
    ),
)
