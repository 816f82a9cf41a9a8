"""The app's own cost per rollout (machine evidence), the model's time left out; tokens per step.

    .venv/bin/python bench/evidence_overhead.py [-k 8] [--concurrency 4] [--solutions 0]

Loads the demo (``manage.py seed_demo``: real GSM8K, MATH and PRM800K solutions) into a fresh
SQLite database in a temporary folder, declares a local scripted OpenAI-compatible server (a real
HTTP server in a process of its own, answering at once) and runs a real rollout job
(``machines.evidence.evidence_job_run``) over ``--solutions`` of the demo's solutions: the app
builds each step's prefix in the campaign's prompt format, sends it, reads the answer, grades it
and writes the step's value. The time spent inside the server's handler is measured and
subtracted, so what is left is the app (request building, HTTP on loopback, grading, writing).

The scripted completion is the rest of the solution the prefix came from (a rollout is about as
long as what follows the step), ending in the right answer with probability 0.7. The server
reports usage as characters / 4 (no LLM tokenizer is installed here); the characters are printed
too, so that a real tokenizer's ratio can be applied. Prints the tokens a PRM800K-sized rollout
campaign would cost from the per-step figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

CHARS_PER_TOKEN = 4
REACH = 0.7
# PRM800K (Lightman et al., "Let's Verify Step by Step"): 800,000 step-level labels on 75,000
# solutions to 12,000 problems, so about 11 steps a solution.
PRM800K_SOLUTIONS = 75_000
PRM800K_STEPS = 800_000


class Scripted:
    """What the server answers: the rest of the solution after the prefix, with its answer right
    with probability ``REACH`` (seeded), and the time its handler took."""

    def __init__(self, rests: dict[str, tuple[str, str]]) -> None:
        self.rests = rests
        self.lock = threading.Lock()
        self.handler_s = 0.0
        self.random = random.Random(0)
        self.prompt_chars: list[int] = []
        self.completion_chars: list[int] = []

    def report(self) -> dict:
        with self.lock:
            return {
                "handler_s": self.handler_s,
                "prompt_chars": statistics.fmean(self.prompt_chars or [0]),
                "completion_chars": statistics.fmean(self.completion_chars or [0]),
            }

    def answer(self, body: dict) -> dict:
        messages = body["messages"]
        prefix = messages[-1]["content"].rstrip()
        rest, truth = self.rests.get(prefix, ("", "0"))
        with self.lock:
            right = self.random.random() < REACH
        text = f"{rest}\n\n# Answer\n\n{truth if right else truth + ' + 1'}".lstrip()
        prompt = sum(len(m["content"]) for m in messages)
        with self.lock:
            self.prompt_chars.append(prompt)
            self.completion_chars.append(len(text))
        return {
            "choices": [
                {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt // CHARS_PER_TOKEN,
                "completion_tokens": len(text) // CHARS_PER_TOKEN,
            },
        }


def serve(script: Scripted, port: int, reports) -> None:
    """The server, in its own process (so that its time is not the app's GIL's): any GET
    answers the handler's figures so far, which the parent reads at the end."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            reports.put(script.report())
            self.send_response(204)
            self.end_headers()

        def do_POST(self) -> None:
            started = time.perf_counter()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            data = json.dumps(script.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with script.lock:
                script.handler_s += time.perf_counter() - started

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", type=int, default=8, help="rollouts per step")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--solutions", type=int, default=0, help="demo solutions rolled out (0: all)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        os.environ.setdefault("STEPWISE_VAR_DIR", str(Path(tmp) / "var"))
        port = free_port()
        os.environ["STEPWISE_ENDPOINTS"] = json.dumps(
            [
                {
                    "name": "scripted",
                    "kind": "chat",
                    "base_url": f"http://127.0.0.1:{port}/v1",
                    "models": ["scripted"],
                    "max_concurrency": 64,
                }
            ]
        )
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("seed_demo", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
        return _run(args, port)


def _run(args, port: int) -> int:
    import httpx

    from labeling.models import Campaign, StepEvidence
    from machines.evidence import evidence_job_create, evidence_job_run

    campaign = Campaign.objects.get(slug="demo")
    solutions = list(
        campaign.solutions.select_related("problem").prefetch_related("steps").order_by("pk")
    )[: args.solutions or None]
    script = Scripted({})
    steps_total = 0
    for solution in solutions:
        texts = [s.raw_text or s.text for s in solution.steps.all()]
        steps_total += len(texts)
        truth = solution.problem.ground_truth_answer or "0"
        for i in range(len(texts) - 1):
            rest = [t for t in texts[i + 1 :] if not t.startswith("# Answer")]
            script.rests["\n\n".join(texts[: i + 1])] = ("\n\n".join(rest), truth)

    context = multiprocessing.get_context("fork")
    reports = context.Queue()
    server = context.Process(target=serve, args=(script, port, reports), daemon=True)
    server.start()
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/")
            reports.get(timeout=5)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    job = evidence_job_create(
        campaign=campaign,
        created_by=None,
        kind="rollouts",
        endpoint="scripted",
        selection={"id": [s.pk for s in solutions]},
        samples_per_step=args.k,
        concurrency=args.concurrency,
        enqueue=False,
    )
    started = time.perf_counter()
    job = evidence_job_run(job=job)
    total = time.perf_counter() - started
    httpx.get(f"http://127.0.0.1:{port}/")
    report = reports.get(timeout=5)
    server.terminate()
    server.join()
    assert job.status == "done", (job.status, job.errors)
    n = job.samples
    own = total - report["handler_s"]
    values = list(StepEvidence.objects.filter(job_ref=job.ref).values_list("value", flat=True))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{len(solutions)} demo solutions, {steps_total} steps, {job.completed} rolled out "
        f"(all but each last step) x k={args.k} = {n:,} rollouts, concurrency {args.concurrency}"
    )
    print(
        f"{total:.2f}s in all, of which the server's handler {report['handler_s']:.2f}s: app "
        f"overhead {own / n * 1000:.2f} ms per rollout ({n / own:,.0f} rollouts/s of the app)"
    )
    mean_value = statistics.fmean(values) if values else float("nan")
    print(f"mean rollout value {mean_value:.3f} (scripted {REACH})")
    prompt, completion = report["prompt_chars"], report["completion_chars"]
    per_step = (job.prompt_tokens + job.completion_tokens) / job.completed
    print(
        f"per rollout: prompt {prompt:,.0f} chars, completion {completion:,.0f} chars "
        f"(~{prompt / CHARS_PER_TOKEN:,.0f} + {completion / CHARS_PER_TOKEN:,.0f} tokens at "
        f"{CHARS_PER_TOKEN} chars/token); per step rolled out (k={args.k}): "
        f"{per_step:,.0f} tokens"
    )
    steps_rolled = PRM800K_STEPS - PRM800K_SOLUTIONS  # never from the last step
    tokens = steps_rolled * per_step
    print(
        f"PRM800K-sized campaign ({PRM800K_SOLUTIONS:,} solutions, {PRM800K_STEPS:,} steps): "
        f"{steps_rolled:,} steps rolled out x {per_step:,.0f} = {tokens / 1e9:.2f} billion tokens; "
        f"app time {steps_rolled * args.k * own / n / 3600:.1f} h on this machine"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
