"""An active-learning run's stages, declared once, in the order they run (``STAGES``).

A run (``learning.run.active_learning_work``) walks ``STAGES``: each stage is a name (its timing
on the run, and what the page says it is doing), its work and when it applies. They share one
``RunState``. The stages call down: ``prm`` computes (training, evaluation, scoring), ``exports``
writes the labels the PRM trains on, ``labeling`` writes the queue (``queue_reorder``), and the
strategies (``learning.strategies``) say which signals the run must gather besides its own PRM.
Nothing below calls back.

- training (``export`` ... ``register``), when the run has no model of an earlier attempt to
  reuse: the campaign's labels as a ``trl`` file, a PRM trained on them (its features kept
  between runs), evaluated on held-out problems, its best-of-N curve, the control arm's
  estimate of whether the strategy pays, what ``auto`` chooses (``plan``), the ensemble's members
  when a strategy of the run orders by their disagreement, and the model registered inactive;
- ``reuse``: an earlier attempt trained and registered the model, then died: score with it;
- ``score``: every open solution scored by the run's PRM (``learning.scoring``);
- ``served`` and ``evidence``: the signals the run's strategies declare (``Strategy.signals``);
- ``order`` and ``write``: the strategies' orders placed with the control arm, then, in one
  transaction, the new model active and the queue reordered.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Max

from common.jobs import DONE, JobAttempt, stage_pause
from common.storage import storage_local_dir, storage_publish_dir, storage_scratch_dir
from labeling.backbones import backbone_spec
from labeling.models import Campaign, StepLabel
from labeling.queue.order import queue_reorder
from learning.auto import AutoChoice, auto_candidates, auto_choice, auto_shares
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored, head_summary
from learning.placing import CONTROL_ARM, arm_of, place
from learning.scoring import campaign_cache_dir, open_scored
from learning.strategies import (
    AUTO,
    ENSEMBLE_MEMBERS,
    ENSEMBLE_SPREAD,
    EVIDENCE,
    PRM,
    SERVED,
    SIGNALS,
    UNIFORM,
    VERIFIER,
    signals_of,
    strategy_get,
    strategy_order,
)

log = logging.getLogger(__name__)


@dataclass
class RunState:
    """What a run's stages share: the run, its attempt and what each stage made."""

    run: ActiveLearningRun
    attempt: JobAttempt
    campaign: Campaign
    workdir: Path
    model: PRMModel | None  # an earlier attempt's registered model, else the one registered here
    reused: bool  # an earlier attempt registered ``model``: this one scores with it
    resources: ExitStack = field(default_factory=ExitStack)
    timings: dict[str, float | str | int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    spec: Any = None
    labels: int = 0
    data: dict = field(default_factory=dict)
    checkpoint: str = ""
    scratch: Path | None = None
    overrides: dict = field(default_factory=dict)
    train_metrics: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    scorer: Any = None
    choice: AutoChoice | None = None
    shares: list[tuple[str, float]] = field(default_factory=list)
    members: list = field(default_factory=list)
    scored: list[Scored] = field(default_factory=list)
    # what the strategies' signals say of each open solution: ``Scored`` field -> value
    signals: dict[int, dict[str, Any]] = field(default_factory=dict)
    order: list[Scored] = field(default_factory=list)
    placed_by: list[str] = field(default_factory=list)
    head: dict = field(default_factory=dict)
    available: set[str] = field(default_factory=set)  # the signals the campaign has now
    ordered_by: dict[str, str] = field(default_factory=dict)  # what orders the queue, for the page
    unordered: str = ""  # why this run leaves the queue as it is (nothing to order it by yet)

    @classmethod
    def start(cls, run: ActiveLearningRun, attempt: JobAttempt) -> RunState:
        campaign = run.campaign
        model = run.model
        reusable = model if model is not None and _is_checkpoint(model.path) else None
        workdir = Path(settings.MEDIA_ROOT) / "prm" / campaign.slug / f"run-{run.pk}"
        return cls(
            run=run,
            attempt=attempt,
            campaign=campaign,
            workdir=workdir,
            model=reusable,
            reused=reusable is not None,
        )

    @property
    def trains(self) -> bool:
        """Whether this attempt trains the campaign's own PRM: it has labels to train on and no
        earlier attempt registered the model."""
        return not self.reused and bool(self.data)

    @property
    def needs(self) -> frozenset[str]:
        """The signals the strategies placing this run's queue order by."""
        return signals_of([name for name, _ in self.shares])

    def save(self, **fields: Any) -> None:
        """The timings so far (and ``fields``) on the run, while this attempt owns it."""
        self.attempt.update(timings=dict(self.timings), **fields)


@dataclass(frozen=True)
class Stage:
    """One stage: ``work`` when ``when`` says so, timed as ``name`` unless ``timed`` is off."""

    name: str
    work: Callable[[RunState], None]
    when: Callable[[RunState], bool] = lambda state: True
    timed: bool = True


# -- training ------------------------------------------------------------------------------------


def _trains(state: RunState) -> bool:
    return state.trains


def _exports(state: RunState) -> bool:
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


# -- what orders the queue -----------------------------------------------------------------------


def plan(state: RunState) -> None:
    """The strategy this run orders by and, under ``auto``, what it tries beside it and why
    (``learning.auto``, over the estimates the campaign's runs stored, this run's included, and
    the candidates whose signals the campaign has), the strategies that place the strategy arm
    with their shares, and what orders the queue: the campaign's own PRM once it has one, before
    that the served PRM standing in for it. A strategy whose signals the campaign does not have
    yet leaves the queue as it is (``unordered``)."""
    from prm import feature_cache

    campaign = state.campaign
    served_by = _served_by(campaign)
    if state.scorer is not None or served_by:
        state.available.add(PRM)
    if served_by:
        state.available.add(SERVED)
    # The ensemble's members are not kept between attempts: a reused model does not try it.
    if state.trains and feature_cache.supports(getattr(state.scorer, "backbone", None)):
        state.available.add(ENSEMBLE_SPREAD)
    state.available.add(EVIDENCE)  # what the machines said of the steps: none is a normal state
    if campaign.al_strategy != AUTO:
        state.choice = AutoChoice(campaign.al_strategy, "")
    else:
        from learning.selectors import strategy_estimates

        estimates = strategy_estimates(campaign=campaign, including=state.run.pk)
        state.choice = auto_choice(estimates, auto_candidates(state.available))
    state.shares = auto_shares(state.choice, control_share=campaign.al_control_share)
    main = strategy_get(state.choice.strategy)
    missing = sorted(main.needs - state.available)
    if missing:
        state.unordered = _unordered_sentence(main.name, missing)
        state.ordered_by = {"kind": "none", "name": "nothing yet"}
    elif SERVED in main.signals or (PRM in main.signals and state.scorer is None):
        state.ordered_by = {"kind": "served", "name": f"the served PRM {served_by}"}
    elif PRM in main.signals:
        version = f" v{state.model.version}" if state.model is not None else ""
        state.ordered_by = {"kind": "own", "name": f"the campaign's own PRM{version}"}
    elif main.name == VERIFIER:
        state.ordered_by = {"kind": "verifier", "name": "the imported verifier score"}
    else:
        state.ordered_by = {"kind": "uniform", "name": "a uniform random order (no model)"}


def _unordered_sentence(strategy: str, missing: Sequence[str]) -> str:
    words = {
        PRM: "a PRM (no labels to train the campaign's own on yet, and no served PRM has scored "
        "its solutions)",
        SERVED: "the served PRM's scores (none stored yet: choose a scoring endpoint and score)",
        ENSEMBLE_SPREAD: "an ensemble (it needs labels and the bow backbone)",
    }
    lacking = "; ".join(words.get(m, m) for m in missing)
    return (
        f"The queue keeps its order: {strategy} orders by {lacking}. The first run that has it "
        "orders the queue."
    )


def score(state: RunState) -> None:
    """Every open regular solution with the run's PRM's score and uncertainty: the campaign's
    own PRM's (with members, the ensemble's disagreement too), before it has one the served
    PRM's, standing in; with neither (a strategy that needs no PRM) they carry no score."""
    counts: dict = {}
    state.scored = open_scored(
        campaign=state.campaign,
        scorer=state.scorer,
        beat=state.attempt.beat,
        stats=counts,
        members=state.members,
        stand_in=PRM in state.available,
    )
    state.timings.update({f"solutions_{k}": v for k, v in counts.items()})


def served(state: RunState) -> None:
    """The served PRM's score of each open solution it scored (``served_score``)."""
    from machines.served import served_scores

    scores = dict(served_scores(campaign=state.campaign).values_list("solution_id", "score"))
    open_ids = {s.solution_id for s in state.scored}
    for sid, value in scores.items():
        if sid in open_ids:
            state.signals.setdefault(sid, {})["served_score"] = value
    state.timings["solutions_served_scores"] = sum(1 for sid in scores if sid in open_ids)


def evidence(state: RunState) -> None:
    """What the machines say of the steps, beside the PRM (``machine_conflict``)."""
    from learning.machine_evidence import machine_conflicts

    conflicts = machine_conflicts(campaign=state.campaign, scorer=state.scorer)  # None: no PRM
    for sid, value in conflicts.items():
        state.signals.setdefault(sid, {})["machine_conflict"] = value
    state.timings["solutions_with_machine_evidence"] = len(conflicts)


def order(state: RunState) -> None:
    """Each strategy's order of the scored solutions (with the signals gathered), placed with a
    control arm: a share placed uniformly at random, what each estimate compares with."""
    campaign, choice = state.campaign, state.choice
    assert choice is not None
    items = [
        replace(s, **state.signals[s.solution_id]) if s.solution_id in state.signals else s
        for s in state.scored
    ]
    orders = [
        (
            name,
            strategy_order(
                name, items, wrong_share=campaign.al_wrong_answer_share, seed=state.run.pk
            ),
        )
        for name, _ in state.shares
    ]
    state.order, state.placed_by = place(
        orders,
        [share for _, share in state.shares],
        control_share=campaign.al_control_share,
        seed=state.run.pk,
    )
    head = head_summary(state.order) | {
        "strategy": choice.strategy,
        "control": state.placed_by[:100].count(CONTROL_ARM),
        "ordered_by": state.ordered_by,
    }
    if choice.reason:
        head["auto"] = choice.reason
    if choice.trials:
        head["trials"] = {t: state.placed_by[:100].count(t) for t in choice.trials}
    state.head = head


def write(state: RunState) -> None:
    """The run's one visible effect, atomically: its model (when it has one) active, the queue
    reordered (when it had something to order it by).

    Priorities count down from the number of scored solutions, so the first of the order has
    the highest and every one is above the default 0 of solutions imported after the run. A run
    without a PRM writes no score. Deadlocks with concurrent claims (PostgreSQL) are retried.
    """
    model, n = state.model, len(state.order)
    ids = [s.solution_id for s in state.order]
    has_scores = PRM in state.available
    scores = [s.score if has_scores else None for s in state.order]
    priorities = [float(n - k) for k in range(n)]
    arms = [(arm_of(p), "" if p == CONTROL_ARM else p) for p in state.placed_by]
    head = state.head or {"ordered_by": state.ordered_by, "note": state.unordered}
    if not state.data and not state.reused:
        head["labels"] = 0
    for try_no in range(3):
        try:
            with transaction.atomic():
                state.attempt.lock()
                if model is not None:
                    PRMModel.objects.filter(
                        campaign_id=state.run.campaign_id, is_active=True
                    ).exclude(pk=model.pk).update(is_active=False)
                    PRMModel.objects.filter(pk=model.pk).update(is_active=True)
                if not state.unordered:
                    queue_reorder(ids=ids, scores=scores, priorities=priorities, arms=arms)
                state.attempt.finish(
                    DONE, model=model, queue_head=head, strategy=state.campaign.al_strategy
                )
            return
        except OperationalError as error:
            if "deadlock" not in str(error).lower() or try_no == 2:
                raise
            time.sleep(0.2 * (try_no + 1))


def _ordered(state: RunState) -> bool:
    return not state.unordered


def _wants_ordered(signal: str) -> Callable[[RunState], bool]:
    return lambda state: not state.unordered and signal in state.needs


STAGES = (
    Stage("export", export, when=_exports),
    Stage("train", train, when=_trains),
    Stage("evaluate", evaluate, when=_trains),
    Stage("bestofn", best_of_n, when=_trains),
    Stage("efficiency", efficiency, when=_trains),
    Stage("reuse", reuse, when=lambda state: state.reused, timed=False),
    Stage("plan", plan, timed=False),
    Stage("ensemble", ensemble, when=lambda s: s.trains and ENSEMBLE_SPREAD in s.needs),
    Stage("register", register, when=_trains),
    Stage("score", score, when=_ordered),
    Stage("served", served, when=_wants_ordered(SERVED), timed=False),
    Stage("evidence", evidence, when=_wants_ordered(EVIDENCE)),
    Stage("order", order, when=_ordered),
    Stage("write", write),
)


# -- helpers ---------------------------------------------------------------------------------------


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


def _served_by(campaign: Campaign) -> str:
    """The campaign's served PRM ("endpoint (model)") when it has scored any of its solutions,
    else "": without its scores an order "by the served PRM" would not be its order."""
    from machines.served import ScoringRefused, campaign_scoring, served_scores

    try:
        chosen = campaign_scoring(campaign)
    except ScoringRefused:
        return ""
    if chosen is None or not served_scores(campaign=campaign).exists():
        return ""
    endpoint, model = chosen
    return f"{endpoint.title}, model {model}"


def _is_checkpoint(name: str) -> bool:
    return default_storage.exists(f"{name}/config.json")


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
