"""Recovery: the sweep that sends again runs whose message or worker was lost.

A run keeps its lock while it is queued or running; the sweep sees a running run's heartbeat go
stale and queues it again, or fails it after ``STEPWISE_AL_MAX_ATTEMPTS`` (which frees the lock).
It is the durable jobs' sweep (``common.jobs.job_kind_sweep``) for the kind ``AL_RUNS``; the
beat task ``common.jobs_sweep`` runs it with every other kind.
"""

from __future__ import annotations

from common.jobs import job_kind_sweep
from learning.triggers import AL_RUNS


def active_learning_sweep(*, stale_seconds: int | None = None) -> dict[str, int]:
    """Send again the runs that lost their message or worker; fail those out of attempts.

    - running with a heartbeat older than the stale bound: the worker died (the embedded broker
      never redelivers; Redis does, but only after its visibility timeout). Back to queued,
      keeping the lock, and sent again; after ``STEPWISE_AL_MAX_ATTEMPTS`` starts it fails with
      an error that says so, which frees the lock;
    - queued and not taken within the stale bound of being sent: the message was lost (or every
      worker was busy that long: a duplicate message is harmless, the claim takes a run once).
    """
    return job_kind_sweep(AL_RUNS, stale_seconds=stale_seconds)
