"""What happened in the labelling domain that other apps may act on.

A lower layer must sometimes set off work in a higher one: a submit should count towards the
next active-learning run, an import should get its new solutions scored. The lower layer does
not import the higher one (``lint-imports`` holds that); it publishes one of the events below,
at the call site of the service that did the work, and apps higher up subscribe to them in their
``AppConfig.ready()`` (``learning.apps``). These are the only signals in the project: nothing is
sent from ``save()`` or ``post_save``, so what sets off what can be read where it happens. An
event says what happened; a page that needs an answer from a higher layer (a PRM's step scores)
asks a registered function instead (``labeling.scores``).

A subscriber never fails the work that published the event: errors are logged and dropped.
"""

from __future__ import annotations

import functools
import logging

from django.db import transaction
from django.dispatch import Signal

log = logging.getLogger(__name__)

# A submit added step labels to campaign ``campaign_id`` (sent once the submit has committed).
labels_submitted = Signal()
# An import added ``solutions_created`` solutions (and ``labels_created`` step labels) to
# campaign ``campaign_id`` (sent once the import has committed).
solutions_imported = Signal()
# A served PRM's scores of campaign ``campaign_id``'s solutions were stored (a scoring job of
# ``machines.served`` ended done).
served_scores_stored = Signal()


def publish(event: Signal, **payload) -> list:
    """Tell every subscriber now; returns their answers (an exception counts as no answer)."""
    answers = []
    for receiver, answer in event.send_robust(sender=None, **payload):
        if isinstance(answer, Exception):
            log.error("subscriber %r failed on %s", receiver, payload, exc_info=answer)
        else:
            answers.append(answer)
    return answers


def publish_on_commit(event: Signal, **payload) -> None:
    """Tell every subscriber once the current transaction commits (never if it rolls back)."""
    transaction.on_commit(functools.partial(publish, event, **payload), robust=True)
