"""Fresh solutions from an OpenAI-compatible endpoint (vLLM, ``transformers serve``, a hosted API).

``generation_job_create`` checks what a manager asked for and queues it; a Celery worker (the job
kind ``GENERATION_JOBS``, ``common.jobs``) or ``manage.py generate_solutions``
(``generation_job_run``) runs it: it asks the endpoint for every sample of the job's plan that the
campaign does not have yet, ``concurrency`` requests at a time, and writes the answers in batches
through the import path (``pipeline.import_solutions``: split into steps, deduplicated, graded,
queued), publishing ``labeling.events.solutions_imported`` after each batch so the active PRM
scores them. Each sample the endpoint answered is kept as it arrives (``ReceivedSample``), before
its batch is imported. A job stopped half way keeps its finished batches and the samples it had
received; run again (by the jobs' sweep when its worker died, or resumed by a person), it imports
those and asks only for the sample keys no attempt received.

Security: a job names an endpoint the operator declared (``machines.endpoints``); its URL and the
environment variable of its key are the operator's, so a manager can neither point the worker at
a host of their choice nor send a key anywhere but to its endpoint. A free-form URL exists only
where the operator allows them, to listed hosts checked after resolution, and never with a key.
The key is never stored, and scrubbed from every message kept; the worker only ever POSTs JSON
to ``<base_url>/chat/completions``. The prompt template is data (``machines.prompts``) and a
split pattern runs on RE2 (``imports.splitting``): no request can make the worker allocate or
loop without bound.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Q

from common.job_recovery import job_is_silent, job_retry
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
from imports.records import ProblemIn, SolutionIn
from imports.splitting import SplitError, check_mode, split
from labeling import events
from labeling.grading import extract_answer
from labeling.models import Campaign, Problem, Solution
from labeling.permissions import MANAGE
from machines.chat import (
    ChatClient,
    GenerationRefused,
    Sample,
    Tally,
    endpoint_choose,
    job_endpoint,
)
from machines.client import requests_bounded
from machines.endpoints import EndpointRefused
from machines.models import GenerationJob, ReceivedSample
from machines.prompts import TemplateError, template_check

log = logging.getLogger(__name__)

SOURCE = "generation"
BATCH = 25  # samples written per transaction
MAX_ERRORS_KEPT = 20
MAX_SAMPLES = 1000


def check_template(template: str) -> str:
    """``template`` if it can be used (``machines.prompts``), else refused naming the problem."""
    try:
        return template_check(template)
    except TemplateError as e:
        raise GenerationRefused(str(e), field="prompt_template") from None


def default_template(campaign: Campaign) -> str:
    """The campaign's prompt: the one its last generation used, else PRM800K's."""
    last = GenerationJob.objects.filter(campaign=campaign).order_by("-created_at", "-id").first()
    return (
        last.prompt_template
        if last
        else GenerationJob._meta.get_field("prompt_template").get_default()
    )


# --- creating a job ----------------------------------------------------------------------------


def generation_job_create(
    *,
    campaign: Campaign,
    created_by: AbstractBaseUser | None,
    endpoint: str = "",
    model: str = "",
    base_url: str = "",
    samples_per_problem: int = 4,
    selection: str = GenerationJob.Selection.ALL,
    problem_filter: dict | None = None,
    prompt_template: str | None = None,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_tokens: int = 1024,
    split: str = "auto",
    concurrency: int = 4,
    timeout_s: float | None = None,
    max_retries: int = 5,
    generator: str = "",
    grade: bool = True,
    enqueue: bool = True,
) -> GenerationJob:
    """Check a generation request and queue it (``enqueue=False``: the caller runs it).

    ``endpoint`` names a declared chat endpoint and ``model`` one of its models (blank: its
    first); ``base_url`` is a free-form URL instead, where the operator allows them.
    ``timeout_s`` defaults to the endpoint's, and neither it nor ``concurrency`` may pass the
    endpoint's bounds.
    """
    chosen = endpoint_choose(endpoint=endpoint, base_url=base_url)
    try:
        model = chosen.model(model)
    except EndpointRefused as e:
        raise GenerationRefused(str(e), field="model") from None
    if not 1 <= samples_per_problem <= MAX_SAMPLES:
        raise GenerationRefused(
            f"Ask for 1 to {MAX_SAMPLES} samples per problem.", field="samples_per_problem"
        )
    if selection not in GenerationJob.Selection.values:
        raise GenerationRefused(
            f"selection must be one of {', '.join(GenerationJob.Selection)}.", field="selection"
        )
    if not 0 <= temperature <= 2 or not 0 < top_p <= 1:
        raise GenerationRefused("temperature must be in [0, 2] and top_p in (0, 1].")
    if not 1 <= max_tokens <= 131072:
        raise GenerationRefused("max_tokens must be between 1 and 131072.", field="max_tokens")
    limit = min(settings.STEPWISE_GENERATION_MAX_CONCURRENCY, chosen.max_concurrency)
    if not 1 <= concurrency <= limit:
        raise GenerationRefused(f"concurrency must be between 1 and {limit}.", field="concurrency")
    timeout_s = chosen.timeout_s if timeout_s is None else timeout_s
    if not 1 <= timeout_s <= chosen.timeout_s:
        raise GenerationRefused(
            f"timeout_s must be 1-{chosen.timeout_s:g} s for this endpoint.", field="timeout_s"
        )
    if not 0 <= max_retries <= 20:
        raise GenerationRefused("max_retries must be 0-20.", field="max_retries")
    try:
        split = check_mode(split)
    except SplitError as e:
        raise GenerationRefused(str(e), field="split") from None
    problem_filter = _check_filter(problem_filter or {}, selection)
    job = GenerationJob(
        campaign=campaign,
        created_by=created_by,
        endpoint=chosen.name,
        base_url="" if chosen.declared else chosen.base_url,
        model=model,
        generator=(generator or "").strip()[:200],
        samples_per_problem=samples_per_problem,
        selection=selection,
        problem_filter=problem_filter,
        prompt_template=check_template(prompt_template or default_template(campaign)),
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        split=split,
        concurrency=concurrency,
        timeout_s=timeout_s,
        max_retries=max_retries,
        grade=grade,
    )
    with transaction.atomic():
        job.save()
        if enqueue:
            GENERATION_JOBS.send(job.pk)
    return job


def _check_filter(value: dict, selection: str) -> dict:
    if not isinstance(value, dict):
        raise GenerationRefused(
            "The problem filter is an object {subject, level, search}.", field="problem_filter"
        )
    unknown = set(value) - {"subject", "level", "search"}
    if unknown:
        raise GenerationRefused(
            f"Unknown filter keys: {', '.join(sorted(unknown))}.", field="problem_filter"
        )
    clean = {k: str(v).strip()[:200] for k, v in value.items() if str(v or "").strip()}
    if selection == GenerationJob.Selection.FILTER and not clean:
        raise GenerationRefused("Give a subject, level or search text for the filter.")
    return clean


def generation_job_resume(
    *, job: GenerationJob, enqueue: bool = True, force: bool = False
) -> GenerationJob:
    """Queue a job again (finished with samples missing, or failed): it asks only for what is
    missing. A person's resume starts its attempts afresh (``common.job_recovery.job_retry``, the
    one way back to waiting, which the admin's "Retry" takes too).

    A job whose worker died needs no resume: the jobs' sweep sends it again (``common.jobs``).
    One that is running with a live heartbeat (by the sweep's own rule) is refused, unless
    ``force`` (the caller knows its worker is gone: ``generate_solutions --resume --force``).
    """
    job.refresh_from_db()
    if job.status == GenerationJob.Status.PENDING:
        raise GenerationRefused("The job is already waiting for a worker.")
    running = job.status == GenerationJob.Status.RUNNING
    if running and not force and not job_is_silent(GENERATION_JOBS, job):
        raise GenerationRefused("The job is running; resume it once it has stopped.")
    if not job_retry(
        GENERATION_JOBS, job.pk, finished=(DONE, FAILED), running=running, send=enqueue
    ):
        raise GenerationRefused("The job changed in the meantime; look again.")
    job.refresh_from_db()
    return job


# --- the plan: which problems, how many samples --------------------------------------------------


def _selected_problems(job: GenerationJob):
    problems = Problem.objects.filter(campaign=job.campaign)
    f = job.problem_filter or {}
    if job.selection == GenerationJob.Selection.FILTER:
        if f.get("subject"):
            problems = problems.filter(subject__iexact=f["subject"])
        if f.get("level"):
            problems = problems.filter(level=str(f["level"]).removeprefix("Level ").strip())
        if f.get("search"):
            problems = problems.filter(text__icontains=f["search"])
    return problems.order_by("pk")


def make_plan(job: GenerationJob) -> list[list[int]]:
    """[[problem id, samples wanted], ...], fixed the first time the job runs."""
    k = job.samples_per_problem
    problems = _selected_problems(job)
    if job.selection != GenerationJob.Selection.FEWER_THAN_K:
        return [[pk, k] for pk in problems.values_list("pk", flat=True)]
    counted = problems.annotate(
        open_count=Count(
            "solutions",
            filter=Q(solutions__is_open=True, solutions__kind=Solution.Kind.REGULAR),
        )
    )
    return [[pk, k - n] for pk, n in counted.values_list("pk", "open_count") if n < k]


# --- running -----------------------------------------------------------------------------------


def generation_job_run(
    *,
    job: GenerationJob,
    client: httpx.Client | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> GenerationJob:
    """Run a generation job in this process (the command; its Celery task does the same through
    ``common.jobs.job_run``). A job that is finished, or taken by a live worker, is returned as
    it is."""
    return job_run(GENERATION_JOBS, job, client=client, sleep=sleep) or job


def _generation_work(
    job: GenerationJob,
    attempt: JobAttempt,
    client: httpx.Client | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Fix the job's plan on its first run, skip the sample keys the campaign has, and write the
    rest in batches of ``BATCH``. Ends ``done``, or ``failed`` when no sample came back at all.

    The job's own failures are recorded here, not by ``job_run``: every message kept is scrubbed
    of the API key first (``ChatClient.scrub``).
    """
    if not job.plan:
        job.plan = make_plan(job)
        job.requested = sum(n for _, n in job.plan)
        attempt.update(plan=job.plan, requested=job.requested)
    try:
        endpoint = job_endpoint(job)
        if endpoint.key_env and not endpoint.key():
            raise GenerationRefused(
                f"the worker's environment has no {endpoint.key_env} (the key of endpoint "
                f"{endpoint.name!r}): nothing was asked"
            )
        chat = ChatClient(job, endpoint, client=client, sleep=sleep)
    except (GenerationRefused, TemplateError) as refused:
        message = str(refused)
        attempt.finish(
            FAILED,
            errors=[*job.errors, {"key": "", "message": message}][-MAX_ERRORS_KEPT:],
            error=message[:5000],
        )
        return
    received = _received_unwritten(job)
    todo = _missing(job)
    writer = _BatchWriter(job, attempt)
    try:
        for sample in received:  # an earlier attempt's, whose batch it did not write
            writer.add(sample, keep=False)
        for sample in _complete_all(chat, todo, job.concurrency):
            writer.add(sample)
        writer.flush()
    except JobSuperseded:
        raise
    except Exception as error:
        log.exception("generation job %s failed", job.pk)
        writer.errors.append({"key": "", "message": chat.scrub(type(error).__name__)})
        writer.flush(final_state=FAILED)
    else:
        ok = writer.done_before + writer.completed > 0 or not todo
        writer.flush(final_state=DONE if ok else FAILED)
    finally:
        chat.close()


def _received_unwritten(job: GenerationJob) -> list[Sample]:
    """The samples an earlier attempt received and kept but did not import (it stopped before
    their batch was written), in plan order: imported now, not asked again."""
    rows = ReceivedSample.objects.filter(job=job, written=False).order_by("pk")
    return [
        Sample(
            key=row.key,
            problem_id=row.problem_id,
            text=row.text,
            finish_reason=row.finish_reason,
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            retries=row.retries,
        )
        for row in rows
    ]


def _missing(job: GenerationJob) -> list[tuple[str, Problem]]:
    """The samples of the plan whose keys the campaign does not have and that no attempt of
    the job received (a received sample that became no solution, a duplicate, is not asked
    again), in plan order."""
    have = set(
        Solution.objects.filter(
            campaign=job.campaign, source=SOURCE, source_ref__startswith=f"g{job.pk}:"
        ).values_list("source_ref", flat=True)
    )
    have.update(ReceivedSample.objects.filter(job=job).values_list("key", flat=True))
    wanted = {pk for pk, _ in job.plan}
    problems = {p.pk: p for p in Problem.objects.filter(campaign=job.campaign, pk__in=wanted)}
    todo = []
    for pk, n in job.plan:
        problem = problems.get(pk)
        if problem is None:
            continue  # deleted since the plan was made
        for i in range(n):
            key = job.sample_key(pk, i)
            if key not in have:
                todo.append((key, problem))
    return todo


def _complete_all(
    chat: ChatClient, todo: list[tuple[str, Problem]], concurrency: int
) -> Iterator[Sample]:
    """Completed samples in plan order, at most ``concurrency`` requests in flight."""
    return requests_bounded(
        lambda item: chat.complete(
            Sample(key=item[0], problem_id=item[1].pk), prompt_values(item[1])
        ),
        todo,
        concurrency=concurrency,
        name="generate",
    )


def prompt_values(problem: Problem) -> dict[str, str]:
    """The fields a prompt template may name (``machines.prompts.FIELDS``) for one problem."""
    return {
        "problem": problem.text,
        "answer": problem.ground_truth_answer,
        "subject": problem.subject,
        "level": str(problem.level or ""),
    }


class _BatchWriter:
    """Collects completed samples and writes them through the import path, ``BATCH`` at a time."""

    def __init__(self, job: GenerationJob, attempt: JobAttempt) -> None:
        self.job, self.attempt = job, attempt
        self.pending: list[Sample] = []
        self.errors: list[dict] = list(job.errors or [])
        self.done_before = job.completed
        self.completed = self.failed = self.created = 0
        self.tally = Tally()
        self.problems: dict[int, ProblemIn] = {}

    def add(self, sample: Sample, *, keep: bool = True) -> None:
        """Take one sample for the next batch; one the endpoint answered is kept at once
        (``ReceivedSample``), so a job stopped before the batch is written does not ask for it
        again (``keep=False``: it is an earlier attempt's, kept already)."""
        if keep and not sample.error:
            ReceivedSample.objects.bulk_create(
                [
                    ReceivedSample(
                        job_id=self.job.pk,
                        key=sample.key,
                        problem_id=sample.problem_id,
                        text=sample.text,
                        finish_reason=sample.finish_reason,
                        prompt_tokens=sample.prompt_tokens,
                        completion_tokens=sample.completion_tokens,
                        retries=sample.retries,
                    )
                ],
                ignore_conflicts=True,
            )
        self.pending.append(sample)
        if len(self.pending) >= BATCH:
            self.flush()

    def _problem(self, pk: int) -> ProblemIn:
        if pk not in self.problems:
            p = Problem.objects.get(pk=pk)
            self.problems[pk] = ProblemIn(
                text=p.text,
                ground_truth_answer=p.ground_truth_answer,
                ground_truth_solution=p.ground_truth_solution,
                subject=p.subject,
                level=p.level,
                unique_id=p.unique_id,
            )
        return self.problems[pk]

    def solution(self, sample: Sample) -> SolutionIn | None:
        """The sample as an import record, or None (with an error kept) if it cannot be one."""
        if sample.error:
            self._error(sample.key, sample.error)
            return None
        try:
            steps = split(sample.text, self.job.split)
        except SplitError as e:
            self._error(sample.key, str(e))
            return None
        if not steps:
            self._error(sample.key, "the completion is empty")
            return None
        shown = [s.text for s in steps]
        raws = [s.raw for s in steps]
        return SolutionIn(
            problem=self._problem(sample.problem_id),
            steps=shown,
            raw_steps=raws if raws != shown else None,
            answer=extract_answer(sample.text),
            generator=self.job.generator_name[:200],
            source_ref=sample.key,
            key=sample.key,
        )

    def _error(self, key: str, message: str) -> None:
        self.errors = [*self.errors, {"key": key, "message": message}][-MAX_ERRORS_KEPT:]

    def flush(self, final_state: str | None = None) -> None:
        from imports.pipeline import import_solutions

        batch, self.pending = self.pending, []
        records = []
        for sample in batch:
            self.tally.add(sample)
            record = self.solution(sample)
            if record is None:
                self.failed += 1
            else:
                self.completed += 1
                records.append(record)
        # The batch and the counters that count it commit together, only while this attempt
        # owns the job: a worker killed in between leaves neither, and a resumed job asks again.
        with transaction.atomic():
            created = 0
            if records:
                _, ids = import_solutions(
                    records, campaign=self.job.campaign, source=SOURCE, grade=self.job.grade
                )
                created = len(ids)
            kept = [s.key for s in batch if not s.error]
            if kept:
                ReceivedSample.objects.filter(job_id=self.job.pk, key__in=kept).update(written=True)
            self._save(created, final_state)
        self.created += created
        if created:
            events.publish(
                events.solutions_imported,
                campaign_id=self.job.campaign_id,
                solutions_created=created,
                labels_created=0,
            )
        stage_pause("generation.written")

    def _save(self, created: int, final_state: str | None) -> None:
        """Counters on the row: totals of this run added to what earlier runs left (only while
        this attempt owns the job: ``JobSuperseded`` stops a worker that lost it)."""
        job = self.job
        done = self.done_before + self.completed
        fields: dict[str, Any] = self.tally.take() | {
            "completed": done,
            "failed": self.failed,
            "solutions_created": F("solutions_created") + created,
            "errors": self.errors,
            "progress": min(1.0, (done + self.failed) / job.requested) if job.requested else 1.0,
        }
        if final_state == FAILED:
            last = self.errors[-1]["message"] if self.errors else "no answer"
            fields["error"] = f"no sample could be written; the last error: {last}"[:5000]
        if final_state:
            self.attempt.finish(final_state, **fields)
        else:
            self.attempt.update(**fields)


GENERATION_JOBS = JobKind(
    name="generation",
    model=GenerationJob,
    task="imports.generation_run",
    work=_generation_work,
    page=JobPage(
        template="machines/_generation_job.html",
        url="machines:generations",
        viewers=MANAGE,
        element="tr",
    ),
)
