"""The app's own cost per generated solution, the model's time left out.

    .venv/bin/python bench/generation_overhead.py [--problems 200] [-k 5] [--concurrency 4]

Runs a real generation job (``machines.generation.generation_job_run``) against a fake endpoint
that answers at once, in process (``httpx.MockTransport``), so what is measured is the app:
building requests, reading answers, splitting, writing through the import path in batches,
publishing the event, and (second run) grading. The time spent inside the fake endpoint is
measured and subtracted. Uses a fresh SQLite database in a temporary folder unless
DATABASE_URL is set (then a new campaign there, deleted afterwards). Target: under 5 ms per
solution.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

ANSWER = (
    "Sample {n}. We are asked: {problem}\n\n"
    "First we compute the sum:\n\\[{a} + {b} = {c}\\]\n"
    "Then we check it:\n\\[{c} - {b} = {a}\\]\n"
    "With a calculator note: {c} - {a} = <<{c}-{a}={b}>>{b}\n\n"
    "So the total is ${c}$, as the problem asks.\n\n"
    "# Answer\n\n{c}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("-k", type=int, default=5, help="samples per problem")
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        if "DATABASE_URL" not in os.environ:
            os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        os.environ.setdefault("STEPWISE_VAR_DIR", str(Path(tmp) / "var"))
        # The fake endpoint, declared as an operator would (its client is the mock below).
        os.environ["STEPWISE_ENDPOINTS"] = (
            '[{"name": "instant", "kind": "chat", "base_url": "http://fake.invalid/v1", '
            '"models": ["instant"], "max_concurrency": 64}]'
        )
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        return _run(args)


def _run(args) -> int:
    import json

    import httpx

    from labeling.models import Campaign, Problem
    from machines.generation import generation_job_create, generation_job_run

    model_s = [0.0]
    lock = threading.Lock()
    counter = [0]

    def instant(request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        body = json.loads(request.content)
        with lock:
            counter[0] += 1
            n = counter[0]
        a, b = n % 97, n % 89 + 1
        text = ANSWER.format(n=n, problem=body["messages"][0]["content"][-60:], a=a, b=b, c=a + b)
        response = httpx.Response(
            200,
            json={
                "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 80},
            },
        )
        with lock:
            model_s[0] += time.perf_counter() - started
        return response

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # The first run also pays for imports and warming caches: a small one, not reported.
    for grade, problems in ((True, 10), (False, args.problems), (True, args.problems)):
        campaign = Campaign.objects.create(
            slug=f"bench-gen-{int(time.time() * 1000)}", name="bench generation"
        )
        Problem.objects.bulk_create(
            Problem(
                campaign=campaign,
                text=f"Problem {i}: what is {i} plus {i + 1}?",
                ground_truth_answer=str(2 * i + 1),
                content_hash=Problem.hash_text(f"Problem {i}: what is {i} plus {i + 1}?"),
            )
            for i in range(problems)
        )
        job = generation_job_create(
            campaign=campaign,
            created_by=None,
            endpoint="instant",
            model="instant",
            samples_per_problem=args.k,
            concurrency=args.concurrency,
            grade=grade,
            enqueue=False,
        )
        model_s[0] = 0.0
        client = httpx.Client(transport=httpx.MockTransport(instant))
        started = time.perf_counter()
        job = generation_job_run(job=job, client=client)
        total = time.perf_counter() - started
        n = job.solutions_created
        assert job.status == "done" and n == problems * args.k, (job.status, n, job.errors)
        graded = campaign.solutions.exclude(answer_is_correct=None).count()
        own = total - model_s[0]
        if problems != args.problems:
            campaign.delete()
            continue
        what = "split + write + grade" if grade else "split + write (grading off)"
        print(
            f"{what}: {n:,} solutions in {total:.2f}s, of which the fake endpoint "
            f"{model_s[0]:.2f}s: app overhead {own / n * 1000:.2f} ms per solution "
            f"({graded:,} graded)"
        )
        campaign.delete()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
