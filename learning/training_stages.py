"""The stages of an active-learning run that train the campaign's own PRM (``export`` ...
``register``, and ``reuse`` when an earlier attempt registered it), and whether the strategy pays
(``efficiency``). They run only when the campaign has labels to train on: no labels is a normal
state (``learning.stages``).
"""

from __future__ import annotations

import json
import logging
import math
import random
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from common.jobs import stage_pause
from common.storage import storage_local_dir, storage_publish_dir, storage_scratch_dir
from labeling.backbones import backbone_spec
from labeling.models import Campaign, StepLabel
from learning.auto import auto_candidates
from learning.models import ActiveLearningRun, PRMModel
from learning.placing import CONTROL_ARM
from learning.run_state import RunState
from learning.scoring import campaign_cache_dir
from learning.strategies import (
    AUTO,
    ENSEMBLE_MEMBERS,
    SIGNALS,
    UNIFORM,
)

log = logging.getLogger(__name__)

# -- training ------------------------------------------------------------------------------------


def trains(state: RunState) -> bool:
    return state.trains


def exports_labels(state: RunState) -> bool:
    return not state.reused


def export(state: RunState) -> None:
    """The campaign's submitted labels as a `trl` file, through the exports app's own writer
    (none yet: the campaign's own PRM does not train, and the run orders by what it has)."""
    from exports.formats import LabelPolicy, write_export

    # The operator's list decides (STEPWISE_PRM_BACKBONES): refused before any work.
    state.spec = backbone_spec(state.campaign.al_backbone)
    state.labels = (
        StepLabel.objects.submitted_rated().filter(assignment__campaign=state.campaign).count()
    )
    manifest = write_export(
        campaign=state.campaign,
        fmt="trl",
        out=state.workdir / "labels.jsonl",
        policy=LabelPolicy(),
    )
    (entry,) = manifest["files"]
    if entry["records"]:  # no labels yet is a normal state: the run orders without its own PRM
        state.data = {
            "path": state.workdir / entry["name"],
            "solutions": manifest["counts"]["all"]["solutions"],
        }
    state.save(training_labels=state.labels)


def train(state: RunState) -> None:
    """A PRM trained on the labels into a scratch folder (published to the file storage once
    evaluated: every process loads it by its storage name); the featurised labels are kept
    between runs, so a run featurises only the new ones."""
    import prm

    state.checkpoint = (
        f"prm/{state.campaign.slug}/run-{state.run.pk}/attempt-{state.attempt.number}"
    )
    state.scratch = state.resources.enter_context(storage_scratch_dir(state.checkpoint))
    stage_pause("active_learning.train")
    state.overrides = {
        "cache_dir": str(campaign_cache_dir(state.campaign) / "train-cache"),
        **json.loads(settings.STEPWISE_AL_TRAIN or "{}"),
    }
    state.train_metrics = prm.train(
        state.data["path"], state.scratch, backbone=state.spec, progress=False, **state.overrides
    )
    prepared = state.train_metrics.get("prepare") or {}
    if prepared:  # bow: how much of the training set the cache already had
        state.timings["train_items_featurised"] = prepared["featurised"]
        state.timings["train_items_cached"] = prepared["from_cache"]


def evaluate(state: RunState) -> None:
    """Held-out metrics (split by problem): the test split, else validation when test is empty;
    then the checkpoint published."""
    import prm

    assert state.scratch is not None
    state.scorer = prm.load(state.scratch)
    state.metrics = _metrics(
        state.scorer, state.data["path"], state.train_metrics, cache=state.overrides["cache_dir"]
    )
    state.save(metrics=state.metrics)
    storage_publish_dir(state.scratch, state.checkpoint)


def best_of_n(state: RunState) -> None:
    """The best-of-N curve on the held-out problems (``learning.bestofn``); a failure there is
    recorded on the run, never fails it: the queue does not depend on it."""
    from learning.bestofn import best_of_n_curve

    try:
        curve = best_of_n_curve(campaign=state.campaign, scorer=state.scorer, workdir=state.workdir)
    except Exception as exc:  # reported on the page instead
        log.exception("best-of-N of campaign %s failed", state.campaign.pk)
        curve = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    state.save(best_of_n=curve)


def efficiency(state: RunState) -> None:
    """Is active learning paying here: ``campaign_efficiency`` of the strategy whose arm the
    labels so far measure."""
    state.save(
        data_efficiency=campaign_efficiency(
            campaign=state.campaign, strategy=_placing_strategy(state.campaign), seed=state.run.pk
        )
    )


def ensemble(state: RunState) -> None:
    """The ``ensemble`` strategy's members (``ensemble_members``)."""
    state.members = ensemble_members(
        state.data["path"],
        workdir=state.workdir,
        spec=state.spec,
        overrides=state.overrides,
        seed=state.run.pk,
    )


def ensemble_members(
    path: Path,
    *,
    workdir: Path,
    spec: Any,
    overrides: dict,
    seed: int,
    size: int = ENSEMBLE_MEMBERS,
) -> list:
    """``size`` PRMs, each trained on a bootstrap resample (by problem) of the labels at
    ``path``. They share the training cache, so each costs its training alone; they stay in the
    run's folder (the run's own PRM is the model it registers)."""
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


def register(state: RunState) -> None:
    """The next version of the campaign's PRM, inactive until the run's last transaction."""
    for _ in range(5):
        try:
            with transaction.atomic():
                latest = state.campaign.prm_models.aggregate(v=Max("version"))["v"] or 0
                state.model = PRMModel.objects.create(
                    campaign=state.campaign,
                    version=latest + 1,
                    backbone=state.campaign.al_backbone or "bow",
                    path=state.checkpoint,
                    metrics=state.metrics,
                    training_labels=state.labels,
                    training_solutions=state.data["solutions"],
                )
            break
        except IntegrityError:  # someone registered that number first: take the next one
            continue
    else:
        raise RuntimeError("could not allocate a PRM version")
    state.save(model=state.model)


def reuse(state: RunState) -> None:
    """An earlier attempt trained and registered the model, then died: score with it."""
    import prm

    assert state.model is not None
    state.scorer = prm.load(storage_local_dir(state.model.path))
    state.timings["reused_model"] = state.model.version


UNIFORM_SENTENCE = (
    "The queue is ordered uniformly (the control itself): there is no strategy to measure. "
    "Choose a strategy and the control arm keeps its share of the queue, to tell."
)
AUTO_UNIFORM_SENTENCE = (
    "Auto orders uniformly: no strategy is measured to pay here yet. What it tries beside the "
    "uniform order is measured strategy by strategy, each on the labels it placed against the "
    "control arm's."
)


def campaign_efficiency(*, campaign: Campaign, strategy: str, seed: int) -> dict:
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
            candidates = auto_candidates(SIGNALS)
            trials = {c: measured(rows, c) for c in candidates if c in tried and c != strategy}
            if trials:
                out["trials"] = trials
        return out
    except Exception as exc:  # reported on the page instead
        log.exception("data efficiency of campaign %s failed", campaign.pk)
        return {"status": "error", "sentence": f"Not measured: {type(exc).__name__}: {exc}"[:500]}


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


def _metrics(scorer: Any, path: Path, train_metrics: dict, *, cache: str | None = None) -> dict:
    """Held-out metrics of ``scorer`` on the labels at ``path``. ``cache``: the training cache
    (``bow``'s featurised labels), which has the validation rows."""
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


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, 4) if math.isfinite(value) else None
