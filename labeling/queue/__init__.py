"""The work queue and the labelling workflow: what an annotator labels next, drafts, submission.

The JSON API (``labeling.api``) and the htmx labelling page both call these functions, so every
rule lives here once.

Slots. A solution wants ``campaign.overlap`` labels. An assignment holds one of its slots while it
is leased and after it is submitted (``Assignment.holds_slot``); ``Solution.assignment_count``
counts them and ``Solution.is_open`` says whether the queue may serve the solution. Every change
is a relative UPDATE (``SolutionQuerySet.slots_change``) in the same transaction as the change of
the assignment, so the counter never drifts.

Reviews and amendments. Rejected work gives its slot back (status ``rejected``, labels kept) so
the solution is labelled again (``assignment_review_outcome``); an amendment before review is a
new assignment that takes over the slot of the version it supersedes (``assignment_amend``).

Leases. A served solution is leased for ``campaign.lease_seconds``. An expired lease keeps its
slot until it is reclaimed: ``leases_reclaim`` marks it ``expired`` and releases the slot. Before
a claim the queue reclaims a few expired leases (an indexed probe, at most once a second per
process and campaign), all of them before it ever answers "no work", and a Celery beat task
sweeps every campaign once a minute. The holder of an expired lease may still submit (or keep
drafting): accepted if the slot is still free (it is taken again), refused with ``LeaseTaken``
if somebody else took it. Draft actions renew the lease, so an annotator who is working never
loses their solution.

Locks. Every write takes row locks in one order, so concurrent requests cannot deadlock: the
annotator's ``Membership`` row first (it serialises one person's requests: a double click cannot
lease two solutions, or one screening question twice), then ``Assignment`` rows, then
``Solution`` rows (in id order when there are several). Reclaiming runs in its own transaction,
before the claim's. On PostgreSQL the claim is one statement that reads the queue with
``SELECT ... FOR NO KEY UPDATE SKIP LOCKED`` on the partial index ``solution_queue``, so
concurrent annotators pass over each other's rows instead of queueing behind them, and its cost
does not depend on the number of solutions; only when that finds nothing does it wait on locked
rows, so nobody is told "no work" because another annotator was momentarily holding the last
free slot. ``NO KEY`` locks leave foreign-key checks of concurrent inserts unblocked. On SQLite,
writes are serialised (the settings open every transaction with ``BEGIN IMMEDIATE``), and the
claim runs as three ORM queries.
"""

from __future__ import annotations

from labeling.models import Membership
from labeling.queue.amend import assignment_amend
from labeling.queue.claim import RECLAIM_EVERY_SECONDS, assignment_next, qc_turn
from labeling.queue.drafts import (
    drafts_version,
    step_label_flag,
    step_label_human_completion,
    step_label_set,
    step_label_undo,
)
from labeling.queue.errors import (
    AssignmentClosed,
    CampaignPaused,
    DraftsChanged,
    LabelingError,
    LabelsInvalid,
    LeaseTaken,
    MembershipInactive,
    NotAMember,
    NotLeaseHolder,
    ScreeningFailed,
)
from labeling.queue.leases import RECLAIM_BATCH, leases_reclaim, membership_pause
from labeling.queue.phase1.drafts import candidate_choose, candidate_rate, phase1_undo, step_write
from labeling.queue.phase1.sampling import candidate_sampling_register, candidates_store
from labeling.queue.phase1.view import Phase1View, phase1_applies, phase1_open, phase1_page
from labeling.queue.qc_pause import qc_window_score
from labeling.queue.review import assignment_review_outcome
from labeling.queue.screening import screening_score
from labeling.queue.shared import (
    RATINGS,
    human_completion_load,
    model_columns,
    model_fetch,
    model_from_row,
)
from labeling.queue.submit import SubmitResult, assignment_skip, assignment_submit

__all__ = [
    "RATINGS",
    "RECLAIM_BATCH",
    "RECLAIM_EVERY_SECONDS",
    "AssignmentClosed",
    "CampaignPaused",
    "DraftsChanged",
    "LabelingError",
    "LabelsInvalid",
    "LeaseTaken",
    "Membership",
    "MembershipInactive",
    "NotAMember",
    "NotLeaseHolder",
    "Phase1View",
    "ScreeningFailed",
    "SubmitResult",
    "assignment_amend",
    "assignment_next",
    "assignment_review_outcome",
    "assignment_skip",
    "assignment_submit",
    "candidate_choose",
    "candidate_rate",
    "candidate_sampling_register",
    "candidates_store",
    "drafts_version",
    "human_completion_load",
    "leases_reclaim",
    "membership_pause",
    "model_columns",
    "model_fetch",
    "model_from_row",
    "phase1_applies",
    "phase1_open",
    "phase1_page",
    "phase1_undo",
    "qc_turn",
    "qc_window_score",
    "screening_score",
    "step_label_flag",
    "step_label_human_completion",
    "step_label_set",
    "step_label_undo",
    "step_write",
]
