"""A PRM served elsewhere: scoring a campaign's solutions with a declared scoring endpoint.

A team that owns a strong PRM (ActPRM and PRM800K steer with 7B-scale ones) serves it and lets the
campaign steer by it. The operator declares the endpoint (``machines.endpoints``, kind ``pooling``
or ``step-scores``); a manager picks it by name on the campaign's settings
(``Campaign.al_scoring_endpoint``, ``al_scoring_model``). Scoring is one kind of job
(``SCORING_JOBS``, task ``learning.scoring_run`` on the ``learning`` queue): it reads the open
regular solutions (and the graded ones of held-out problems, which the best-of-N curve compares
methods on) in batches, asks the endpoint with bounded concurrency, retries a 429, 5xx or timeout
with backoff (``Retry-After`` honoured), and commits each request's ``ServedScore`` rows with the
job's counters in one transaction as soon as its answer is back (in the order the answers come,
not the order asked). An attempt that resumes after a killed worker skips what an earlier attempt
of the same job committed: no answer received is asked for again, only the requests that were
in flight (unanswered) when the worker died, and the job's counters (``scored``, ``requests``,
``retries``, ``seconds``) add up all its attempts.

Two protocols:

- ``pooling``: vLLM's pooling API (``vllm serve MODEL --runner pooling``). For Qwen2.5-Math-PRM
  each solution is the model's chat template with every step followed by the step token
  ``<extra_0>`` (``pooling_text``); ``POST /pooling {"model", "input": [text, ...]}`` answers
  ``{"data": [{"index": i, "data": [[p_wrong, p_right], ...]}]}``, one pair per step token; a
  step's P(correct) is the second number of its pair;
- ``step-scores``: ``POST /score {"model", "problem", "steps": [...]}`` answers
  ``{"scores": [...]}``, one P(correct) in [0, 1] per step, for any other server.

A solution's score is the product of its steps' P(correct) (``prm.metrics.solution_score``), as the
campaign's own PRM scores one.
The key goes only to its endpoint (``Endpoint.client``); no message kept or shown carries it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import httpx
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet

from common.jobs import DONE, FAILED, JobAttempt, JobKind, JobPage, job_run, stage_pause
from labeling import events
from labeling.models import Campaign, Problem, Solution, Step
from labeling.permissions import MANAGE
from machines.client import (
    RETRY_STATUSES,
    AnswerRefused,
    endpoint_error_message,
    endpoint_post,
    requests_bounded,
    retry_wait,
)
from machines.endpoints import (
    POOLING,
    STEP_SCORES,
    Endpoint,
    EndpointRefused,
    endpoint_get,
    endpoints_declared,
)
from machines.models import ScoringJob, ServedScore
from prm.metrics import solution_score

log = logging.getLogger(__name__)

SCORING_KINDS = (POOLING, STEP_SCORES)
STEP_TOKEN = "<extra_0>"  # Qwen2.5-Math-PRM's step token
QWEN_PRM_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
STEP_SCORES_PATH = "score"
METHOD = "served PRM"  # its name on the item page and in the best-of-N curve


class ScoringRefused(Exception):
    """A scoring request that cannot become a job, or an answer that cannot be used; the text
    is safe to show to a manager (it never carries the key)."""


def pooling_text(problem: str, steps: Sequence[str]) -> str:
    """One solution as Qwen2.5-Math-PRM reads it on vLLM's pooling API: its chat template
    (system, user problem, assistant steps) with every step followed by the step token. A step
    that contains the token itself has it removed, or its scores would shift."""
    body = "".join(step.replace(STEP_TOKEN, "") + STEP_TOKEN for step in steps)
    return (
        f"<|im_start|>system\n{QWEN_PRM_SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{problem}<|im_end|>\n"
        f"<|im_start|>assistant\n{body}<|im_end|>\n"
    )


def _probability(value: Any, where: str) -> float:
    if isinstance(value, list | tuple):  # a (p_wrong, p_right) pair: the second is P(correct)
        if not value:
            raise ScoringRefused(f"{where}: an empty score")
        value = value[-1]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScoringRefused(f"{where}: a score is not a number")
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ScoringRefused(f"{where}: a score is not a probability between 0 and 1")
    return value


_Key = TypeVar("_Key")


class ServedPRM:
    """Asks one scoring endpoint for the step scores of many solutions.

    ``score(items)`` sends ``items`` (``(problem, steps)``) in requests of
    ``STEPWISE_SCORING_REQUEST_SIZE`` solutions (``pooling``) or one each (``step-scores``),
    ``concurrency`` at a time, each retried up to ``retries`` times after a 429/5xx answer, a
    timeout or a lost connection; an answer of the wrong shape fails at once. ``requests`` and
    ``retries`` count what it did. ``sleep`` is injectable so tests do not wait.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        model: str,
        *,
        concurrency: int | None = None,
        retries: int | None = None,
        backoff_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if endpoint.kind not in SCORING_KINDS:
            raise ScoringRefused(f"{endpoint.name} is not a scoring endpoint")
        self.endpoint = endpoint
        self.model = model
        self.concurrency = max(
            1,
            min(concurrency or settings.STEPWISE_SCORING_MAX_CONCURRENCY, endpoint.max_concurrency),
        )
        self.max_retries = settings.STEPWISE_SCORING_RETRIES if retries is None else retries
        self.backoff_s = (
            settings.STEPWISE_SCORING_BACKOFF_MS / 1000 if backoff_s is None else backoff_s
        )
        self.sleep = sleep
        self.http = endpoint.client(max_connections=self.concurrency)
        self.requests = 0
        self.retries = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> ServedPRM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def score(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[list[float]]:
        """Each solution's P(correct) per step, in order (``[]`` for one without steps, which
        is not sent); ``ScoringRefused`` with the reason when the endpoint does not answer."""
        out: list[list[float]] = [[] for _ in items]
        for indexes, scores in self.answered(self.requests_of(list(range(len(items))), items)):
            for i, s in zip(indexes, scores, strict=True):
                out[i] = s
        return out

    def requests_of(
        self, keys: Sequence[_Key], items: Sequence[tuple[str, Sequence[str]]]
    ) -> list[tuple[list[_Key], list[tuple[str, Sequence[str]]]]]:
        """``items`` (each named by its key) as the requests that send them: for ``pooling``
        ``STEPWISE_SCORING_REQUEST_SIZE`` solutions a request, for ``step-scores`` one; the
        solutions without steps together, answered here (``[]``) without a request."""
        with_steps = [(k, item) for k, item in zip(keys, items, strict=True) if item[1]]
        empty = [(k, item) for k, item in zip(keys, items, strict=True) if not item[1]]
        size = (
            max(1, settings.STEPWISE_SCORING_REQUEST_SIZE) if self.endpoint.kind == POOLING else 1
        )
        groups = [with_steps[k : k + size] for k in range(0, len(with_steps), size)]
        return [([k for k, _ in g], [item for _, item in g]) for g in [empty, *groups] if g]

    def answered(
        self, requests: Iterable[tuple[list[_Key], list[tuple[str, Sequence[str]]]]]
    ) -> Iterator[tuple[list[_Key], list[list[float]]]]:
        """Each request's keys and scores as soon as its answer is back (not in the order
        asked: a caller keeps each answer at once, so none it received is lost while a slower
        one is awaited); ``concurrency`` at a time, read lazily. ``ScoringRefused`` after the
        answers of the requests that ran beside the failed one."""
        ask = self._pooling if self.endpoint.kind == POOLING else self._step_scores

        def one(
            request: tuple[list[_Key], list[tuple[str, Sequence[str]]]],
        ) -> tuple[list[_Key], list[list[float]]]:
            keys, items = request
            if not any(steps for _, steps in items):
                return keys, [[] for _ in items]
            return keys, ask(items)

        return requests_bounded(
            one, requests, concurrency=self.concurrency, name="scoring", ordered=False
        )

    def _pooling(self, items: list[tuple[str, Sequence[str]]]) -> list[list[float]]:
        body = {"model": self.model, "input": [pooling_text(p, s) for p, s in items]}
        data = self._post("pooling", body)
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list) or len(rows) != len(items):
            raise ScoringRefused(
                f"{self.endpoint.name}'s answer is not vLLM's pooling output for "
                f"{len(items)} inputs"
            )
        by_index = {}
        for k, row in enumerate(rows):
            index = row.get("index", k) if isinstance(row, dict) else k
            by_index[index] = row.get("data") if isinstance(row, dict) else None
        out = []
        for k, (_, steps) in enumerate(items):
            pairs = by_index.get(k)
            where = f"{self.endpoint.name}, input {k}"
            if not isinstance(pairs, list) or len(pairs) != len(steps):
                got = len(pairs) if isinstance(pairs, list) else "no"
                raise ScoringRefused(
                    f"{where}: {got} scores for {len(steps)} steps (is the model a process "
                    f"reward model whose step token is {STEP_TOKEN}?)"
                )
            out.append([_probability(p, where) for p in pairs])
        return out

    def _step_scores(self, items: list[tuple[str, Sequence[str]]]) -> list[list[float]]:
        ((problem, steps),) = items
        data = self._post(
            STEP_SCORES_PATH, {"model": self.model, "problem": problem, "steps": list(steps)}
        )
        scores = data.get("scores") if isinstance(data, dict) else None
        where = f"{self.endpoint.name}"
        if not isinstance(scores, list) or len(scores) != len(steps):
            got = len(scores) if isinstance(scores, list) else "no"
            raise ScoringRefused(f"{where}: {got} scores for {len(steps)} steps")
        return [[_probability(s, where) for s in scores]]

    def _post(self, path: str, body: dict) -> Any:
        """POST through ``endpoint_post`` (the answer bounded in size, time and nesting),
        retried as every endpoint client retries; the server's own words of a refusal kept."""
        url = self.endpoint.url(path)
        seconds = self.endpoint.timeout_s
        error = ""
        for attempt in range(self.max_retries + 1):
            asked_s = None
            with self._lock:
                self.requests += 1
            try:
                answer = endpoint_post(self.http, self.endpoint, url, body, seconds=seconds)
            except EndpointRefused as e:
                raise ScoringRefused(str(e)) from None
            except AnswerRefused as e:  # the same server would answer the same
                raise ScoringRefused(endpoint_error_message(self.endpoint, e)) from None
            except httpx.HTTPError as e:
                error = endpoint_error_message(self.endpoint, e, seconds=seconds)
            else:
                if answer.ok:
                    return answer.data
                error = answer.refusal(self.endpoint)
                if answer.status not in RETRY_STATUSES:
                    break
                asked_s = answer.retry_after_s
            if attempt == self.max_retries:
                break
            with self._lock:
                self.retries += 1
            self.sleep(retry_wait(attempt, backoff_s=self.backoff_s, asked_s=asked_s))
        tries = self.max_retries + 1
        raise ScoringRefused(self.endpoint.scrub(f"{error} (after {tries} tries)"))


# --- which endpoint ---------------------------------------------------------------------------


def scoring_endpoints() -> list[Endpoint]:
    """Every declared scoring endpoint (either kind), in the order declared."""
    return [e for e in endpoints_declared().values() if e.kind in SCORING_KINDS]


def scoring_endpoint_choices() -> list[tuple[str, str]]:
    """``(name, title)`` of every declared scoring endpoint, for the settings form."""
    return [(e.name, e.title) for e in scoring_endpoints()]


def scoring_endpoint(name: str) -> Endpoint:
    """The declared scoring endpoint ``name`` (either kind); refused with the names there are."""
    endpoint = endpoints_declared().get((name or "").strip())
    if endpoint is None or endpoint.kind not in SCORING_KINDS:
        try:  # the same words as every other lookup of an endpoint
            endpoint_get(name, kind=POOLING)
        except EndpointRefused as e:
            names = ", ".join(n for n, _ in scoring_endpoint_choices()) or "none"
            raise ScoringRefused(f"{e} Scoring endpoints: {names}.") from None
    return endpoint


def campaign_scoring(campaign: Campaign) -> tuple[Endpoint, str] | None:
    """The campaign's served PRM (endpoint, model), or None when it has none chosen."""
    if not campaign.al_scoring_endpoint:
        return None
    endpoint = scoring_endpoint(campaign.al_scoring_endpoint)
    try:
        return endpoint, endpoint.model(campaign.al_scoring_model)
    except EndpointRefused as e:
        raise ScoringRefused(str(e)) from None


# --- the job ------------------------------------------------------------------------------------


def scoring_job_start(
    *,
    campaign: Campaign,
    requested_by: AbstractBaseUser | None = None,
    only_new: bool = False,
) -> ScoringJob:
    """Queue a scoring job with the campaign's served PRM, or return the one already queued or
    running (a partial unique constraint keeps one per campaign). ``only_new``: only the
    solutions it has not scored (after an import); else every one (a manager's "Score"). Refused
    when the campaign has no scoring endpoint chosen, or it is no longer declared."""
    chosen = campaign_scoring(campaign)
    if chosen is None:
        raise ScoringRefused("Choose a scoring endpoint on the campaign's settings first.")
    endpoint, model = chosen
    active = ScoringJob.objects.filter(
        campaign=campaign, status__in=[ScoringJob.Status.PENDING, ScoringJob.Status.RUNNING]
    )
    if existing := active.first():
        return existing
    try:
        with transaction.atomic():
            job = ScoringJob.objects.create(
                campaign=campaign,
                endpoint=endpoint.name,
                model=model,
                requested_by=requested_by,
                only_new=only_new,
            )
    except IntegrityError:
        if existing := active.first():
            return existing
        raise
    SCORING_JOBS.send(job.pk)
    return job


def scoring_job_run(*, job: ScoringJob) -> ScoringJob:
    """Run a scoring job in this process, as its Celery task does (``common.jobs.job_run``)."""
    return job_run(SCORING_JOBS, job) or job


def _to_score(campaign: Campaign) -> list[int]:
    """The solutions a job scores, in id order: the open regular ones (the queue) and the graded
    regular ones of held-out problems (what the best-of-N curve compares methods on)."""
    from prm.data import split_of

    ids = set(
        Solution.objects.filter(
            campaign=campaign, kind=Solution.Kind.REGULAR, is_open=True
        ).values_list("pk", flat=True)
    )
    test_problems = [
        pk
        for pk, text in Problem.objects.filter(campaign=campaign).values_list("pk", "text")
        if split_of(text) == "test"
    ]
    for start in range(0, len(test_problems), 5000):
        ids.update(
            Solution.objects.filter(
                campaign=campaign,
                kind=Solution.Kind.REGULAR,
                answer_is_correct__isnull=False,
                problem_id__in=test_problems[start : start + 5000],
            ).values_list("pk", flat=True)
        )
    return sorted(ids)


def _texts(ids: Sequence[int]) -> list[tuple[str, list[str]]]:
    rows = dict(Solution.objects.filter(pk__in=ids).values_list("pk", "problem__text").order_by())
    steps: dict[int, list[str]] = {pk: [] for pk in ids}
    for sid, text in (
        Step.objects.filter(solution_id__in=ids)
        .order_by("solution_id", "index")
        .values_list("solution_id", "text")
    ):
        steps[sid].append(text)
    return [(rows[pk], steps[pk]) for pk in ids]


def scoring_work(job: ScoringJob, attempt: JobAttempt) -> None:
    """Score the campaign's solutions (``only_new``: those the served PRM has not scored) in
    batches, each committed with the job's progress. A failed request fails the job with the
    reason (no key in it); a later job, or the sweep's next attempt, carries on from there."""
    started = time.perf_counter()
    try:
        endpoint = scoring_endpoint(job.endpoint)
        model = endpoint.model(job.model)
    except (ScoringRefused, EndpointRefused) as e:
        attempt.fail(f"{e} Nothing was asked.", job)
        return
    # A job for an import's new solutions asks only for those no other job stored; an attempt
    # that resumes skips what an earlier attempt of this job committed.
    stored = ServedScore.objects.filter(campaign=job.campaign, endpoint=endpoint.name, model=model)
    ids = _to_score(job.campaign)
    if job.only_new:
        others = set(stored.exclude(job=job).values_list("solution_id", flat=True))
        ids = [pk for pk in ids if pk not in others]
    done = set(stored.filter(job=job).values_list("solution_id", flat=True))
    todo = [pk for pk in ids if pk not in done]
    attempt.update(total=len(ids), scored=len(done & set(ids)))
    batch_size = max(1, settings.STEPWISE_SCORING_BATCH)
    earlier_s = job.seconds or 0.0  # the earlier attempts' time: the counters cover them all

    with ServedPRM(endpoint, model) as served:

        def requests() -> Iterator[tuple[list[int], list[tuple[str, Sequence[str]]]]]:
            for start in range(0, len(todo), batch_size):  # texts read a batch at a time
                batch = todo[start : start + batch_size]
                yield from served.requests_of(batch, _texts(batch))

        counted = [0, 0]  # requests and retries already added to the job's counters
        try:
            for sids, scores in served.answered(requests()):
                requests_now, retries_now = served.requests, served.retries
                rows = [
                    ServedScore(
                        campaign_id=job.campaign_id,
                        solution_id=sid,
                        endpoint=endpoint.name,
                        model=model,
                        job=job,
                        step_scores=[round(p, 6) for p in probs],
                        score=solution_score(probs),  # as the campaign's own PRM scores
                    )
                    for sid, probs in zip(sids, scores, strict=True)
                ]
                # Each answer is committed as soon as it is back: a worker killed now loses
                # only the requests still in flight, whose answers never came.
                with transaction.atomic():
                    attempt.lock()
                    ServedScore.objects.filter(
                        solution_id__in=sids, endpoint=endpoint.name, model=model
                    ).delete()
                    ServedScore.objects.bulk_create(rows)
                    attempt.update(
                        scored=F("scored") + len(sids),
                        requests=F("requests") + (requests_now - counted[0]),
                        retries=F("retries") + (retries_now - counted[1]),
                        seconds=round(earlier_s + time.perf_counter() - started, 3),
                    )
                counted = [requests_now, retries_now]
                stage_pause("scoring.batch")
        except ScoringRefused as e:
            attempt.finish(
                FAILED,
                error=str(e)[:5000],
                requests=F("requests") + (served.requests - counted[0]),
                retries=F("retries") + (served.retries - counted[1]),
                seconds=round(earlier_s + time.perf_counter() - started, 3),
            )
            return
    attempt.finish(DONE, seconds=round(earlier_s + time.perf_counter() - started, 3))
    _after_scoring(job)


def _after_scoring(job: ScoringJob) -> None:
    """Tell the apps above that new scores are stored: a campaign that steers by the served PRM
    reorders its queue with them (``learning`` subscribes: an active-learning run)."""
    events.publish(events.served_scores_stored, campaign_id=job.campaign_id)


SCORING_JOBS = JobKind(
    name="scoring",
    model=ScoringJob,
    task="learning.scoring_run",
    work=scoring_work,
    page=JobPage(
        template="machines/_scoring_job.html",
        url="learning:page",
        viewers=MANAGE,
        css_class="snapshot-info",
        reload_when_done=True,
    ),
)


# --- reading the scores ---------------------------------------------------------------------------


def served_scores(*, campaign: Campaign) -> QuerySet[ServedScore]:
    """The stored scores of the campaign's served PRM (its chosen endpoint and model), one row
    per solution it scored: the one read of them, for the run's order (``score``), the best-of-N
    curve, the machines' disagreement and the item page (``step_scores``). None when the campaign
    has no served PRM chosen or it is no longer declared."""
    try:
        chosen = campaign_scoring(campaign)
    except ScoringRefused:
        chosen = None
    if chosen is None:
        return ServedScore.objects.none()
    endpoint, model = chosen
    return ServedScore.objects.filter(campaign=campaign, endpoint=endpoint.name, model=model)


def served_step_scores(*, campaign_id: int, solution_id: int) -> list[float] | None:
    """The served PRM's P(correct) of each step of one solution, for the item page (registered
    with ``labeling.scores``); None when it has not scored it."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None or not campaign.al_scoring_endpoint:
        return None
    row = (
        served_scores(campaign=campaign)
        .filter(solution_id=solution_id)
        .values_list("step_scores", flat=True)
        .first()
    )
    return None if row is None else [float(p) for p in row]
