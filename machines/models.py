"""What the machines were asked and what they answered: generation, evidence and scoring jobs,
and a served PRM's scores.

The four tables were created by ``imports`` (``imports_generationjob``,
``imports_evidencejob``) and ``learning`` (``learning_scoringjob``, ``learning_servedscore``)
and keep their names: the models moved here without touching the database. The machine evidence
itself (``StepEvidence``) stays ``labeling``'s: the data browser, review and curation read it.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.models import BackgroundJob, RecoverableJob
from labeling.models import Campaign

PRM800K_PROMPT = (
    "Solve the following math problem step by step. Write one step per paragraph, separated by "
    "a blank line. When you are done, write the final answer on its own after a line that says "
    '"# Answer", like this:\n\n# Answer\n\n42\n\nProblem: {problem}'
)


class GenerationJob(BackgroundJob):
    """K fresh solutions per problem from an OpenAI-compatible endpoint (PRM800K's rounds).

    Each sample has a key, ``g<job>:p<problem>:s<index>``, stored as the solution's
    ``source_ref`` (source ``generation``): a run writes its results in batches, so a job that
    stopped half way keeps what it finished, and running it again asks only for the keys the
    campaign does not have. ``plan`` fixes at the first run which problems get how many samples
    (``fewer_than_k`` counts open solutions then), so a resumed job asks for the same ones.

    ``endpoint`` names the operator's declared endpoint (``machines.endpoints``), whose URL and
    key are the operator's and are never stored here; ``base_url`` is only for a free-form URL
    (where the operator allows them) and for jobs made before endpoints were declared.
    """

    class Selection(models.TextChoices):
        ALL = "all", "all problems"
        FILTER = "filter", "problems matching a filter"
        FEWER_THAN_K = "fewer_than_k", "problems with fewer than K open solutions"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="generation_jobs")
    endpoint = models.CharField(
        max_length=50,
        blank=True,
        default="",
        db_default="",
        help_text="The declared endpoint's name (STEPWISE_ENDPOINTS).",
    )
    base_url = models.CharField(
        max_length=500,
        blank=True,
        default="",
        db_default="",
        help_text="A free-form URL, where the operator allows them.",
    )
    model = models.CharField(max_length=200)
    generator = models.CharField(max_length=200, blank=True, help_text="Default: the model.")
    samples_per_problem = models.PositiveIntegerField(default=4)
    selection = models.CharField(max_length=20, choices=Selection.choices, default=Selection.ALL)
    problem_filter = models.JSONField(
        default=dict, blank=True, help_text="{subject, level, search}: for selection 'filter'."
    )
    prompt_template = models.TextField(default=PRM800K_PROMPT)
    temperature = models.FloatField(default=1.0)
    top_p = models.FloatField(default=1.0)
    max_tokens = models.PositiveIntegerField(default=1024)
    split = models.CharField(max_length=200, default="auto")
    concurrency = models.PositiveSmallIntegerField(default=4)
    timeout_s = models.FloatField(default=120.0)
    max_retries = models.PositiveSmallIntegerField(default=5)
    grade = models.BooleanField(default=True)
    plan = models.JSONField(default=list, blank=True, help_text="[[problem id, samples], ...]")
    requested = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    solutions_created = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    progress = models.FloatField(default=0.0)
    errors = models.JSONField(default=list, blank=True, help_text="The last few [{key, message}].")

    def __str__(self) -> str:
        return f"generation {self.pk} from {self.model} into {self.campaign} ({self.status})"

    def sample_key(self, problem_id: int, index: int) -> str:
        """The identity of one sample: the same problem, index and job give the same key."""
        return f"g{self.pk}:p{problem_id}:s{index}"

    @property
    def errors_shown(self) -> list[dict]:
        """The last errors as a page says them: a sample key (``g1:p169:s0``) in words."""
        shown = []
        for error in self.errors or []:
            match = re.fullmatch(r"g\d+:p(\d+):s(\d+)", error.get("key") or "")
            where = f"problem {match[1]}, sample {int(match[2]) + 1}" if match else ""
            shown.append({"where": where or error.get("key", ""), "message": error["message"]})
        return shown

    @property
    def generator_name(self) -> str:
        return self.generator or self.model

    class Meta(BackgroundJob.Meta):
        db_table = "imports_generationjob"

    @property
    def endpoint_shown(self) -> str:
        """What the job's page says it asked: the endpoint's name, or the URL a manager typed."""
        return self.endpoint or self.base_url


class EvidenceJob(BackgroundJob):
    """Machines asked about steps (``machines.evidence``): rollouts from steps, or a judge.

    **Rollouts**: for each chosen step of each solution, ``samples_per_step`` completions are
    sampled from a declared chat endpoint after the step (the prompt is the problem in the
    campaign's prompt format, the reply so far the steps up to it), their final answers graded,
    and the share that reaches the right answer stored as the step's rollout value
    (``labeling.models.StepEvidence``). **Judge**: a chat endpoint is asked, in ProcessBench's
    critic style, which step is the first wrong one (or none).

    ``plan`` fixes the units of work the first time the job runs ([[solution id, step index]];
    the index is -1 for a judge's whole solution); a unit is written once all its samples are
    back, so a job stopped half way keeps what it finished and a resumed one asks only for the
    units missing: no sample is stored twice. ``budget_tokens`` (0: none) stops the job, done,
    once the tokens paid reach it.
    """

    class Kind(models.TextChoices):
        ROLLOUTS = "rollouts", "rollouts from steps"
        JUDGE = "judge", "a judge's first error"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="evidence_jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    endpoint = models.CharField(max_length=100, help_text="A declared chat endpoint, by name.")
    model = models.CharField(max_length=200)
    selection = models.JSONField(
        default=dict,
        blank=True,
        help_text="The data browser's filter of the solutions asked about.",
    )
    steps = models.JSONField(
        default=list, blank=True, help_text="Step indexes to roll out from (empty: every step)."
    )
    samples_per_step = models.PositiveSmallIntegerField(default=8)
    prompt_template = models.TextField(default=PRM800K_PROMPT)
    temperature = models.FloatField(default=1.0)
    top_p = models.FloatField(default=1.0)
    max_tokens = models.PositiveIntegerField(default=1024)
    concurrency = models.PositiveSmallIntegerField(default=4)
    timeout_s = models.FloatField(default=120.0)
    max_retries = models.PositiveSmallIntegerField(default=5)
    budget_tokens = models.PositiveBigIntegerField(default=0, help_text="0: no budget.")
    plan = models.JSONField(default=list, blank=True, help_text="[[solution id, step index], ...]")
    requested = models.PositiveIntegerField(default=0, help_text="Units of work in the plan.")
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    samples = models.PositiveIntegerField(default=0, help_text="Completions stored.")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    progress = models.FloatField(default=0.0)
    stopped_by_budget = models.BooleanField(default=False)
    errors = models.JSONField(default=list, blank=True, help_text="The last few [{key, message}].")

    class Meta(BackgroundJob.Meta):
        db_table = "imports_evidencejob"

    def __str__(self) -> str:
        return f"evidence {self.pk} ({self.kind}) from {self.model} in {self.campaign}"

    @property
    def ref(self) -> str:
        """The job's name on the evidence it wrote."""
        return f"e{self.pk}"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ScoringJob(RecoverableJob):
    """Scoring a campaign's open solutions with a PRM served elsewhere (``machines.served``).

    The endpoint is a declared one, by name (its URL and key stay the operator's); the scores
    it answers are ``ServedScore`` rows tagged with this job, so an attempt that resumes after
    a killed worker skips every solution an earlier attempt already committed; a job for the
    new solutions of an import (``only_new``) skips those any job stored.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="scoring_jobs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    endpoint = models.CharField(max_length=50)
    model = models.CharField(max_length=200)
    total = models.PositiveIntegerField(default=0, help_text="Open solutions to score.")
    scored = models.PositiveIntegerField(default=0, help_text="Scored and committed so far.")
    # Only the solutions this endpoint and model have not scored (the new ones of an import);
    # a manager's job scores every one again.
    only_new = models.BooleanField(default=False, db_default=False)
    requests = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(null=True, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "learning_scoringjob"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign"],
                condition=Q(status__in=["pending", "running"]),
                name="scoringjob_one_active_per_campaign",
            ),
        ]

    def __str__(self) -> str:
        return f"scoring job {self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class ServedScore(models.Model):
    """One solution's scores by a served PRM: P(correct) of each step and the solution's score
    (their product, as the campaign's own PRM scores a solution), with the endpoint and model
    that gave them. The latest job's scores replace an earlier job's for the same model."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    solution = models.ForeignKey(
        "labeling.Solution", on_delete=models.CASCADE, related_name="served_scores"
    )
    endpoint = models.CharField(max_length=50)
    model = models.CharField(max_length=200)
    job = models.ForeignKey(ScoringJob, null=True, on_delete=models.SET_NULL, related_name="+")
    step_scores = models.JSONField(default=list)
    score = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "learning_servedscore"
        constraints = [
            models.UniqueConstraint(
                fields=["solution", "endpoint", "model"], name="servedscore_one_per_model"
            ),
        ]
        indexes = [
            models.Index(fields=["campaign", "endpoint", "model"], name="servedscore_by_model"),
            models.Index(fields=["job", "solution"], name="servedscore_by_job"),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint}/{self.model} score of solution {self.solution_id}"


class Phase1Sampling(BackgroundJob):
    """Candidates for one prefix of one solution in PRM800K's phase 1 mode, sampled by a worker
    (``machines.phase1_sampling``), so that no labelling page waits on a model server: the page
    queues it and polls it. One waits or runs per prefix at a time."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    solution = models.ForeignKey("labeling.Solution", on_delete=models.CASCADE, related_name="+")
    prefix = models.JSONField(default=list, help_text="The steps so far (their texts).")
    prefix_hash = models.CharField(max_length=64)
    sampled = models.PositiveSmallIntegerField(default=0, help_text="Candidates stored.")

    class Meta(BackgroundJob.Meta):
        indexes = [models.Index(fields=["solution", "prefix_hash"], name="phase1sampling_prefix")]
        constraints = [
            models.UniqueConstraint(
                fields=["solution", "prefix_hash"],
                condition=Q(status__in=["pending", "running"]),
                name="phase1sampling_one_active",
            ),
        ]

    def __str__(self) -> str:
        return f"phase 1 sampling {self.pk} ({self.status})"

    @property
    def position(self) -> int:
        """The step number (from 1) the candidates are for."""
        return len(self.prefix) + 1


class ReceivedSample(models.Model):
    """One sample a generation job received, written as it arrives (``machines.generation``):
    a job stopped before its batch was imported imports it when it resumes instead of asking the
    endpoint again, and a sample that became no solution (a duplicate, an empty or unsplittable
    completion) is not asked again either. ``written``: its batch has been imported."""

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="received")
    key = models.CharField(max_length=100)
    problem_id = models.BigIntegerField()
    text = models.TextField()
    finish_reason = models.CharField(max_length=40, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    retries = models.PositiveSmallIntegerField(default=0)
    written = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "key"], name="receivedsample_one_per_key")
        ]

    def __str__(self) -> str:
        return f"{self.key} ({'written' if self.written else 'received'})"
