"""Celery tasks of the shared mechanisms: the sweep that recovers jobs whose worker died.

The tasks that run jobs are made from their kinds when each is registered (``common.jobs``).
"""

from __future__ import annotations

from celery import shared_task


@shared_task(name="common.jobs_sweep", ignore_result=True)
def jobs_sweep_task() -> dict[str, dict[str, int]]:
    """Send again (or fail) every registered kind of job whose worker went silent (beat)."""
    from common.job_recovery import jobs_sweep

    return jobs_sweep()
