"""Jobs on pages: ``{% job_status job %}``, the one status partial of every kind of job, and
``{{ job|job_word }}``, a job's state in the words every page uses (``common.jobs``).

The partial (``labeling/_job.html``) wraps the kind's own part (``JobPage.template``); that part
says the job's state with ``{% include "labeling/_job_state.html" %}``: its word, what it is doing
(``with detail=...``), that no worker consumes its queue when that is so (``common.queues``), its
attempt, its progress while it runs and its reason when it failed (``with error=""`` leaves the
reason to the kind, as an import's list of errors does).
"""

from __future__ import annotations

from django import template
from django.conf import settings
from django.urls import reverse

from common.jobs import FINISHED, PENDING, STATE_WORDS, job_kind_of
from common.queues import queue_consumers

register = template.Library()


@register.inclusion_tag("labeling/_job.html", takes_context=True)
def job_status(context: template.Context, job) -> dict:
    """The job's element: the kind's own part (``JobPage.template``) inside one wrapper that
    htmx polls at the one status view every ``STEPWISE_JOB_POLL_SECONDS`` while the job runs
    (and on, for a kind that follows newer jobs). Needs ``campaign`` in the context."""
    kind = job_kind_of(job)
    state = kind.state(job)
    finished = state in FINISHED
    # A waiting job whose queue no worker consumes would wait for ever: say so, and which queue.
    queue = kind.queue
    unconsumed = state == PENDING and queue_consumers().unconsumed(queue)
    campaign = context["campaign"]
    url = reverse(
        "labeling:job-status", kwargs={"slug": campaign.slug, "kind": kind.name, "pk": job.pk}
    )
    return context.flatten() | {
        "job": job,
        "kind": kind,
        "state": state,
        "word": STATE_WORDS[state],
        "finished": finished,
        "polls": not finished or kind.page.follow is not None,
        "status_url": f"{url}?state={state}",
        "poll_seconds": settings.STEPWISE_JOB_POLL_SECONDS,
        "progress": getattr(job, "progress", None),
        "error": job.error,
        "queue": queue,
        "unconsumed": unconsumed,
    }


@register.filter
def job_word(job) -> str:
    """The job's state as pages say it (an active-learning run's ``succeeded`` is ``done``)."""
    return STATE_WORDS[job_kind_of(job).state(job)]
