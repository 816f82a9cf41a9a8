"""Machine evidence about steps, beside the human labels: Monte-Carlo rollouts and a judge.

Since PRM800K, teams label steps with machines too. Math-Shepherd and OmegaPRM estimate a step's
correctness by sampling completions from it and grading their final answers; the Qwen team
("The Lessons of Developing Process Reward Models") found such labels noisy alone and kept those
that rollouts and an LLM judge agree on. A ``StepEvidence`` row is one machine's word on one
step: a **rollout** value (the share of ``samples`` completions from the step that reach the
right answer) or a **judge**'s verdict (1.0: the judge finds no error up to this step; 0.0: this
is the first wrong step it names). The job that asks the machines is ``machines.evidence``.

Evidence is for managers and reviewers (the data browser's item page and filters); annotators
never see it on the labelling page, as PRM800K showed its labelers no model opinion.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from labeling.models.labels import StepLabel
from labeling.models.solutions import Solution, Step


class StepEvidenceQuerySet(models.QuerySet):
    """The one home of "the human labels conflict with the machine evidence" on a step.

    A piece of evidence conflicts with the submitted human labels of its step when:

    - the machine says the step goes wrong (no rollout from it reaches the answer, or the judge
      names it as the first error) and an annotator rated it positive;
    - the judge names it as the first error and, though annotators rated it, none rated it
      negative (the error nobody marked);
    - every one of at least ``ALL_REACH_MIN_SAMPLES`` rollouts from it reaches the answer and an
      annotator rated it negative.
    """

    ALL_REACH_MIN_SAMPLES = 4

    def conflicting(self) -> StepEvidenceQuerySet:
        labels = StepLabel.objects.submitted().filter(step_id=OuterRef("step_id"))
        rated = Exists(labels.filter(rating__isnull=False))
        positive = Exists(labels.filter(rating=1))
        negative = Exists(labels.filter(rating=-1))
        says_wrong = Q(value=0.0)
        judge = Q(kind=StepEvidence.Kind.JUDGE)
        all_reach = Q(
            kind=StepEvidence.Kind.ROLLOUT, value=1.0, samples__gte=self.ALL_REACH_MIN_SAMPLES
        )
        return self.filter(
            (says_wrong & positive)
            | (says_wrong & judge & rated & ~negative)
            | (all_reach & negative)
        )


class StepEvidence(models.Model):
    """One machine's word on one step (one row per step, kind and model: a new run replaces)."""

    class Kind(models.TextChoices):
        ROLLOUT = "rollout", "rollouts"
        JUDGE = "judge", "judge"

    solution = models.ForeignKey(Solution, on_delete=models.CASCADE, related_name="evidence")
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="evidence")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    model = models.CharField(max_length=200, help_text="The model that gave it.")
    endpoint = models.CharField(max_length=100, blank=True, help_text="The declared endpoint.")
    value = models.FloatField(
        help_text="Rollouts: share of samples reaching the right answer. Judge: 1 correct so "
        "far, 0 the first wrong step."
    )
    samples = models.PositiveIntegerField(default=1, help_text="Rollouts asked (k); 1 for a judge.")
    correct = models.PositiveIntegerField(default=0, help_text="Samples that reached the answer.")
    tokens = models.PositiveIntegerField(default=0, help_text="Prompt and completion tokens paid.")
    job_ref = models.CharField(max_length=40, blank=True, help_text="The job that asked, e.g. e12.")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = StepEvidenceQuerySet.as_manager()

    class Meta:
        ordering = ["solution", "step__index", "kind", "model"]
        constraints = [
            models.UniqueConstraint(
                fields=["step", "kind", "model"], name="stepevidence_one_per_step_kind_model"
            )
        ]
        indexes = [models.Index(fields=["solution", "kind"], name="stepevidence_solution_kind")]

    def __str__(self) -> str:
        return f"{self.kind} {self.value:.2f} on step {self.step_id} ({self.model})"

    @property
    def says_wrong(self) -> bool:
        """The machine's word is "this step goes wrong": no rollout reaches the answer, or the
        judge names it as the first error."""
        return self.value == 0.0
