"""PRM800K's phase 1: candidate next steps for a prefix, rated and chosen as the solution grows.

In phase 1 of PRM800K a labeler saw, at each step, several candidate next steps sampled for the
same prefix (the problem and the steps chosen so far), rated each, and chose the one to continue
with or wrote their own; the chosen (or written) step became the next step, and the others were
kept with their ratings. A campaign in phase 1 mode (``Campaign.phase1_mode``) labels that way.

A ``StepCandidate`` is one candidate next step of a solution's tree, known by its position and
the hash of the prefix it continues (``prefix_hash``), so two annotators whose paths agree see
the same candidates. Candidates come from the solution itself (its steps and the candidates its
imported PRM800K labels carry, the *imported* ones) or from a generation endpoint (*sampled*); a
step an annotator writes is a *human* candidate that only its author's assignment sees.

A ``CandidateLabel`` is an annotator's draft on one candidate: its rating, its flag, and whether
it is the step chosen at that position. On submission the chosen path becomes the solution's
steps and each position one ``StepLabel`` with the other candidates as its ``alternatives``
(``labeling.queue.phase1``), exactly as the importer maps a PRM800K phase 1 line.
"""

from __future__ import annotations

import hashlib
import json

from django.db import models
from django.db.models import Q
from django.utils import timezone

from labeling.models.campaigns import Rating
from labeling.models.labels import Assignment
from labeling.models.solutions import Solution


def prefix_hash(texts: list[str]) -> str:
    """The identity of a prefix (the steps before a position), as candidates are keyed by it."""
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()


class StepCandidate(models.Model):
    """One candidate next step of a solution for one prefix (PRM800K phase 1's completions)."""

    class Source(models.TextChoices):
        IMPORTED = "imported", "imported"
        SAMPLED = "sampled", "sampled"
        HUMAN = "human", "written by the annotator"

    solution = models.ForeignKey(Solution, on_delete=models.CASCADE, related_name="candidates")
    position = models.PositiveIntegerField(help_text="The index of the step it would be.")
    prefix_hash = models.CharField(max_length=64)
    order = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()
    source = models.CharField(max_length=10, choices=Source.choices)
    model = models.CharField(max_length=200, blank=True, help_text="The sampling endpoint's model.")
    # A written step belongs to its author's assignment: nobody else is shown it.
    author = models.ForeignKey(
        Assignment,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="written_candidates",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["solution", "position", "order", "id"]
        indexes = [
            models.Index(fields=["solution", "prefix_hash"], name="candidate_by_prefix"),
        ]

    def __str__(self) -> str:
        return f"candidate {self.order} for step {self.position} of solution {self.solution_id}"


class CandidateLabel(models.Model):
    """An annotator's draft on one candidate: rating, flag, and whether they continue with it.

    One per (assignment, candidate): rating again replaces, so a retried request never doubles a
    rating. At most one chosen candidate per position of an assignment's path.
    """

    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, related_name="candidate_labels"
    )
    candidate = models.ForeignKey(StepCandidate, on_delete=models.CASCADE, related_name="labels")
    position = models.PositiveIntegerField()
    rating = models.SmallIntegerField(choices=Rating.choices, null=True, blank=True)
    flagged = models.BooleanField(default=False)
    chosen = models.BooleanField(default=False)
    time_spent_ms = models.PositiveIntegerField(null=True, blank=True)
    # When it was last rated or chosen: what an undo takes back first.
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["assignment", "position", "candidate__order", "candidate_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "candidate"], name="candidatelabel_unique_candidate"
            ),
            models.UniqueConstraint(
                fields=["assignment", "position"],
                condition=Q(chosen=True),
                name="candidatelabel_one_choice",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rating} on candidate {self.candidate_id}"
