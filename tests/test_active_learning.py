"""Active learning in-process: the 80/20 order, the lock, the trigger, a run, failure and the sweep.

The runs here are called directly (the worker tests are in ``test_active_learning_worker.py``);
they train the real ``bow`` PRM on real PRM800K phase 1 labels and score real model solutions.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.job_recovery import job_kind_sweep
from labeling import queue
from labeling.models import Solution
from learning.models import ActiveLearningRun, PRMModel
from learning.ordering import Scored, head_summary, queue_order
from learning.run import active_learning_run
from learning.triggers import (
    AL_RUNS,
    active_learning_after_submit,
    active_learning_trigger,
    submitted_labels,
)
from tests.al_data import demo_campaign
from tests.factories import make_campaign, make_member, make_solution, submit_ratings


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir()
    return settings.MEDIA_ROOT


# --- the order -------------------------------------------------------------------------------

# Open solutions of the demo campaign: 300 GSM8K + 111 Qwen2.5-Math to label, and the one PRM800K
# line whose labeler gave up, which holds no slot.
DEMO_OPEN = 412


def _items(wrong: int, right: int, ungraded: int = 0) -> list[Scored]:
    out, n = [], 0
    for count, correct in ((wrong, False), (right, True), (ungraded, None)):
        for i in range(count):
            n += 1
            out.append(Scored(n, 1.0 - (i * 37 % 101) / 101, correct))
    return out


def test_every_prefix_keeps_the_wrong_answer_share():
    order = queue_order(_items(500, 400), wrong_share=0.8)
    for k in range(1, 500):
        wrong = sum(1 for s in order[:k] if s.wrong)
        assert abs(wrong - 0.8 * k) <= 1, k
    assert [s.wrong for s in order[:5]] == [True, True, False, True, True]


def test_each_kind_comes_in_decreasing_score_and_ungraded_count_as_the_rest():
    order = queue_order(_items(50, 20, 20), wrong_share=0.8)
    wrong = [s.score for s in order if s.wrong]
    rest = [s for s in order if not s.wrong]
    assert wrong == sorted(wrong, reverse=True)
    assert [s.score for s in rest] == sorted((s.score for s in rest), reverse=True)
    assert {s.answer_is_correct for s in rest} == {True, None}
    assert sum(1 for s in order[:50] if s.wrong) == 40


def test_when_one_kind_runs_out_the_other_follows():
    order = queue_order(_items(3, 10), wrong_share=0.8)
    assert [s.wrong for s in order[:5]] == [True, True, False, True, False]
    assert not any(s.wrong for s in order[4:])
    assert len(order) == 13
    assert [s.wrong for s in queue_order(_items(4, 0), wrong_share=0.5)] == [True] * 4


def test_share_zero_and_one_are_pure_orders():
    items = _items(5, 5)
    assert [s.wrong for s in queue_order(items, wrong_share=1.0)] == [True] * 5 + [False] * 5
    assert [s.wrong for s in queue_order(items, wrong_share=0.0)] == [False] * 5 + [True] * 5


def test_the_head_summary_counts_its_kinds():
    head = head_summary(queue_order(_items(100, 60, 40), wrong_share=0.8), size=100)
    assert head["size"] == 100
    assert head["wrong"] == 80
    assert head["correct"] + head["ungraded"] == 20
    assert head["scored"] == 200
    assert head["wrong_total"] == 100


# --- the lock and the trigger -----------------------------------------------------------------


@pytest.mark.django_db
def test_a_second_trigger_returns_the_run_already_queued(django_capture_on_commit_callbacks):
    campaign = make_campaign()
    with django_capture_on_commit_callbacks() as sent:
        first = active_learning_trigger(campaign=campaign)
        second = active_learning_trigger(campaign=campaign, trigger="auto")
    assert first.pk == second.pk
    assert len(sent) == 1  # one task message
    assert ActiveLearningRun.objects.filter(campaign=campaign).count() == 1


@pytest.mark.django_db
def test_the_database_refuses_two_unfinished_runs_of_one_campaign():
    campaign = make_campaign()
    ActiveLearningRun.objects.create(campaign=campaign, status="running")
    with pytest.raises(IntegrityError), transaction.atomic():
        ActiveLearningRun.objects.create(campaign=campaign, status="queued")
    ActiveLearningRun.objects.create(campaign=campaign, status="failed")
    ActiveLearningRun.objects.create(campaign=make_campaign(), status="queued")


@pytest.mark.django_db
def test_a_campaign_has_at_most_one_active_model():
    campaign = make_campaign()
    PRMModel.objects.create(campaign=campaign, version=1, path="a", is_active=True)
    PRMModel.objects.create(campaign=campaign, version=2, path="b")
    with pytest.raises(IntegrityError), transaction.atomic():
        PRMModel.objects.create(campaign=campaign, version=3, path="c", is_active=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        PRMModel.objects.create(campaign=campaign, version=2, path="d")


def _serve_and_submit(campaign, annotator, ratings):
    assignment = queue.assignment_next(campaign=campaign, annotator=annotator)
    n = assignment.solution.steps.count()
    ratings = (ratings * n)[:n] if -1 not in ratings else ratings
    return submit_ratings(assignment=assignment, annotator=annotator, ratings=ratings), n


@pytest.mark.django_db
def test_a_submit_triggers_a_run_once_enough_new_labels_came_in(
    django_capture_on_commit_callbacks,
):
    campaign = make_campaign(active_learning=True, al_retrain_every=7)
    for _ in range(6):
        make_solution(campaign=campaign, steps=["a", "b", "c"])
    member = make_member(campaign=campaign)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        _serve_and_submit(campaign, member.user, [1])  # 3 labels
        _serve_and_submit(campaign, member.user, [1])  # 6
    assert len(callbacks) == 2  # the cheap check ran after each submit...
    assert not ActiveLearningRun.objects.exists()  # ...and found too few labels

    with django_capture_on_commit_callbacks(execute=False):
        _serve_and_submit(campaign, member.user, [1])  # 9 >= 7
        run = active_learning_after_submit(campaign_id=campaign.pk)
    assert run is not None and run.trigger == "auto" and run.status == "queued"

    # While it is queued or running nothing more is triggered; after it, labels count from its
    # start.
    assert active_learning_after_submit(campaign_id=campaign.pk) is None
    assert ActiveLearningRun.objects.count() == 1
    ActiveLearningRun.objects.filter(pk=run.pk).update(
        status="succeeded", started_at=timezone.now(), training_labels=9
    )
    assert active_learning_after_submit(campaign_id=campaign.pk) is None
    with django_capture_on_commit_callbacks(execute=False):
        _serve_and_submit(campaign, member.user, [1, -1])  # 2 new labels (stops at the error)
        _serve_and_submit(campaign, member.user, [1])  # 5
        assert active_learning_after_submit(campaign_id=campaign.pk) is None
        _serve_and_submit(campaign, member.user, [1])  # 8 >= 7
        again = active_learning_after_submit(campaign_id=campaign.pk)
    assert again is not None and again.pk != run.pk


@pytest.mark.django_db
def test_no_run_without_active_learning(django_capture_on_commit_callbacks):
    campaign = make_campaign(active_learning=False, al_retrain_every=1)
    make_solution(campaign=campaign)
    member = make_member(campaign=campaign)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        _serve_and_submit(campaign, member.user, [1])
    assert callbacks == []
    assert active_learning_after_submit(campaign_id=campaign.pk) is None
    assert submitted_labels(campaign=campaign) == 3


# --- runs --------------------------------------------------------------------------------------


def _open_order(campaign):
    return list(
        Solution.objects.filter(campaign=campaign, is_open=True, kind="regular")
        .order_by("-priority", "pk")
        .values_list("pk", "answer_is_correct", "prm_score", "priority")
    )


def _new_run(campaign, **fields):
    return ActiveLearningRun.objects.create(campaign=campaign, **fields)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_trains_registers_scores_and_reorders_the_queue(media):
    campaign = demo_campaign(active_learning=True, al_strategy="convincing-wrong")
    run = active_learning_run(run=_new_run(campaign))

    assert run.status == "succeeded", run.error
    model = PRMModel.objects.get(campaign=campaign)
    assert model.is_active and model.version == 1 and run.model == model
    assert (media / model.path / "config.json").is_file()
    assert model.training_labels == run.training_labels == submitted_labels(campaign=campaign) > 500
    assert model.training_solutions == 60
    assert run.metrics["split"] in ("test", "validation")
    assert 0.0 <= run.metrics["auroc"] <= 1.0
    assert model.metrics == run.metrics
    for stage in ("export", "train", "evaluate", "register", "score", "order", "write", "total"):
        assert run.timings[stage] >= 0, stage
    assert "stage" not in run.timings

    order = _open_order(campaign)
    # the demo's 411 solutions to label, and the PRM800K line whose labeler gave up (its slot free)
    assert len(order) == DEMO_OPEN == campaign.solutions.filter(is_open=True).count()
    assert all(score is not None for _, _, score, _ in order)
    head = order[:100]
    assert run.queue_head["size"] == 100
    assert run.queue_head["wrong"] == sum(1 for _, c, _, _ in head if c is False) == 80
    wrong_scores = [s for _, c, s, _ in head if c is False]
    assert wrong_scores == sorted(wrong_scores, reverse=True)
    assert [p for *_, p in order] == [float(DEMO_OPEN - k) for k in range(DEMO_OPEN)]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_failed_run_leaves_the_previous_model_active_and_the_queue_untouched(media):
    campaign = demo_campaign(active_learning=True)
    assert active_learning_run(run=_new_run(campaign)).status == "succeeded"
    before = _open_order(campaign)

    campaign.al_backbone = "no-such-backbone"
    campaign.save()
    run = _new_run(campaign, trigger="manual")
    with pytest.raises(Exception, match="no-such-backbone"):
        active_learning_run(run=run)
    run.refresh_from_db()
    assert run.status == "failed" and "no-such-backbone" in run.error
    assert run.finished_at is not None
    assert PRMModel.objects.get(is_active=True).version == 1
    assert _open_order(campaign) == before
    # The lock is free again.
    assert active_learning_trigger(campaign=campaign).pk != run.pk


@pytest.mark.django_db(transaction=True)
def test_a_message_for_a_finished_or_busy_run_does_nothing(media):
    campaign = make_campaign()
    done = _new_run(campaign, status="succeeded")
    assert active_learning_run(run=done).status == "succeeded"
    busy = _new_run(campaign, status="running", heartbeat_at=timezone.now(), attempts=1)
    assert active_learning_run(run=busy).attempts == 1


@pytest.mark.django_db(transaction=True)
def test_a_run_with_nothing_to_train_on_succeeds_and_leaves_the_queue_to_what_can_order_it(media):
    """No labels is a normal state (issue 38): the run trains nothing and says what orders the
    queue. A strategy that needs a PRM leaves the queue as it is and says why; one that needs
    none (uniform) orders it, writing no PRM score."""
    campaign = demo_campaign(labelled=False, al_strategy="convincing-wrong")
    before = _open_order(campaign)
    run = active_learning_run(run=_new_run(campaign))
    assert run.status == "succeeded", run.error
    assert run.model is None and run.training_labels == 0
    assert not PRMModel.objects.filter(campaign=campaign).exists()
    assert run.queue_head["ordered_by"]["kind"] == "none" and run.queue_head["labels"] == 0
    assert "convincing-wrong orders by a PRM" in run.queue_head["note"]
    assert _open_order(campaign) == before
    assert "train" not in run.timings and "export" in run.timings

    campaign.al_strategy = "uniform"
    campaign.save()
    run = active_learning_run(run=_new_run(campaign))
    assert run.status == "succeeded", run.error
    assert run.queue_head["ordered_by"]["kind"] == "uniform"
    order = _open_order(campaign)
    assert len(order) == len(before) and order != before
    assert all(score is None for _, _, score, _ in order)


# --- recovery ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sweep_requeues_dead_runs_and_fails_them_after_the_last_attempt(
    settings, django_capture_on_commit_callbacks
):
    settings.STEPWISE_AL_MAX_ATTEMPTS = 2
    old = timezone.now() - timedelta(minutes=10)
    dead = _new_run(make_campaign(), status="running", attempts=1, heartbeat_at=old)
    spent = _new_run(make_campaign(), status="running", attempts=2, heartbeat_at=old)
    alive = _new_run(make_campaign(), status="running", attempts=1, heartbeat_at=timezone.now())
    lost = _new_run(make_campaign(), status="queued", created_at=old)
    fresh = _new_run(make_campaign(), status="queued")

    with django_capture_on_commit_callbacks() as sent:
        assert job_kind_sweep(AL_RUNS) == {"requeued": 1, "resent": 1, "failed": 1}
    assert len(sent) == 2
    for run in (dead, spent, alive, lost, fresh):
        run.refresh_from_db()
    assert dead.status == "queued" and dead.heartbeat_at > old
    assert spent.status == "failed" and "gave up after 2 attempts" in spent.error
    assert alive.status == "running"
    assert lost.status == "queued" and lost.heartbeat_at is not None
    assert fresh.status == "queued" and fresh.heartbeat_at is None
    with django_capture_on_commit_callbacks() as sent:
        assert job_kind_sweep(AL_RUNS) == {"requeued": 0, "resent": 0, "failed": 0}
    assert sent == []


# --- the feature cache -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cached_features_score_exactly_as_the_model_and_new_solutions_are_featurised(
    media, settings
):
    import prm
    from learning.scoring import open_scored, open_solutions, solution_texts
    from prm.batch_scoring import BatchScoring
    from prm.metrics import solution_score

    campaign = demo_campaign(active_learning=True)
    run = active_learning_run(run=_new_run(campaign))
    assert run.timings["solutions_featurised"] == DEMO_OPEN and run.timings["solutions_cached"] == 0
    scorer = prm.load(media / run.model.path)
    ids = set(open_solutions(campaign).values_list("pk", flat=True))
    texts = list(solution_texts(campaign=campaign, ids=ids))
    # the model itself, step by step, without the feature cache
    plain = {
        sid: solution_score(probs)
        for (sid, _, _), probs in zip(
            texts, scorer.score([(p, steps) for _, p, steps in texts]), strict=True
        )
    }

    stats: dict = {}
    cached = open_scored(campaign=campaign, scorer=scorer, beat=int, stats=stats)
    assert stats == {"cached": DEMO_OPEN, "featurised": 0}
    assert len(cached) == DEMO_OPEN
    for s in cached:
        assert s.score == pytest.approx(plain.get(s.solution_id, 0.0), rel=1e-6, abs=1e-12)

    # A new import is featurised; a closed solution drops out of the cache.
    new = make_solution(campaign=campaign, steps=["We have $2 + 2 = 5$.", "# Answer\n\n5"])
    Solution.objects.filter(pk=cached[0].solution_id).update(is_open=False)
    stats = {}
    again = {
        s.solution_id: s.score
        for s in open_scored(campaign=campaign, scorer=scorer, beat=int, stats=stats)
    }
    assert stats == {"cached": DEMO_OPEN - 1, "featurised": 1}
    assert cached[0].solution_id not in again
    assert again[new.pk] == pytest.approx(
        scorer.solution_scores([(new.problem.text, ["We have $2 + 2 = 5$.", "# Answer\n\n5"])])[0],
        rel=1e-6,  # float32 forward passes over other batches
    )

    # Forked featurising scores as in-process (enough solutions to fork: 2 x 4,096 and more).
    rows = [(i, new.problem.text, ["a = 1", f"b = {i % 7}"]) for i in range(9000)]
    wanted = [(i, f"h{i}") for i, _, _ in rows]
    one = list(BatchScoring(scorer, wanted=wanted, workers=1).score(rows))
    two = list(BatchScoring(scorer, wanted=wanted, workers=2).score(rows))
    assert one == two


def _forked_pid(shared: object, part: int) -> tuple[int, int]:
    import os

    return part, os.getpid()


def _map_in_child(queue) -> None:
    import os

    from prm.runtime import forked_map

    queue.put((os.getpid(), forked_map(_forked_pid, None, range(6), workers=3)))


def test_a_daemonic_worker_process_featurises_in_itself():
    """Celery's prefork children are daemonic and may not fork a pool of their own: the one pool
    (``prm.runtime.forked_map``) runs the parts in the child itself, in order."""
    import multiprocessing
    import os

    from prm.runtime import forked_map

    forked = forked_map(_forked_pid, None, range(6), workers=3)
    assert [part for part, _ in forked] == list(range(6))
    assert os.getpid() not in {pid for _, pid in forked}
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_map_in_child, args=(queue,), daemon=True)
    child.start()
    child.join(timeout=60)
    pid, parts = queue.get(timeout=10)
    assert parts == [(part, pid) for part in range(6)]


def test_selecting_and_concatenating_features_equals_featurising_again():
    import random

    from prm.backbones import build_backbone
    from prm.feature_cache import Features

    backbone = build_backbone("bow")
    rng = random.Random(0)
    rows = [
        (
            i,
            f"h{i}",
            f"Problem {i % 7}: what is $2 + {i}$?",
            [f"We have $2 + {i} = {2 + i + rng.randint(0, 1)}$." for _ in range(rng.randint(0, 4))],
        )
        for i in range(200)
    ]
    features = Features.build(backbone, rows)
    for trial in range(20):
        wanted = rng.sample(range(200), rng.randint(1, 200))
        if trial % 2:
            wanted.sort()
        picked, again = features.select(wanted), Features.build(backbone, [rows[k] for k in wanted])
        assert picked.ids.tolist() == again.ids.tolist() == [rows[k][0] for k in wanted]
        assert picked.starts.tolist() == again.starts.tolist()
        for name, (flat, offsets) in again.bags.items():
            assert picked.bags[name][0].tolist() == flat.tolist()
            assert picked.bags[name][1].tolist() == offsets.tolist()
    joined = Features.concat([features.select(range(80)), features.select(range(80, 200))])
    assert joined.starts.tolist() == features.starts.tolist()
    for name, (flat, offsets) in features.bags.items():
        assert joined.bags[name][0].tolist() == flat.tolist()
        assert joined.bags[name][1].tolist() == offsets.tolist()


# --- strategies and the best-of-N curve in a run ------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_orders_by_the_campaigns_strategy_and_stores_the_best_of_n_curve(media):
    import subprocess
    import sys

    from django.conf import settings

    from learning.bestofn import ORM_METHOD

    campaign = demo_campaign(active_learning=True, al_strategy="uncertainty")
    run = active_learning_run(run=_new_run(campaign))
    assert run.status == "succeeded", run.error
    assert run.strategy == run.queue_head["strategy"] == "uncertainty"
    assert run.timings["bestofn"] >= 0

    # The queue follows the PRM's uncertainty: recompute it for the head and check it decreases.
    import prm
    from prm.metrics import step_entropy

    scorer = prm.load(media / run.model.path)
    head = [pk for pk, *_ in _open_order(campaign)[:20]]
    solutions = {s.pk: s for s in Solution.objects.filter(pk__in=head).select_related("problem")}
    entropies = [
        step_entropy(
            scorer.score(
                [(solutions[pk].problem.text, [st.text for st in solutions[pk].steps.all()])]
            )[0]
        )
        for pk in head
    ]
    assert entropies == pytest.approx(sorted(entropies, reverse=True), abs=1e-6)

    curve = run.best_of_n
    assert curve["problems"] >= 2 and curve["n"][0] == 1 and curve["n"][-1] == curve["most"]
    methods = set(curve["accuracy"])
    assert {"PRM (product)", "PRM (min)", ORM_METHOD, "majority", "random", "oracle"} <= methods
    for name, values in curve["accuracy"].items():
        oracle = curve["accuracy"]["oracle"]
        assert all(v <= o + 1e-12 for v, o in zip(values, oracle, strict=True)), name

    # `prm bestofn` on the run's files prints the same figures.
    workdir = media / "prm" / campaign.slug / f"run-{run.pk}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "prm",
            "bestofn",
            "--model",
            str(media / run.model.path),
            "--orm",
            str(workdir / "orm"),
            "--data",
            str(workdir / curve["data"]),
            "--json",
        ],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["n"] == curve["n"]
    for name, values in printed["accuracy"].items():
        assert values == pytest.approx(curve["accuracy"][name]), name


@pytest.mark.django_db(transaction=True)
def test_every_strategy_orders_the_queue_of_a_run(media, monkeypatch, settings):
    """The run hands the scored solutions to the campaign's strategy (scoring stubbed)."""
    from dataclasses import replace

    from learning import run_state, stages
    from learning.auto import auto_choice, auto_shares
    from learning.placing import place
    from learning.strategies import AUTO, NAMES, strategy_order
    from machines.models import ServedScore

    campaign = make_campaign(al_control_share=0.0)  # the control arm: test_al_strategies
    solutions = [
        make_solution(campaign=campaign, answer_is_correct=c, verifier_score=v)
        for c, v in ((False, 0.1), (True, 0.9), (False, 0.7), (None, None), (True, 0.3))
    ]
    scored = [
        Scored(s.pk, 0.1 * k, s.answer_is_correct, uncertainty=1 - 0.2 * k, verifier_score=v)
        for k, (s, v) in enumerate(zip(solutions, (0.1, 0.9, 0.7, None, 0.3), strict=True))
    ]
    model = PRMModel.objects.create(campaign=campaign, version=1, path="prm/x/v1")
    monkeypatch.setattr(run_state, "_is_checkpoint", lambda path: True)
    monkeypatch.setattr("prm.load", lambda path: object())
    monkeypatch.setattr(stages, "open_scored", lambda **kwargs: list(scored))
    # the served PRM's scores, for served-prm (without them it would leave the queue as it is)
    settings.STEPWISE_ENDPOINTS = [
        {"name": "prm", "kind": "pooling", "base_url": "http://127.0.0.1:9", "models": ["m"]}
    ]
    served = dict(zip((s.pk for s in solutions), (0.2, 0.6, 0.9, 0.4, 0.1), strict=True))
    for pk, value in served.items():
        ServedScore.objects.create(
            campaign=campaign, solution_id=pk, endpoint="prm", model="m", score=value
        )
    for name in NAMES:
        campaign.al_strategy = name
        campaign.al_scoring_endpoint = "prm" if name == "served-prm" else ""
        campaign.save()
        run = active_learning_run(run=_new_run(campaign, model=model))
        assert run.status == "succeeded" and run.strategy == name
        items = [replace(s, served_score=served[s.solution_id]) for s in scored]
        expected = strategy_order(name, items, wrong_share=0.8, seed=run.pk)
        if name == AUTO:  # nothing measured: uniform, and the others tried on 30% of the queue
            shares = auto_shares(
                auto_choice([], ["convincing-wrong", "uncertainty"]), control_share=0.0
            )
            expected, _ = place(
                [(n, strategy_order(n, scored, wrong_share=0.8, seed=run.pk)) for n, _ in shares],
                [share for _, share in shares],
                control_share=0.0,
                seed=run.pk,
            )
        assert [pk for pk, *_ in _open_order(campaign)] == [s.solution_id for s in expected], name
