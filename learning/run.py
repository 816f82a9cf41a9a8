"""An active-learning run: the job kind ``AL_RUNS`` and its work, the run's declared stages.

``active_learning_work`` walks ``learning.stages.STAGES`` in order: the Celery task
``learning.active_learning_run`` claims the run (``common.jobs``: one UPDATE, so two workers
never both take it) and beats its heartbeat from a thread while this works; each stage's timing
is recorded on the run as it goes, with the stage in progress. The new model is registered
inactive; only the last stage, one transaction, activates it and rewrites the queue, so a worker
killed before that leaves the previous model active and the queue as it was.
"""

from __future__ import annotations

import time

from common.jobs import JobAttempt, JobKind, JobPage, job_run
from labeling.permissions import MANAGE
from learning.models import ActiveLearningRun
from learning.stages import STAGES, RunState


def active_learning_run(*, run: ActiveLearningRun) -> ActiveLearningRun:
    """Run the stages in this process, as the run's Celery task does (``common.jobs.job_run``).

    Safe to call for any message: a run that is finished, or running with a live heartbeat (a
    duplicate message), is returned as it is. A failure is recorded on the run (which frees the
    lock), then raised.
    """
    return job_run(AL_RUNS, run) or run


def active_learning_work(run: ActiveLearningRun, attempt: JobAttempt) -> None:
    """The run's stages, each that applies timed on the run; every write only while this
    attempt owns it (``JobAttempt.update``), so a worker the sweep gave up on (alive after all,
    but silent) stops at its next stage instead of racing the new one."""
    state = RunState.start(run, attempt)
    with state.resources:
        for stage in STAGES:
            if not stage.when(state):
                continue
            if stage.timed:
                state.timings["stage"] = stage.name
                state.save()
            started = time.perf_counter()
            stage.work(state)
            if stage.timed:
                state.timings[stage.name] = round(time.perf_counter() - started, 3)
    state.timings.pop("stage", None)
    state.timings["total"] = round(time.perf_counter() - state.started, 3)
    # After the run's last write (it is no longer running): only this attempt's own row.
    ActiveLearningRun.objects.filter(pk=run.pk, attempts=attempt.number).update(
        timings=state.timings
    )


# Runs keep their own status names (queued, succeeded: the API has always said them) and settings;
# the jobs' sweep sends again a run whose worker died, and fails it after STEPWISE_AL_MAX_ATTEMPTS.
AL_RUNS = JobKind(
    name="active_learning",
    model=ActiveLearningRun,
    task="learning.active_learning_run",
    work=active_learning_work,
    related=("campaign", "model"),
    queued=ActiveLearningRun.Status.QUEUED,
    done=ActiveLearningRun.Status.SUCCEEDED,
    stale_setting="STEPWISE_AL_STALE_SECONDS",
    attempts_setting="STEPWISE_AL_MAX_ATTEMPTS",
    heartbeat_setting="STEPWISE_AL_HEARTBEAT_SECONDS",
    page=JobPage(
        template="learning/_run_job.html",
        url="learning:page",
        viewers=MANAGE,
        css_class="snapshot-info",
        reload_when_done=True,
    ),
)
