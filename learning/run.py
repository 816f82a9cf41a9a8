"""An active-learning run: export, train, evaluate, best-of-N, register, rescore and reorder.

``active_learning_work`` is the work of the job kind ``learning.triggers.AL_RUNS``: the Celery task
``learning.active_learning_run`` claims the run (``common.jobs``: one UPDATE, so two workers
never both take it) and beats its heartbeat from a thread while this works; it records every
stage's timing on the run. The new model is registered
inactive; only the last stage, one transaction, activates it and rewrites the queue, so a worker
killed before that leaves the previous model active and the queue as it was.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Max

from common.jobs import DONE, JobAttempt, job_run, stage_pause
from common.storage import storage_local_dir, storage_publish_dir, storage_scratch_dir
from labeling.backbones import backbone_spec
from labeling.models import Campaign
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored, head_summary, solutions_rewrite
from learning.rescoring import _score_open, campaign_cache_dir
from learning.strategies import (
    AUTO,
    AUTO_CANDIDATES,
    CONTROL_ARM,
    ENSEMBLE,
    ENSEMBLE_MEMBERS,
    MACHINES_DISAGREE,
    SERVED_PRM,
    UNIFORM,
    AutoChoice,
    arm_of,
    auto_choice,
    auto_shares,
    place,
    strategy_order,
)
from learning.triggers import AL_RUNS, submitted_labels

log = logging.getLogger(__name__)


def active_learning_run(*, run: ActiveLearningRun) -> ActiveLearningRun:
    """Export, train, evaluate, register, rescore and reorder in this process, as the run's
    Celery task does (``common.jobs.job_run``).

    Safe to call for any message: a run that is finished, or running with a live heartbeat (a
    duplicate message), is returned as it is. A failure is recorded on the run (which frees the
    lock), then raised.
    """
    return job_run(AL_RUNS, run) or run


class _Stages:
    """Times each stage and writes the timings (and the current stage) to the run as it goes.

    Every write is conditional on this attempt still owning the run (``JobAttempt.update``), so a
    worker the sweep gave up on (alive after all, but silent) stops at its next stage instead of
    racing the new one.
    """

    def __init__(self, run: ActiveLearningRun, attempt: JobAttempt) -> None:
        self.run = run
        self.attempt = attempt
        self.timings: dict[str, float | str | int] = {}
        self.started = time.perf_counter()

    def __call__(self, name: str) -> _Stage:
        return _Stage(self, name)

    def save(self, **fields) -> None:
        self.attempt.update(timings=dict(self.timings), **fields)


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


def active_learning_work(run: ActiveLearningRun, attempt: JobAttempt) -> None:
    """The run's stages, each timed on the run; every write only while this attempt owns it."""
    import prm
    from prm import feature_cache

    campaign = run.campaign
    stages = _Stages(run, attempt)
    media = Path(settings.MEDIA_ROOT)
    workdir = media / "prm" / campaign.slug / f"run-{run.pk}"
    model = run.model if run.model_id and _is_checkpoint(run.model.path) else None
    members: list = []

    if model is None:
        # The operator's list decides (STEPWISE_PRM_BACKBONES): refused before any work.
        spec = backbone_spec(campaign.al_backbone)
        with stages("export"):
            labels = submitted_labels(campaign=campaign)
            data = _export(campaign=campaign, workdir=workdir)
        stages.save(training_labels=labels)

        # Trained into a scratch folder, published to the file storage (a rename on a
        # filesystem) once evaluated: every process loads it by its storage name.
        checkpoint = f"prm/{campaign.slug}/run-{run.pk}/attempt-{attempt.number}"
        with storage_scratch_dir(checkpoint) as out:
            with stages("train"):
                stage_pause("active_learning.train")
                # Featurised labels kept between runs: a run featurises only the new ones.
                overrides = {
                    "cache_dir": str(campaign_cache_dir(campaign) / "train-cache"),
                    **json.loads(settings.STEPWISE_AL_TRAIN or "{}"),
                }
                train_metrics = prm.train(
                    data["path"], out, backbone=spec, progress=False, **overrides
                )
            prepared = train_metrics.get("prepare") or {}
            if prepared:  # bow: how much of the training set the cache already had
                stages.timings["train_items_featurised"] = prepared["featurised"]
                stages.timings["train_items_cached"] = prepared["from_cache"]

            with stages("evaluate"):
                scorer = prm.load(out)
                metrics = _evaluate(
                    scorer, data["path"], train_metrics, cache=overrides["cache_dir"]
                )
            stages.save(metrics=metrics)
            storage_publish_dir(out, checkpoint)

        with stages("bestofn"):
            curve = _best_of_n(campaign=campaign, scorer=scorer, workdir=workdir)
        stages.save(best_of_n=curve)

        with stages("efficiency"):
            efficiency = _data_efficiency(
                campaign=campaign, strategy=_placing_strategy(campaign), seed=run.pk
            )
        stages.save(data_efficiency=efficiency)
        choice, shares = _placing_plan(
            campaign, run, ensemble=feature_cache.supports(scorer.backbone)
        )

        if ENSEMBLE in dict(shares) and feature_cache.supports(scorer.backbone):
            with stages("ensemble"):
                members = _ensemble_members(
                    data["path"], workdir=workdir, spec=spec, overrides=overrides, seed=run.pk
                )

        with stages("register"):
            model = _model_register(
                campaign=campaign,
                checkpoint=checkpoint,
                metrics=metrics,
                labels=labels,
                solutions=data["solutions"],
            )
        stages.save(model=model)
    else:
        # An earlier attempt trained and registered the model, then died: score with it.
        scorer = prm.load(storage_local_dir(model.path))
        stages.timings["reused_model"] = model.version
        # The ensemble's members are not kept between attempts: auto does not try it here.
        choice, shares = _placing_plan(campaign, run, ensemble=False)

    with stages("score"):
        counts: dict = {}
        scored = list(
            _score_open(
                campaign=campaign,
                scorer=scorer,
                beat=attempt.beat,
                stats=counts,
                members=members,
            )
        )
    stages.timings.update({f"solutions_{k}": v for k, v in counts.items()})
    if campaign.al_scoring_endpoint:  # the served PRM's scores, for the strategy that uses them
        from machines.served import served_scores

        served = dict(served_scores(campaign=campaign).values_list("solution_id", "score"))
        scored = [replace(s, served_score=served.get(s.solution_id)) for s in scored]
        stages.timings["solutions_served_scores"] = sum(
            1 for s in scored if s.served_score is not None
        )

    if MACHINES_DISAGREE in dict(shares):  # what the machines say of the steps, beside the PRM
        with stages("evidence"):
            from learning.machine_evidence import machine_conflicts

            conflicts = machine_conflicts(campaign=campaign, scorer=scorer)
            scored = [replace(s, machine_conflict=conflicts.get(s.solution_id)) for s in scored]
        stages.timings["solutions_with_machine_evidence"] = len(conflicts)

    with stages("order"):
        strategy = campaign.al_strategy  # recorded on the run; auto orders by what it chose
        orders = [
            (
                name,
                strategy_order(
                    name, scored, wrong_share=campaign.al_wrong_answer_share, seed=run.pk
                ),
            )
            for name, _ in shares
        ]
        # A share placed uniformly at random: the control arm each estimate compares with.
        order, placed_by = place(
            orders,
            [share for _, share in shares],
            control_share=campaign.al_control_share,
            seed=run.pk,
        )
        head = head_summary(order) | {
            "strategy": choice.strategy,
            "control": placed_by[:100].count(CONTROL_ARM),
        }
        if choice.reason:
            head["auto"] = choice.reason
        if choice.trials:
            head["trials"] = {t: placed_by[:100].count(t) for t in choice.trials}

    with stages("write"):
        _activate_and_rewrite(
            run=run,
            attempt=attempt,
            model=model,
            order=order,
            placed_by=placed_by,
            head=head,
            strategy=strategy,
        )

    stages.timings.pop("stage", None)
    stages.timings["total"] = round(time.perf_counter() - stages.started, 3)
    # After the run's last write (it is no longer running): only this attempt's own row.
    ActiveLearningRun.objects.filter(pk=run.pk, attempts=attempt.number).update(
        timings=stages.timings
    )


def _best_of_n(*, campaign: Campaign, scorer, workdir: Path) -> dict:
    """The best-of-N curve on the held-out problems (``learning.bestofn``); a failure there is
    recorded on the run, never fails it: the queue does not depend on it."""
    from learning.bestofn import best_of_n_curve

    try:
        return best_of_n_curve(campaign=campaign, scorer=scorer, workdir=workdir)
    except Exception as exc:  # reported on the page instead
        log.exception("best-of-N of campaign %s failed", campaign.pk)
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def _ensemble_members(
    path: Path, *, workdir: Path, spec, overrides: dict, seed: int, size: int = ENSEMBLE_MEMBERS
) -> list:
    """``size`` PRMs, each trained on a bootstrap resample (by problem) of the run's labels: the
    ``ensemble`` strategy's members. They share the training cache, so each costs its training
    alone; they stay in the run's folder (the run's own PRM is the model it registers)."""
    import random

    import prm

    rows: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.setdefault(json.loads(line)["prompt"], []).append(line)
    problems = sorted(rows)
    training = [p for p in problems if prm.split_of(p) == "train"]
    members = []
    for k in range(size):
        rng = random.Random(seed * 1000 + k)
        drawn = [rng.choice(problems) for _ in problems]
        if training and not any(prm.split_of(p) == "train" for p in drawn):
            # Held-out problems alone leave a member nothing to train on (a small campaign's
            # resample can draw only those): a training problem takes the first draw's place.
            drawn[0] = rng.choice(training)
        resample = workdir / f"resample-{k}.jsonl"
        resample.write_text("".join(line + "\n" for p in drawn for line in rows[p]), "utf-8")
        out = workdir / f"member-{k}"
        prm.train(resample, out, backbone=spec, progress=False, **overrides)
        members.append(prm.load(out))
    return members


UNIFORM_SENTENCE = (
    "The queue is ordered uniformly (the control itself): there is no strategy to measure. "
    "Choose a strategy and the control arm keeps its share of the queue, to tell."
)
AUTO_UNIFORM_SENTENCE = (
    "Auto orders uniformly: no strategy is measured to pay here yet. What it tries beside the "
    "uniform order is measured strategy by strategy, each on the labels it placed against the "
    "control arm's."
)


def _placing_strategy(campaign: Campaign) -> str:
    """The strategy whose arm the labels so far measure: the campaign's, or under ``auto`` the
    one its last run ordered by (uniform before any)."""
    if campaign.al_strategy != AUTO:
        return campaign.al_strategy
    last = (
        ActiveLearningRun.objects.filter(
            campaign=campaign, status=ActiveLearningRun.Status.SUCCEEDED
        )
        .order_by("-created_at", "-pk")
        .values_list("queue_head", flat=True)
        .first()
    )
    return (last or {}).get("strategy") or UNIFORM


def _placing_plan(
    campaign: Campaign, run: ActiveLearningRun, *, ensemble: bool
) -> tuple[AutoChoice, list[tuple[str, float]]]:
    """The strategy this run orders by (under ``auto``, what it tries beside it and why:
    ``learning.strategies.auto_choice`` over the estimates the campaign's runs stored, this
    run's included, and the candidates that apply: ``ensemble`` when its members can be
    trained, ``served-prm`` once the campaign's served PRM has scored its solutions), and the
    strategies that place the strategy arm with their shares (``auto_shares``)."""
    if campaign.al_strategy != AUTO:
        choice = AutoChoice(campaign.al_strategy, "")
    else:
        from learning.selectors import strategy_estimates

        candidates = [
            c
            for c in AUTO_CANDIDATES
            if (c != ENSEMBLE or ensemble) and (c != SERVED_PRM or _served_scored(campaign))
        ]
        choice = auto_choice(strategy_estimates(campaign=campaign, including=run.pk), candidates)
    return choice, auto_shares(choice, control_share=campaign.al_control_share)


def _served_scored(campaign: Campaign) -> bool:
    """Whether the campaign's served PRM has scored any of its solutions: without its scores an
    order "by the served PRM" would not be its order, and auto would measure something else."""
    from learning.selectors import served_count
    from machines.served import ScoringRefused, campaign_scoring

    if not campaign.al_scoring_endpoint:
        return False
    try:
        return served_count(campaign=campaign, served=campaign_scoring(campaign)) > 0
    except ScoringRefused:
        return False


def _data_efficiency(*, campaign: Campaign, strategy: str, seed: int) -> dict:
    """Is active learning paying here (``learning.efficiency``), on the campaign's own labels,
    for ``strategy``, the one that placed the strategy arm, and under ``auto`` (``"trials"``)
    for each strategy it tried that placed labels, each on its own labels against the control
    arm's; a failure is recorded on the run, never fails it."""
    from learning.efficiency import data_efficiency, error_yield, strategy_rows
    from learning.selectors import campaign_arm_labels

    def measured(rows: list, name: str) -> dict:
        mine = strategy_rows(rows, name)
        return data_efficiency(mine, control_share=campaign.al_control_share, seed=seed) | {
            "strategy": name,
            "error_yield": error_yield(mine, seed=seed),
        }

    auto = campaign.al_strategy == AUTO
    if strategy == UNIFORM and not auto:
        return {"status": "uniform", "sentence": UNIFORM_SENTENCE}
    try:
        rows = campaign_arm_labels(campaign=campaign)
        out: dict = (
            {"status": "uniform", "sentence": AUTO_UNIFORM_SENTENCE}
            if strategy == UNIFORM
            else measured(rows, strategy)
        )
        if auto:
            tried = {r.placed_by for r in rows if r.arm != CONTROL_ARM}
            trials = {c: measured(rows, c) for c in AUTO_CANDIDATES if c in tried and c != strategy}
            if trials:
                out["trials"] = trials
        return out
    except Exception as exc:  # reported on the page instead
        log.exception("data efficiency of campaign %s failed", campaign.pk)
        return {"status": "error", "sentence": f"Not measured: {type(exc).__name__}: {exc}"[:500]}


def _is_checkpoint(name: str) -> bool:
    return default_storage.exists(f"{name}/config.json")


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


def _evaluate(scorer, path: Path, train_metrics: dict, *, cache: str | None = None) -> dict:
    """Held-out metrics (split by problem): the test split, else validation when test is empty.

    ``cache``: the training cache (``bow``'s featurised labels), which has the validation rows."""
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
            result = prm.evaluate(scorer, path, split=split, bootstrap=200, cache_dir=cache)
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
    *, campaign: Campaign, checkpoint: str, metrics: dict, labels: int, solutions: int
) -> PRMModel:
    """The next version of the campaign's PRM, inactive until the run's last transaction.

    ``checkpoint`` is its name in the file storage (``common.storage``).
    """
    for _ in range(5):
        try:
            with transaction.atomic():
                latest = campaign.prm_models.aggregate(v=Max("version"))["v"] or 0
                return PRMModel.objects.create(
                    campaign=campaign,
                    version=latest + 1,
                    backbone=campaign.al_backbone or "bow",
                    path=checkpoint,
                    metrics=metrics,
                    training_labels=labels,
                    training_solutions=solutions,
                )
        except IntegrityError:  # someone registered that number first: take the next one
            continue
    raise RuntimeError("could not allocate a PRM version")


def _activate_and_rewrite(
    *,
    run: ActiveLearningRun,
    attempt: JobAttempt,
    model: PRMModel,
    order: Sequence[Scored],
    placed_by: Sequence[str],
    head: dict,
    strategy: str,
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
    arms = [(arm_of(p), "" if p == CONTROL_ARM else p) for p in placed_by]
    for try_no in range(3):
        try:
            with transaction.atomic():
                attempt.lock()
                PRMModel.objects.filter(campaign_id=run.campaign_id, is_active=True).exclude(
                    pk=model.pk
                ).update(is_active=False)
                PRMModel.objects.filter(pk=model.pk).update(is_active=True)
                solutions_rewrite(ids=ids, scores=scores, priorities=priorities, arms=arms)
                attempt.finish(DONE, model=model, queue_head=head, strategy=strategy)
            return
        except OperationalError as error:
            if "deadlock" not in str(error).lower() or try_no == 2:
                raise
            time.sleep(0.2 * (try_no + 1))
