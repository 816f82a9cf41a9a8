"""The labelling domain: campaigns, problems, solutions split into steps, and the labels on them.

Names follow PRM800K where it has them. A PRM800K label line maps onto these tables as follows:

- ``question.problem`` / ``ground_truth_answer`` / ``ground_truth_solution`` -> ``Problem``;
- ``question.pre_generated_steps`` / ``pre_generated_answer`` / ``pre_generated_verifier_score``
  and the line's ``generation`` -> ``Solution`` with its ``Step`` rows (phase 2). Phase 1 lines
  have no pre-generated steps: the steps of their solution are the path the labeler built (at each
  position the chosen completion, else the human completion, else the first candidate);
- ``labeler``, ``timestamp``, ``label.total_time``, ``label.finish_reason`` -> ``Assignment``;
- each ``label.steps[i]`` -> one ``StepLabel``: the rating and flag of the completion that is the
  solution's step ``i``, the other candidates (``alternatives``) and where the step's own completion
  sits among them (``completion_index``), ``human_completion`` and ``chosen_completion``.

That mapping is lossless: ``exports`` rebuilds every line field for field.

The models live in six modules of this package (campaigns, solutions, labels, curation,
evidence: what machines say about steps, candidates: PRM800K phase 1's candidate next steps), and
the disputed-step rule's SQL, which solutions and labels both read, in a seventh (disputes);
every name is importable from ``labeling.models``.
"""

from labeling.models.campaigns import (
    AL_BACKBONES,
    Campaign,
    FinishReason,
    GradingRule,
    Invitation,
    Membership,
    Rating,
)
from labeling.models.candidates import CandidateLabel, StepCandidate, prefix_hash
from labeling.models.curation import (
    AdjudicationRequest,
    ReviewRequest,
    SolutionBulkAction,
    SolutionEvent,
)
from labeling.models.disputes import disputed_step_count
from labeling.models.evidence import StepEvidence
from labeling.models.labels import (
    Adjudication,
    Assignment,
    Review,
    StepLabel,
    ratings_disagree,
)
from labeling.models.solutions import (
    Problem,
    Solution,
    SolutionQuerySet,
    Step,
    disputes_recount,
    is_open_value,
    open_expression,
)

__all__ = [
    "AL_BACKBONES",
    "Adjudication",
    "AdjudicationRequest",
    "Assignment",
    "Campaign",
    "CandidateLabel",
    "FinishReason",
    "GradingRule",
    "Invitation",
    "Membership",
    "Problem",
    "Rating",
    "Review",
    "ReviewRequest",
    "Solution",
    "SolutionBulkAction",
    "SolutionEvent",
    "SolutionQuerySet",
    "Step",
    "StepCandidate",
    "StepEvidence",
    "StepLabel",
    "disputed_step_count",
    "disputes_recount",
    "is_open_value",
    "open_expression",
    "prefix_hash",
    "ratings_disagree",
]
