"""Active learning: retrain the PRM on the labels so far and put convincing wrong answers first.

PRM800K's selection rule ("Let's Verify Step by Step", section 4): score every open solution with
the current PRM and show labelers mostly *convincing wrong-answer* solutions (the PRM rates them
highly but their final answer is wrong), plus some of the most convincing others. The queue serves
by ``Solution.priority`` (highest first), so a run rewrites ``priority`` in bulk.

The run is a Celery task (``learning.tasks.active_learning_run_task``) around
``active_learning_run``; ``active_learning_trigger`` creates the run row, which is also the lock
(see ``ActiveLearningRun``), and enqueues the task on commit.

Failure safety: the new model is registered inactive, and only the last step, one transaction,
activates it and rewrites the queue. A worker killed before that leaves the previous model active
and the queue as it was; the run keeps its lock until the sweep (``active_learning_sweep``, on beat)
sees its heartbeat go stale and queues it again, or fails it after ``STEPWISE_AL_MAX_ATTEMPTS``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from common.jobs import JobBeat
from labeling.models import Assignment, Campaign, Problem, Solution, Step, StepLabel
from learning.models import ActiveLearningRun, PRMModel

log = logging.getLogger(__name__)

HEAD_SIZE = 100  # the queue head a run describes (and the page shows)
SCORE_BATCH = 4096  # solutions scored at a time, per scoring process
WRITE_BATCH = 20000  # rows per bulk UPDATE


class RunSuperseded(Exception):
    """Another attempt took this run over (the sweep thought this worker was dead)."""


# --- Triggering ------------------------------------------------------------------------------


def active_learning_trigger(
    *,
    campaign: Campaign,
    requested_by: AbstractBaseUser | None = None,
    trigger: str = ActiveLearningRun.Trigger.MANUAL,
) -> ActiveLearningRun:
    """Queue a run for the campaign, or return the one already queued or running.

    The partial unique constraint makes this safe under concurrency: two triggers at once create one
    run, the loser reads the winner's row. The task is enqueued when the transaction commits, so a
    worker never looks for a row it cannot see yet.
    """
    existing = _active_run(campaign)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            run = ActiveLearningRun.objects.create(
                campaign=campaign, trigger=trigger, requested_by=requested_by
            )
    except IntegrityError:
        existing = _active_run(campaign)
        if existing is None:  # finished in between: the caller may simply ask again
            raise
        return existing
    _enqueue(run.pk)
    return run


def _active_run(campaign: Campaign) -> ActiveLearningRun | None:
    return (
        ActiveLearningRun.objects.filter(
            campaign=campaign, status__in=ActiveLearningRun.ACTIVE_STATUSES
        )
        .order_by("pk")
        .first()
    )


def _enqueue(run_id: int) -> None:
    from learning.tasks import active_learning_run_task

    transaction.on_commit(lambda: active_learning_run_task.delay(run_id))


def submitted_labels(*, campaign: Campaign, since=None) -> int:
    """Rated step labels of submitted assignments (submitted after ``since`` when given).

    What a run trains on, and what the automatic trigger counts. With ``since`` the count reads
    the ``(campaign, submitted_at)`` index, so the check after each submit stays cheap however
    many labels the campaign has.
    """
    labels = StepLabel.objects.filter(
        assignment__campaign=campaign,
        assignment__status=Assignment.Status.SUBMITTED,
        rating__isnull=False,
    )
    if since is not None:
        labels = labels.filter(assignment__submitted_at__gt=since)
    return labels.count()


def active_learning_after_submit(*, campaign_id: int, **_) -> ActiveLearningRun | None:
    """After a submit: trigger a run once ``al_retrain_every`` new labels have come in.

    Subscribed to ``labeling.events.labels_submitted``. "New" means submitted after the last run
    took its snapshot of the labels (its start); a run that failed counts too, so a campaign
    whose training keeps failing does not retry on every submit (a manager can always retrain by
    hand). Called on commit of the submit; it never fails it (errors are logged).
    """
    try:
        campaign = Campaign.objects.filter(pk=campaign_id, active_learning=True).first()
        if campaign is None:
            return None
        last = campaign.al_runs.order_by("-created_at", "-pk").first()
        if last is not None and last.is_active:
            return None
        since = None if last is None else (last.started_at or last.created_at)
        if submitted_labels(campaign=campaign, since=since) < max(1, campaign.al_retrain_every):
            return None
        return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)
    except Exception:  # a submit must never fail because of active learning
        log.exception("active learning trigger failed for campaign %s", campaign_id)
        return None


def active_learning_after_import(*, campaign_id: int, **_) -> ActiveLearningRun | None:
    """After an import added solutions: rescore once a model exists, or train the first one.

    Subscribed to ``labeling.events.solutions_imported``. New solutions sit at priority 0, below
    every scored one, until a run scores them; without a run they would wait for the next
    ``al_retrain_every`` labels. A campaign that has never run but holds submitted labels (an
    import of labelled data, such as the demo) gets its first run; one without labels has nothing
    to train on yet (its first run comes from submits).
    """
    campaign = Campaign.objects.filter(pk=campaign_id, active_learning=True).first()
    if campaign is None:
        return None
    if campaign.prm_models.filter(is_active=True).exists():
        return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)
    if not campaign.al_runs.exists() and submitted_labels(campaign=campaign) > 0:
        return active_learning_trigger(campaign=campaign, trigger=ActiveLearningRun.Trigger.AUTO)
    return None


# --- The queue order -------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    solution_id: int
    score: float
    answer_is_correct: bool | None

    @property
    def wrong(self) -> bool:
        """Convincing wrong-answer candidates: graded wrong. Ungraded ones are "the rest"."""
        return self.answer_is_correct is False


def queue_order(items: Sequence[Scored], *, wrong_share: float) -> list[Scored]:
    """The queue order of PRM800K's selection rule, best first.

    Wrong-answer solutions in decreasing PRM score (the most convincing first) take ``wrong_share``
    of every prefix, the others (right or ungraded) in decreasing score the rest: position ``k``
    (from 0) is a wrong one when fewer than ``round(wrong_share * (k + 1))`` wrong ones came before,
    so any prefix holds the ratio to within one solution. When one kind runs out the other follows
    in score order. Ties go to the older solution (lower id), as in the queue itself.
    """
    share = min(1.0, max(0.0, wrong_share))

    def key(s: Scored) -> tuple[float, int]:
        return (-s.score if math.isfinite(s.score) else math.inf, s.solution_id)

    wrong = sorted((s for s in items if s.wrong), key=key)
    rest = sorted((s for s in items if not s.wrong), key=key)
    ordered: list[Scored] = []
    i = j = 0
    while i < len(wrong) or j < len(rest):
        due = math.floor(share * (len(ordered) + 1) + 0.5)
        if j >= len(rest) or (i < len(wrong) and i < due):
            ordered.append(wrong[i])
            i += 1
        else:
            ordered.append(rest[j])
            j += 1
    return ordered


def head_summary(order: Sequence[Scored], *, size: int = HEAD_SIZE) -> dict:
    """What the head of the queue is made of (recorded on the run, shown on the page)."""
    head = order[:size]
    scores = [s.score for s in head]
    return {
        "size": len(head),
        "wrong": sum(1 for s in head if s.answer_is_correct is False),
        "correct": sum(1 for s in head if s.answer_is_correct is True),
        "ungraded": sum(1 for s in head if s.answer_is_correct is None),
        "score_min": min(scores) if scores else None,
        "score_max": max(scores) if scores else None,
        "scored": len(order),
        "wrong_total": sum(1 for s in order if s.wrong),
    }


# --- The run ---------------------------------------------------------------------------------


def active_learning_run(*, run: ActiveLearningRun) -> ActiveLearningRun:
    """Export, train, evaluate, register, rescore and reorder; record every stage on the run.

    Safe to call for any message: a run that is finished, or running with a live heartbeat (a
    duplicate message), is returned as it is. A failure is recorded on the run (which frees the
    lock), then raised.
    """
    attempt = _run_claim(run)
    if attempt is None:
        run.refresh_from_db()
        return run
    run.refresh_from_db()
    heartbeat = _heartbeat(run.pk, settings.STEPWISE_AL_HEARTBEAT_SECONDS)
    heartbeat.start()
    try:
        _run_stages(run, attempt=attempt, heartbeat=heartbeat)
    except RunSuperseded:
        log.warning("active-learning run %s was taken over by a later attempt", run.pk)
    except Exception as exc:
        ActiveLearningRun.objects.filter(
            pk=run.pk, attempts=attempt, status=ActiveLearningRun.Status.RUNNING
        ).update(
            status=ActiveLearningRun.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:5000],
            finished_at=timezone.now(),
        )
        raise
    finally:
        heartbeat.stop()
    run.refresh_from_db()
    return run


def _run_claim(run: ActiveLearningRun) -> int | None:
    """Take the run for this worker: the attempt number, or None when it is not ours to run.

    A queued run is taken; so is a running one whose heartbeat is stale (its worker died and the
    broker redelivered the message). One UPDATE, so two workers cannot both take it.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.STEPWISE_AL_STALE_SECONDS)
    taken = (
        ActiveLearningRun.objects.filter(pk=run.pk, attempts__lt=settings.STEPWISE_AL_MAX_ATTEMPTS)
        .filter(
            Q(status=ActiveLearningRun.Status.QUEUED)
            | Q(status=ActiveLearningRun.Status.RUNNING, heartbeat_at__lt=stale)
        )
        .update(
            status=ActiveLearningRun.Status.RUNNING,
            started_at=now,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            error="",
        )
    )
    if not taken:
        return None
    return ActiveLearningRun.objects.values_list("attempts", flat=True).get(pk=run.pk)


def _heartbeat(run_id: int, every: float) -> JobBeat:
    """Beats ``heartbeat_at`` from a thread while the run works, so the sweep knows it is alive.

    A thread, because training is one long call into the PRM; torch releases the GIL often
    enough for a beat every few seconds.
    """

    def beat() -> None:
        ActiveLearningRun.objects.filter(pk=run_id, status=ActiveLearningRun.Status.RUNNING).update(
            heartbeat_at=timezone.now()
        )

    return JobBeat(beat, every=max(0.5, float(every)), name=f"al-heartbeat-{run_id}")


class _Stages:
    """Times each stage and writes the timings (and the current stage) to the run as it goes.

    Every write is conditional on this attempt still owning the run, so a worker the sweep gave
    up on (alive after all, but silent) stops at its next stage instead of racing the new one.
    """

    def __init__(self, run: ActiveLearningRun, attempt: int) -> None:
        self.run = run
        self.attempt = attempt
        self.timings: dict[str, float | str | int] = {}
        self.started = time.perf_counter()

    def __call__(self, name: str) -> _Stage:
        return _Stage(self, name)

    def save(self, **fields) -> None:
        updated = ActiveLearningRun.objects.filter(
            pk=self.run.pk, attempts=self.attempt, status=ActiveLearningRun.Status.RUNNING
        ).update(timings=dict(self.timings), **fields)
        if not updated:
            raise RunSuperseded()


class _Stage:
    def __init__(self, stages: _Stages, name: str) -> None:
        self.stages, self.name = stages, name

    def __enter__(self) -> _Stage:
        self.stages.timings["stage"] = self.name
        self.stages.save()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.stages.timings[self.name] = round(time.perf_counter() - self.t0, 3)


def _run_stages(run: ActiveLearningRun, *, attempt: int, heartbeat: JobBeat) -> None:
    import prm

    campaign = run.campaign
    stages = _Stages(run, attempt)
    media = Path(settings.MEDIA_ROOT)
    workdir = media / "prm" / campaign.slug / f"run-{run.pk}"
    model = run.model if run.model_id and _is_checkpoint(media / run.model.path) else None

    if model is None:
        with stages("export"):
            labels = submitted_labels(campaign=campaign)
            data = _export(campaign=campaign, workdir=workdir)
        stages.save(training_labels=labels)

        with stages("train"):
            out = workdir / f"attempt-{attempt}"
            overrides = json.loads(settings.STEPWISE_AL_TRAIN or "{}")
            train_metrics = prm.train(
                data["path"],
                out,
                backbone=campaign.al_backbone or "bow",
                progress=False,
                **overrides,
            )

        with stages("evaluate"):
            scorer = prm.load(out)
            metrics = _evaluate(scorer, data["path"], train_metrics)
        stages.save(metrics=metrics)

        with stages("register"):
            model = _model_register(
                campaign=campaign,
                checkpoint=out,
                metrics=metrics,
                labels=labels,
                solutions=data["solutions"],
            )
        stages.save(model=model)
    else:
        # An earlier attempt trained and registered the model, then died: score with it.
        scorer = prm.load(media / model.path)
        stages.timings["reused_model"] = model.version

    with stages("score"):
        counts: dict = {}
        scored = list(
            _score_open(campaign=campaign, scorer=scorer, beat=heartbeat.tick, stats=counts)
        )
    stages.timings.update({f"solutions_{k}": v for k, v in counts.items()})

    with stages("order"):
        order = queue_order(scored, wrong_share=campaign.al_wrong_answer_share)
        head = head_summary(order)

    with stages("write"):
        _activate_and_rewrite(run=run, attempt=attempt, model=model, order=order, head=head)

    stages.timings.pop("stage", None)
    stages.timings["total"] = round(time.perf_counter() - stages.started, 3)
    ActiveLearningRun.objects.filter(pk=run.pk, attempts=attempt).update(timings=stages.timings)


def _is_checkpoint(path: Path) -> bool:
    return (path / "config.json").is_file()


def _export(*, campaign: Campaign, workdir: Path) -> dict:
    """The campaign's submitted labels as a `trl` file, through the exports app's own writer."""
    from exports.formats import LabelPolicy, write_export

    manifest = write_export(
        campaign=campaign, fmt="trl", out=workdir / "labels.jsonl", policy=LabelPolicy()
    )
    (entry,) = manifest["files"]
    counts = manifest["counts"]["all"]
    if not entry["records"]:
        raise ValueError("no submitted labels to train on yet")
    return {"path": workdir / entry["name"], "solutions": counts["solutions"]}


def _evaluate(scorer, path: Path, train_metrics: dict) -> dict:
    """Held-out metrics (split by problem): the test split, else validation when test is empty."""
    import prm

    metrics: dict = {
        "validation_auroc": _finite(train_metrics.get("validation_auroc")),
        "train_rows": train_metrics.get("train_rows"),
        "train_problems": train_metrics.get("train_problems"),
        "best_epoch": train_metrics.get("best_epoch"),
        "train_seconds": train_metrics.get("train_seconds"),
    }
    for split in ("test", "validation"):
        try:
            result = prm.evaluate(scorer, path, split=split, bootstrap=200)
        except ValueError:  # no labelled rows in that split
            continue
        metrics.update(
            split=split,
            auroc=_finite(result["auroc"]),
            auroc_ci95=[_finite(v) for v in result["auroc_ci95"]],
            accuracy=_finite(result["accuracy"]),
            first_error_f1=_finite(result["first_error"].get("f1")),
            eval_problems=result["problems"],
            eval_steps=result["steps"],
            positive_rate=_finite(result["positive_rate"]),
        )
        break
    else:
        metrics["split"] = None
    return metrics


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, 4) if math.isfinite(value) else None


def _model_register(
    *, campaign: Campaign, checkpoint: Path, metrics: dict, labels: int, solutions: int
) -> PRMModel:
    """The next version of the campaign's PRM, inactive until the run's last transaction."""
    relative = Path(checkpoint).relative_to(settings.MEDIA_ROOT).as_posix()
    for _ in range(5):
        try:
            with transaction.atomic():
                latest = campaign.prm_models.aggregate(v=Max("version"))["v"] or 0
                return PRMModel.objects.create(
                    campaign=campaign,
                    version=latest + 1,
                    backbone=campaign.al_backbone or "bow",
                    path=relative,
                    metrics=metrics,
                    training_labels=labels,
                    training_solutions=solutions,
                )
        except IntegrityError:  # someone registered that number first: take the next one
            continue
    raise RuntimeError("could not allocate a PRM version")


def _open_solutions(campaign: Campaign):
    return Solution.objects.filter(
        campaign=campaign, kind=Solution.Kind.REGULAR, is_open=True
    ).order_by()


def _score_open(
    *, campaign: Campaign, scorer, beat: Callable[[], None], stats: dict | None = None
) -> Iterator[Scored]:
    """Every open regular solution with its PRM score (product of step P(correct)).

    ``bow`` models read the campaign's feature cache (``prm.feature_cache``) and featurise
    only the solutions it lacks; other backbones featurise everything, in batches. ``stats``, when
    given, receives how many solutions were featurised and how many came from the cache.
    """
    from prm import feature_cache

    if not feature_cache.supports(scorer.backbone):
        yield from _score_open_plain(campaign=campaign, scorer=scorer, beat=beat)
        return
    rows = {
        pk: (correct, digest)
        for pk, correct, digest in _open_solutions(campaign)
        .order_by("pk")
        .values_list("pk", "answer_is_correct", "content_hash")
    }
    path = (
        Path(settings.MEDIA_ROOT)
        / "prm"
        / campaign.slug
        / f"features-{feature_cache.cache_key(scorer.backbone)}.npz"
    )
    features, counts = feature_cache.features_for(
        path=path,
        backbone=scorer.backbone,
        wanted=[(pk, digest) for pk, (_, digest) in rows.items()],
        texts=lambda ids: _solution_texts(campaign=campaign, ids=ids),
        build=lambda texts, n: _featurise(scorer.backbone, texts, n),
    )
    if stats is not None:
        stats.update(counts)
    beat()
    scores = features.solution_scores(scorer)
    for sid, score in zip(features.ids.tolist(), scores.tolist(), strict=True):
        yield Scored(sid, score, rows[sid][0])


def _solution_texts(*, campaign: Campaign, ids: set[int]) -> Iterator[tuple[int, str, list[str]]]:
    """``(id, problem, steps)`` of the open solutions in ``ids``, streamed in id order."""
    if not ids:
        return
    problems = dict(Problem.objects.filter(campaign=campaign).values_list("pk", "text"))
    problem_of = dict(_open_solutions(campaign).values_list("pk", "problem_id"))
    steps_q = Step.objects.filter(solution__in=_open_solutions(campaign).values("pk"))
    if len(ids) <= 2000:  # a few new imports: read only theirs
        steps_q = Step.objects.filter(solution_id__in=sorted(ids))
    current, steps = None, []
    for sid, text in (
        steps_q.order_by("solution_id", "index")
        .values_list("solution_id", "text")
        .iterator(chunk_size=10000)
    ):
        if sid != current:
            if current in ids:
                yield current, problems[problem_of[current]], steps
            current, steps = sid, []
        steps.append(text)
    if current in ids:
        yield current, problems[problem_of[current]], steps


def score_workers() -> int:
    """Processes to featurise and score with: ``STEPWISE_AL_SCORE_WORKERS``, but 1 inside a
    daemonic process (a Celery prefork child), which may not have children of its own."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return 1
    return max(1, settings.STEPWISE_AL_SCORE_WORKERS)


_FORKED: tuple | None = None  # (backbone, rows) for forked featurising processes


def _featurise_chunk(span: tuple[int, int]):
    from prm.feature_cache import Features

    backbone, rows = _FORKED
    return Features.build(backbone, rows[span[0] : span[1]])


def _featurise(backbone, rows: Iterable, n: int):
    """Features of many solutions; pure Python, so ``STEPWISE_AL_SCORE_WORKERS`` forked processes
    share the work when there is enough of it (they inherit the rows; only arrays come back)."""
    import multiprocessing

    from prm.feature_cache import Features

    global _FORKED
    workers = score_workers()
    if workers == 1 or n < 2 * SCORE_BATCH:
        return Features.build(backbone, rows)  # streaming: the texts are never all in memory
    rows = list(rows)
    size = -(-len(rows) // (workers * 4))
    spans = [(i, min(i + size, len(rows))) for i in range(0, len(rows), size)]
    _FORKED = (backbone, rows)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_featurise_chunk, spans, chunksize=1)
    finally:
        _FORKED = None
    return Features.concat(parts)


def _score_open_plain(*, campaign: Campaign, scorer, beat: Callable[[], None]) -> Iterator[Scored]:
    """Every open regular solution with its PRM score, featurised afresh, in batches.

    Steps stream in (solution, index) order from one query; a solution with no step scores 0 so
    it goes last of its kind. Featurising steps is pure Python and the bulk of the time, so with
    ``STEPWISE_AL_SCORE_WORKERS`` above 1 each batch is scored by that many forked processes.
    """
    from prm.metrics import aggregate

    workers = score_workers()
    batch_size = SCORE_BATCH * workers
    rows = {
        pk: (problem_id, correct)
        for pk, problem_id, correct in _open_solutions(campaign).values_list(
            "pk", "problem_id", "answer_is_correct"
        )
    }
    problems = dict(Problem.objects.filter(campaign=campaign).values_list("pk", "text"))
    steps_q = (
        Step.objects.filter(solution__in=_open_solutions(campaign).values("pk"))
        .order_by("solution_id", "index")
        .values_list("solution_id", "text")
    )
    batch_ids: list[int] = []
    batch: list[tuple[str, list[str]]] = []
    seen: set[int] = set()

    def add(sid: int, steps: list[str]) -> None:
        batch_ids.append(sid)
        batch.append((problems[rows[sid][0]], steps))
        seen.add(sid)

    def flush() -> Iterator[Scored]:
        probs = scorer.score(batch, workers=workers)
        for sid, p in zip(batch_ids, probs, strict=True):
            yield Scored(sid, aggregate(p, "product"), rows[sid][1])
        batch_ids.clear()
        batch.clear()
        beat()

    current, steps = None, []
    for sid, text in steps_q.iterator(chunk_size=10000):
        if sid != current:
            if current is not None:
                add(current, steps)
                if len(batch) >= batch_size:
                    yield from flush()
            current, steps = sid, []
        steps.append(text)
    if current is not None:
        add(current, steps)
    if batch:
        yield from flush()
    for sid, (_, correct) in rows.items():
        if sid not in seen:
            yield Scored(sid, 0.0, correct)


def _activate_and_rewrite(
    *,
    run: ActiveLearningRun,
    attempt: int,
    model: PRMModel,
    order: Sequence[Scored],
    head: dict,
) -> None:
    """The run's one visible effect, atomically: the new model active, the queue reordered.

    Priorities count down from the number of scored solutions, so the first of ``order`` has the
    highest and every one is above the default 0 of solutions imported after the run. Deadlocks
    with concurrent claims (PostgreSQL) are retried.
    """
    n = len(order)
    ids = [s.solution_id for s in order]
    scores = [s.score for s in order]
    priorities = [float(n - k) for k in range(n)]
    for try_no in range(3):
        try:
            with transaction.atomic():
                owned = (
                    ActiveLearningRun.objects.select_for_update()
                    .filter(pk=run.pk, attempts=attempt, status=ActiveLearningRun.Status.RUNNING)
                    .exists()
                )
                if not owned:
                    raise RunSuperseded()
                PRMModel.objects.filter(campaign_id=run.campaign_id, is_active=True).exclude(
                    pk=model.pk
                ).update(is_active=False)
                PRMModel.objects.filter(pk=model.pk).update(is_active=True)
                solutions_rewrite(ids=ids, scores=scores, priorities=priorities)
                ActiveLearningRun.objects.filter(pk=run.pk).update(
                    status=ActiveLearningRun.Status.SUCCEEDED,
                    model=model,
                    queue_head=head,
                    finished_at=timezone.now(),
                    error="",
                )
            return
        except OperationalError as error:
            if "deadlock" not in str(error).lower() or try_no == 2:
                raise
            time.sleep(0.2 * (try_no + 1))


def solutions_rewrite(
    *, ids: Sequence[int], scores: Sequence[float], priorities: Sequence[float]
) -> None:
    """Set ``prm_score`` and ``priority`` of many solutions in bulk.

    PostgreSQL: one ``UPDATE ... FROM unnest(arrays)`` per batch (a join, no per-row statement);
    SQLite: ``executemany`` of a prepared UPDATE, which SQLite runs in C. Both inside the caller's
    transaction.
    """
    with connection.cursor() as cursor:
        for start in range(0, len(ids), WRITE_BATCH):
            chunk = slice(start, start + WRITE_BATCH)
            if connection.vendor == "postgresql":
                cursor.execute(
                    "UPDATE labeling_solution AS s SET prm_score = v.score, priority = v.priority"
                    " FROM unnest(%s::bigint[], %s::float8[], %s::float8[])"
                    " AS v(id, score, priority) WHERE s.id = v.id",
                    [list(ids[chunk]), list(scores[chunk]), list(priorities[chunk])],
                )
            else:
                cursor.executemany(
                    "UPDATE labeling_solution SET prm_score = %s, priority = %s WHERE id = %s",
                    list(zip(scores[chunk], priorities[chunk], ids[chunk], strict=True)),
                )


# --- Recovery --------------------------------------------------------------------------------


def active_learning_sweep(*, stale_seconds: int | None = None) -> dict[str, int]:
    """Send again the runs that lost their message or worker; fail those out of attempts.

    - running with a heartbeat older than the stale bound: the worker died (the embedded broker
      never redelivers; Redis does, but only after its visibility timeout). Back to queued,
      keeping the lock, and sent again; after ``STEPWISE_AL_MAX_ATTEMPTS`` starts it fails with
      an error that says so, which frees the lock;
    - queued and not taken within the stale bound of being sent: the message was lost (or every
      worker was busy that long: a duplicate message is harmless, the claim takes a run once).
    """
    stale_s = settings.STEPWISE_AL_STALE_SECONDS if stale_seconds is None else stale_seconds
    cutoff = timezone.now() - timedelta(seconds=stale_s)
    max_attempts = settings.STEPWISE_AL_MAX_ATTEMPTS
    out = {"requeued": 0, "resent": 0, "failed": 0}
    dead = ActiveLearningRun.objects.filter(
        status=ActiveLearningRun.Status.RUNNING, heartbeat_at__lt=cutoff
    )
    out["failed"] = dead.filter(attempts__gte=max_attempts).update(
        status=ActiveLearningRun.Status.FAILED,
        finished_at=timezone.now(),
        error=f"gave up after {max_attempts} attempts: each time the worker stopped beating the "
        "run's heartbeat (killed, or out of memory) before it finished",
    )
    for run_id in dead.filter(attempts__lt=max_attempts).values_list("pk", flat=True):
        with transaction.atomic():
            # heartbeat_at of a queued run means "sent at": the bound for resending it below.
            taken_back = ActiveLearningRun.objects.filter(
                pk=run_id, status=ActiveLearningRun.Status.RUNNING, heartbeat_at__lt=cutoff
            ).update(status=ActiveLearningRun.Status.QUEUED, heartbeat_at=timezone.now())
            if taken_back:
                out["requeued"] += 1
                _enqueue(run_id)
    lost = ActiveLearningRun.objects.filter(status=ActiveLearningRun.Status.QUEUED).filter(
        Q(heartbeat_at__isnull=True, created_at__lt=cutoff) | Q(heartbeat_at__lt=cutoff)
    )
    for run_id in lost.values_list("pk", flat=True):
        with transaction.atomic():
            ActiveLearningRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
            out["resent"] += 1
            _enqueue(run_id)
    return out
