"""`manage.py generate_solutions --campaign SLUG --endpoint NAME [--model M] -k K`.

See docs/generation.md. Runs the job in this process (no worker needed) and prints its counts;
``--resume JOB`` runs a stopped or failed job again, asking only for the samples it lacks;
``--endpoints`` lists the declared chat endpoints and their models.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from labeling.models import Campaign
from machines.endpoints import CHAT, endpoints_of
from machines.generation import (
    GenerationRefused,
    generation_job_create,
    generation_job_resume,
    generation_job_run,
)
from machines.models import GenerationJob


class Command(BaseCommand):
    help = "Ask an OpenAI-compatible endpoint for K solutions per problem and import them."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--campaign", help="campaign slug")
        parser.add_argument("--resume", type=int, metavar="JOB", help="run this job again")
        parser.add_argument(
            "--force",
            action="store_true",
            help="with --resume: resume a job marked running whose worker is known to be gone",
        )
        parser.add_argument("--endpoints", action="store_true", help="list the endpoints")
        parser.add_argument("--endpoint", default="", help="a declared chat endpoint's name")
        parser.add_argument("--model", default="", help="one of its models (default: its first)")
        parser.add_argument(
            "--base-url",
            default="",
            help="instead of --endpoint, a free-form URL (where STEPWISE_ENDPOINT_URLS allows it)",
        )
        parser.add_argument("-k", "--samples", type=int, default=4, help="solutions per problem")
        parser.add_argument("--selection", choices=GenerationJob.Selection.values, default="all")
        parser.add_argument("--subject", default="")
        parser.add_argument("--level", default="")
        parser.add_argument("--search", default="")
        parser.add_argument(
            "--prompt-file",
            help="prompt template with {problem} (and {answer}, {subject}, {level})",
        )
        parser.add_argument("--temperature", type=float, default=1.0)
        parser.add_argument("--top-p", type=float, default=1.0)
        parser.add_argument("--max-tokens", type=int, default=1024)
        parser.add_argument("--split", default="auto")
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument(
            "--timeout", type=float, default=None, help="seconds per request (the endpoint's)"
        )
        parser.add_argument("--max-retries", type=int, default=5)
        parser.add_argument("--generator", default="")
        parser.add_argument("--no-grade", action="store_true")
        parser.add_argument("--queue", action="store_true", help="leave it to a Celery worker")

    def handle(self, *args, campaign: str | None, **opts) -> None:
        if opts["endpoints"]:
            for e in endpoints_of(CHAT):
                self.stdout.write(f"{e.name}\t{e.label or e.name}\t{', '.join(e.models)}")
            return
        if not campaign:
            raise CommandError("give --campaign SLUG")
        target = Campaign.objects.filter(slug=campaign).first()
        if target is None:
            raise CommandError(f"no campaign {campaign!r}")
        try:
            if opts["resume"]:
                job = GenerationJob.objects.filter(campaign=target, pk=opts["resume"]).first()
                if job is None:
                    raise CommandError(f"no generation job {opts['resume']} in {campaign!r}")
                job = generation_job_resume(job=job, enqueue=opts["queue"], force=opts["force"])
            else:
                if not opts["endpoint"] and not opts["base_url"]:
                    names = ", ".join(e.name for e in endpoints_of(CHAT)) or "none declared"
                    raise CommandError(
                        f"give --endpoint NAME (the endpoints: {names}) or --resume JOB"
                    )
                template = None
                if opts["prompt_file"]:
                    with open(opts["prompt_file"]) as f:
                        template = f.read(200_000)
                job = generation_job_create(
                    campaign=target,
                    created_by=None,
                    endpoint=opts["endpoint"],
                    model=opts["model"],
                    base_url=opts["base_url"],
                    samples_per_problem=opts["samples"],
                    selection=opts["selection"],
                    problem_filter={k: opts[k] for k in ("subject", "level", "search")},
                    prompt_template=template,
                    temperature=opts["temperature"],
                    top_p=opts["top_p"],
                    max_tokens=opts["max_tokens"],
                    split=opts["split"],
                    concurrency=opts["concurrency"],
                    timeout_s=opts["timeout"],
                    max_retries=opts["max_retries"],
                    generator=opts["generator"],
                    grade=not opts["no_grade"],
                    enqueue=opts["queue"],
                )
        except GenerationRefused as e:
            raise CommandError(str(e)) from None
        if opts["queue"]:
            self.stdout.write(f"generation job {job.pk} queued")
            return
        job = generation_job_run(job=job)
        self.stdout.write(
            f"generation job {job.pk}: {job.status}; {job.completed} of {job.requested} samples, "
            f"{job.solutions_created} new solutions, {job.failed} failed, {job.retries} retries; "
            f"tokens {job.prompt_tokens} prompt + {job.completion_tokens} completion"
        )
        for error in job.errors[-5:]:
            self.stderr.write(json.dumps(error))
        if job.status == GenerationJob.Status.FAILED:
            raise CommandError(f"generation job {job.pk} failed")
