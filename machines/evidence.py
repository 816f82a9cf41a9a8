"""Machine evidence about steps: Monte-Carlo rollouts from a step, and a judge's first error.

``evidence_job_create`` checks what a manager asked for (a solution's step on the item page, or
every solution of a data-browser filter) and queues an ``EvidenceJob``; a Celery worker runs it
as the job kind ``EVIDENCE_JOBS`` (``common.jobs``: claimed, beating, swept, resumed).

- **Rollouts** (Math-Shepherd, OmegaPRM): for each chosen step, ``samples_per_step`` completions
  are sampled from a declared chat endpoint with the problem in the campaign's prompt format as
  the user's turn and the steps up to and including that step as the start of the assistant's
  reply (``continue_final_message``, as vLLM's chat API takes it), each completion's final answer
  is graded against the problem's, and the share that reaches it is the step's rollout value.
  The last step is not rolled out from: nothing follows it (its value is the solution's grade).
- **Judge** (ProcessBench's critic): a chat endpoint is asked, with :data:`JUDGE_PROMPT`, for the
  index of the earliest wrong step or -1; the steps before it are stored 1.0, the one it names
  0.0 and those after it nothing (a critic says nothing past the first error).

Each unit (a step's k samples, or one solution's verdict) is written in one transaction once all
its samples are back, with the job's counters, while this attempt owns the job: a job stopped
half way keeps its finished units and a resumed one asks only for the missing ones, so no sample
is stored twice. ``budget_tokens`` stops the job (done, ``stopped_by_budget``) once the tokens
paid reach it. The endpoint, its URL and its key are the operator's (``machines.endpoints``);
the key is never stored and scrubbed from every message kept.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F

from common.jobs import (
    DONE,
    FAILED,
    JobAttempt,
    JobKind,
    JobPage,
    JobSuperseded,
    job_run,
    stage_pause,
)
from labeling.curation.filters import FilterError, SolutionFilter
from labeling.grading import Grader, extract_answer
from labeling.models import Campaign, Solution, Step, StepEvidence
from labeling.permissions import MANAGE
from machines.chat import (
    CONTINUATION,
    ChatClient,
    ContinuationRefused,
    GenerationRefused,
    Sample,
    Tally,
    endpoint_choose,
)
from machines.client import requests_bounded
from machines.endpoints import CHAT, EndpointRefused, endpoint_get
from machines.generation import default_template, prompt_values
from machines.models import EvidenceJob
from machines.prompts import JUDGE_PROMPTS

log = logging.getLogger(__name__)

MAX_SAMPLES_PER_STEP = 64
MAX_UNITS = 20_000  # units one job may plan (a bigger set is several jobs)
MAX_ERRORS_KEPT = 20
JUDGE = -1  # the step index of a judge's unit: the whole solution

JUDGE_PROMPT = JUDGE_PROMPTS["judge-math"]
"""The judge's prompt for math, after ProcessBench's critic prompt (Zheng et al., 2024); each
kind of trace names its own in ``machines.prompts.JUDGE_PROMPTS`` (``labeling.traces``)."""

_BOXED_INT = re.compile(r"\\boxed\{\s*(-?\d{1,6})\s*\}")


class EvidenceRefused(Exception):
    """A request for machine evidence that cannot become a job; the text is shown to the person.
    ``field``: the form field at fault, if one is."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# --- creating a job ----------------------------------------------------------------------------


def evidence_job_create(
    *,
    campaign: Campaign,
    created_by: AbstractBaseUser | None,
    kind: str,
    endpoint: str,
    model: str = "",
    selection: dict | None = None,
    steps: list[int] | None = None,
    samples_per_step: int = 8,
    budget_tokens: int = 0,
    temperature: float | None = None,
    max_tokens: int = 1024,
    concurrency: int = 4,
    enqueue: bool = True,
) -> EvidenceJob:
    """Check a request for machine evidence and queue it (``enqueue=False``: the caller runs it).

    ``selection`` is a data-browser filter (``labeling.curation.filters``; ``{"id": [pk]}`` for
    one solution); ``steps`` the step indexes to roll out from (none: every step but the last).
    ``endpoint`` names a declared chat endpoint and ``model`` one of its models (blank: its first).
    """
    if kind not in EvidenceJob.Kind.values:
        raise EvidenceRefused(
            f"kind must be one of {', '.join(EvidenceJob.Kind.values)}.", field="kind"
        )
    try:
        chosen = endpoint_choose(endpoint=endpoint)
        model = chosen.model(model)
    except GenerationRefused as e:
        raise EvidenceRefused(str(e), field="endpoint") from None
    except EndpointRefused as e:
        raise EvidenceRefused(str(e), field="model") from None
    if not 1 <= samples_per_step <= MAX_SAMPLES_PER_STEP:
        raise EvidenceRefused(
            f"Ask for 1 to {MAX_SAMPLES_PER_STEP} rollouts per step.", field="samples_per_step"
        )
    if budget_tokens < 0:
        raise EvidenceRefused("The token budget is 0 (none) or more.", field="budget_tokens")
    if not 1 <= max_tokens <= 131072:
        raise EvidenceRefused("max_tokens must be between 1 and 131072.", field="max_tokens")
    limit = min(settings.STEPWISE_GENERATION_MAX_CONCURRENCY, chosen.max_concurrency)
    if not 1 <= concurrency <= limit:
        raise EvidenceRefused(f"concurrency must be between 1 and {limit}.", field="concurrency")
    steps = sorted({int(i) for i in steps or []})
    if any(i < 0 for i in steps):
        raise EvidenceRefused("Step numbers start at 1.", field="steps")
    try:
        chosen_filter = SolutionFilter.from_params(selection or {})
    except FilterError as e:
        raise EvidenceRefused(f"{e.field}: {e.message}", field="selection") from None
    if not chosen_filter:
        raise EvidenceRefused("Choose the solutions to ask about (a filter or a solution).")
    solutions = chosen_filter.apply(Solution.objects.filter(campaign=campaign))
    count = solutions.count()
    if not count:
        raise EvidenceRefused("No solution matches the selection.", field="selection")
    if count > MAX_UNITS:
        raise EvidenceRefused(
            f"{count:,} solutions match: ask about at most {MAX_UNITS:,} in one job.",
            field="selection",
        )
    job = EvidenceJob(
        campaign=campaign,
        created_by=created_by,
        kind=kind,
        endpoint=chosen.name,
        model=model,
        selection=chosen_filter.to_params(with_sort=False),
        steps=steps,
        samples_per_step=samples_per_step if kind == EvidenceJob.Kind.ROLLOUTS else 1,
        prompt_template=default_template(campaign),
        temperature=(0.0 if kind == EvidenceJob.Kind.JUDGE else 1.0)
        if temperature is None
        else temperature,
        max_tokens=max_tokens,
        concurrency=concurrency,
        timeout_s=chosen.timeout_s,
        budget_tokens=budget_tokens,
    )
    with transaction.atomic():
        job.save()
        if enqueue:
            EVIDENCE_JOBS.send(job.pk)
    return job


def evidence_job_run(
    *, job: EvidenceJob, client: httpx.Client | None = None, sleep: Callable = time.sleep
) -> EvidenceJob:
    """Run an evidence job in this process (what its Celery task does through ``job_run``)."""
    return job_run(EVIDENCE_JOBS, job, client=client, sleep=sleep) or job


# --- the plan ----------------------------------------------------------------------------------


def make_plan(job: EvidenceJob) -> list[list[int]]:
    """[[solution id, step index], ...] (index -1: a judge's whole solution), fixed at the first
    run: the selection's solutions in id order, and for rollouts each chosen step of each that it
    has, but its last."""
    selected = SolutionFilter.from_params(job.selection).apply(
        Solution.objects.filter(campaign=job.campaign)
    )
    ids = list(selected.order_by("pk").values_list("pk", flat=True)[:MAX_UNITS])
    if job.kind == EvidenceJob.Kind.JUDGE:
        return [[pk, JUDGE] for pk in ids]
    plan: list[list[int]] = []
    last: dict[int, int] = {}
    for solution_id, index in Step.objects.filter(solution_id__in=ids).values_list(
        "solution_id", "index"
    ):
        last[solution_id] = max(index, last.get(solution_id, -1))
    wanted = set(job.steps)
    for pk in ids:
        for index in range(last.get(pk, 0)):  # every step but the last
            if not wanted or index in wanted:
                plan.append([pk, index])
    return plan[:MAX_UNITS]


def _units_done(job: EvidenceJob) -> set[tuple[int, int]]:
    rows = StepEvidence.objects.filter(
        solution__campaign=job.campaign, job_ref=job.ref, kind=_evidence_kind(job)
    ).values_list("solution_id", "step__index")
    if job.kind == EvidenceJob.Kind.JUDGE:
        return {(solution_id, JUDGE) for solution_id, _ in rows}
    return set(rows)


def _evidence_kind(job: EvidenceJob) -> str:
    if job.kind == EvidenceJob.Kind.JUDGE:
        return StepEvidence.Kind.JUDGE
    return StepEvidence.Kind.ROLLOUT


# --- asking ------------------------------------------------------------------------------------


@dataclass
class Unit:
    """One unit of work: a step's k rollouts, or one solution's verdict."""

    solution: Solution
    index: int
    steps: list[Step]
    want: int
    samples: list[Sample] = field(default_factory=list)

    @property
    def key(self) -> str:
        return (
            f"s{self.solution.pk}" if self.index == JUDGE else f"s{self.solution.pk}:{self.index}"
        )


class EvidenceClient(ChatClient):
    """The chat client of generation, with the messages of a rollout or of the judge."""

    def body(self, values: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.job.model,
            "messages": values["messages"],
            "temperature": self.job.temperature,
            "top_p": self.job.top_p,
            "max_tokens": self.job.max_tokens,
            "n": 1,
        }
        if values.get("prefix"):
            # vLLM's chat API: the reply continues the assistant's last message.
            body |= CONTINUATION
        return body

    def rollout_values(self, unit: Unit) -> dict[str, Any]:
        prefix = "\n\n".join(s.raw_text or s.text for s in unit.steps[: unit.index + 1])
        user = self.template.render(prompt_values(unit.solution.problem))
        return {
            "messages": [
                {"role": "user", "content": user},
                {"role": "assistant", "content": prefix + "\n\n"},
            ],
            "prefix": prefix,
        }

    def judge_values(self, unit: Unit) -> dict[str, Any]:
        steps = "\n\n".join(
            f"<step_{s.index}>\n{s.raw_text or s.text}\n</step_{s.index}>" for s in unit.steps
        )
        template = JUDGE_PROMPTS[unit.solution.campaign.kind.judge_prompt]
        prompt = template.format(problem=unit.solution.problem.text, steps=steps)
        return {"messages": [{"role": "user", "content": prompt}]}


def judge_first_error(text: str, n_steps: int) -> int | None:
    """The step index a judge's answer names as the first error (-1: none), or None when the
    answer names no step of this solution."""
    found = _BOXED_INT.findall(text or "")
    if not found:
        return None
    index = int(found[-1])
    return index if -1 <= index < n_steps else None


def _evidence_work(
    job: EvidenceJob,
    attempt: JobAttempt,
    client: httpx.Client | None = None,
    sleep: Callable = time.sleep,
) -> None:
    """Fix the plan on the first run, skip the units this job already wrote, ask for the rest
    ``concurrency`` requests at a time, and write each unit once its samples are back."""
    if not job.plan:
        job.plan = make_plan(job)
        job.requested = len(job.plan)
        attempt.update(plan=job.plan, requested=job.requested)
    try:
        endpoint = endpoint_get(job.endpoint, kind=CHAT)
        if endpoint.key_env and not endpoint.key():
            raise EvidenceRefused(
                f"the worker's environment has no {endpoint.key_env} (the key of endpoint "
                f"{endpoint.name!r}): nothing was asked"
            )
        chat = EvidenceClient(job, endpoint, client=client, sleep=sleep)  # type: ignore[arg-type]
    except (EndpointRefused, EvidenceRefused) as refused:
        attempt.finish(
            FAILED,
            errors=[*job.errors, {"key": "", "message": str(refused)}],
            error=str(refused)[:5000],
        )
        return
    writer = _UnitWriter(job, attempt, chat)
    try:
        for unit in _ask_all(chat, _units_todo(job), job, writer):
            writer.write(unit)
    except JobSuperseded:
        raise
    except ContinuationRefused as refused:  # every rollout would be refused the same
        log.warning("evidence job %s: %s", job.pk, refused)
        writer.error("", str(refused))
        writer.save(final_state=FAILED, reason=str(refused))
    except Exception as error:
        log.exception("evidence job %s failed", job.pk)
        writer.error("", chat.scrub(type(error).__name__))
        writer.save(final_state=FAILED, reason=chat.scrub(f"{type(error).__name__}: {error}"))
    else:
        ok = writer.completed_before + writer.completed > 0 or job.requested == 0
        state = DONE if ok or writer.over_budget else FAILED
        writer.save(final_state=state, reason="" if state == DONE else writer.why_none())
    finally:
        chat.close()


def _units_todo(job: EvidenceJob) -> list[Unit]:
    done = _units_done(job)
    wanted = [(s, i) for s, i in job.plan if (s, i) not in done]
    ids = {s for s, _ in wanted}
    solutions = {
        s.pk: s
        for s in Solution.objects.filter(pk__in=ids, campaign=job.campaign).select_related(
            "problem", "campaign"
        )
    }
    steps: dict[int, list[Step]] = {}
    for step in Step.objects.filter(solution_id__in=ids).order_by("solution_id", "index"):
        steps.setdefault(step.solution_id, []).append(step)
    units = []
    for solution_id, index in wanted:
        solution = solutions.get(solution_id)
        have = steps.get(solution_id, [])
        if solution is None or (index != JUDGE and index >= len(have) - 1):
            continue  # deleted, or changed, since the plan was made
        units.append(Unit(solution, index, have, job.samples_per_step))
    return units


def _ask_all(
    chat: EvidenceClient, units: list[Unit], job: EvidenceJob, writer: _UnitWriter
) -> Iterator[Unit]:
    """Units whose samples are all back, in plan order; no new request once over budget (each
    sample's tokens are counted as it comes back, before the next request may start)."""

    def requests() -> Iterator[tuple[Unit, dict[str, Any]]]:
        for unit in units:
            values = chat.judge_values(unit) if unit.index == JUDGE else chat.rollout_values(unit)
            for _ in range(unit.want):
                if writer.over_budget:
                    return
                yield unit, values

    def ask(request: tuple[Unit, dict[str, Any]]) -> tuple[Unit, Sample]:
        unit, values = request
        sample = chat.complete(Sample(unit.key, unit.solution.problem_id), values)
        return unit, writer.spend(sample)

    for unit, sample in requests_bounded(
        ask, requests(), concurrency=job.concurrency, name="evidence"
    ):
        unit.samples.append(sample)
        if len(unit.samples) == unit.want:
            yield unit


class _UnitWriter:
    """Writes each finished unit's evidence with the job's counters, in one transaction."""

    def __init__(self, job: EvidenceJob, attempt: JobAttempt, chat: EvidenceClient) -> None:
        self.job, self.attempt, self.chat = job, attempt, chat
        self.errors: list[dict] = list(job.errors or [])
        self.completed_before = job.completed
        self.completed = self.failed = self.samples = 0
        self.tally = Tally()
        self.spent = job.prompt_tokens + job.completion_tokens
        self.over_budget = bool(job.budget_tokens) and self.spent >= job.budget_tokens
        self.lock = threading.Lock()  # ``spend`` runs in the request threads

    def spend(self, sample: Sample) -> Sample:
        """Count what ``sample`` cost, as it comes back (in its request's thread)."""
        with self.lock:
            self.tally.add(sample)
            self.spent += sample.prompt_tokens + sample.completion_tokens
            if self.job.budget_tokens and self.spent >= self.job.budget_tokens:
                self.over_budget = True
        return sample

    def error(self, key: str, message: str) -> None:
        self.errors = [*self.errors, {"key": key, "message": message}][-MAX_ERRORS_KEPT:]

    def write(self, unit: Unit) -> None:
        failed = [s for s in unit.samples if s.error]
        rows = [] if failed else self._rows(unit)
        if failed:
            self.error(unit.key, failed[0].error)
        with transaction.atomic():
            for step, fields in rows:
                StepEvidence.objects.update_or_create(
                    step=step, kind=fields.pop("kind"), model=self.job.model, defaults=fields
                )
            if rows:
                self.completed += 1
                self.samples += len(unit.samples)
            else:
                self.failed += 1
            self.save()
        stage_pause("evidence.written")

    def _rows(self, unit: Unit) -> list[tuple[Step, dict[str, Any]]]:
        tokens = sum(s.prompt_tokens + s.completion_tokens for s in unit.samples)
        common = {
            "solution": unit.solution,
            "endpoint": self.job.endpoint,
            "job_ref": self.job.ref,
            "tokens": tokens,
        }
        if unit.index == JUDGE:
            text = unit.samples[0].text
            first = judge_first_error(text, len(unit.steps))
            if first is None:
                self.error(unit.key, "the judge's answer names no step in \\boxed{}")
                return []
            shown = unit.steps if first == -1 else unit.steps[: first + 1]
            return [
                (
                    step,
                    common
                    | {
                        "kind": StepEvidence.Kind.JUDGE,
                        "value": 0.0 if step.index == first else 1.0,
                        "samples": 1,
                        "correct": 0,
                        "detail": {"first_error": first},
                    },
                )
                for step in shown
            ]
        truth = unit.solution.problem.ground_truth_answer
        if not truth:
            self.error(unit.key, "the problem has no ground-truth answer to grade rollouts by")
            return []
        answers = [extract_answer(s.text) for s in unit.samples]
        rule = unit.solution.campaign.grading_rule  # as the campaign grades its solutions
        graded = Grader.shared().grade_many([(a, truth) for a in answers], rule=rule)
        correct = sum(1 for a in answers if graded[(a, truth)] is True)
        step = unit.steps[unit.index]
        return [
            (
                step,
                common
                | {
                    "kind": StepEvidence.Kind.ROLLOUT,
                    "value": correct / len(unit.samples),
                    "samples": len(unit.samples),
                    "correct": correct,
                    "detail": {"answers": answers[:MAX_SAMPLES_PER_STEP]},
                },
            )
        ]

    def why_none(self) -> str:
        """A failed job's reason when no unit came back: the last error kept."""
        last = self.errors[-1]["message"] if self.errors else "no answer"
        return f"no unit could be written ({self.failed} failed); the last error: {last}"

    def save(self, final_state: str | None = None, reason: str = "") -> None:
        """The counters: what this run did added to what earlier runs left (only while this
        attempt owns the job); ``reason``: a failed job's ``error``."""
        job = self.job
        done = self.completed_before + self.completed
        samples, self.samples = self.samples, 0
        with self.lock:
            cost = self.tally.take()
        fields: dict[str, Any] = cost | {
            "completed": done,
            "failed": self.failed,
            "samples": F("samples") + samples,
            "errors": self.errors,
            "stopped_by_budget": self.over_budget,
            "progress": min(1.0, (done + self.failed) / job.requested) if job.requested else 1.0,
        }
        if reason:
            fields["error"] = reason[:5000]
        if final_state:
            self.attempt.finish(final_state, **fields)
        else:
            self.attempt.update(**fields)


EVIDENCE_JOBS = JobKind(
    name="evidence",
    model=EvidenceJob,
    task="imports.evidence_run",
    work=_evidence_work,
    page=JobPage(
        template="machines/_evidence_job.html",
        url="machines:evidence",
        viewers=MANAGE,
        element="tr",
    ),
)
