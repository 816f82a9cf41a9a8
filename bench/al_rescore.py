"""Active-learning rescoring benchmark: 100,000 open solutions scored and the queue rewritten.

Builds (once; later runs reuse it) a synthetic campaign of ``--solutions`` open solutions from
``bench/synthetic.py`` (about 10 steps each, graded), trains a ``bow`` PRM on separate synthetic
labels, then times what an active-learning run does after training, with the service's own code:
read the open solutions, featurise those the feature cache lacks and score them all
(``learning.scoring.open_scored``, ``prm.batch_scoring``; the first run is cold, later ones warm),
order them by the 80/20 rule (``queue_order``), and write ``prm_score`` and ``priority`` in bulk
(``labeling.queue.order.queue_reorder``, in one transaction, as the run does). Target: under
60 s end to end on the 2-core reference machine.
Each run also prints its CPU seconds (this process and the featurising processes it forked) and
those of a fixed pure-Python loop before and after it (``reference_seconds``: the machine's speed
at the time, which here varies by 2x within an hour).

    python -m bench.al_rescore                                  # SQLite (a file under /tmp)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/stepwise_bench python -m bench.al_rescore
    python -m bench.al_rescore --solutions 10000                # a quicker look
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/stepwise-bench-al.sqlite3")
TARGET_S = 60.0


def build_campaign(n: int, *, seed: int = 0):
    """A campaign with ``n`` open regular solutions (reused when it exists)."""
    from django.db import transaction

    from bench.synthetic import records
    from labeling.models import Campaign, Problem, Solution, Step

    slug = f"bench-al-{n}"
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is not None and campaign.solutions.count() == n:
        return campaign
    if campaign is not None:
        campaign.delete()
    t0 = time.perf_counter()
    with transaction.atomic():
        campaign = Campaign.objects.create(slug=slug, name=f"Bench: AL rescoring {n}")
        problems: dict[str, Problem] = {}
        solutions, steps = [], []
        for rec in records(n, seed=seed, labelled=False):
            q = rec["question"]
            problem = problems.get(q["problem"])
            if problem is None:
                problem = Problem(
                    campaign=campaign,
                    text=q["problem"],
                    ground_truth_answer=q["ground_truth_answer"],
                    content_hash=Problem.hash_text(q["problem"]),
                )
                problems[q["problem"]] = problem
            solutions.append(
                (
                    problem,
                    Solution(
                        campaign=campaign,
                        answer=q["pre_generated_answer"],
                        answer_is_correct=q["pre_generated_answer"] == q["ground_truth_answer"],
                        content_hash=Solution.hash_content(
                            q["problem"], q["pre_generated_steps"], q["pre_generated_answer"]
                        ),
                    ),
                    q["pre_generated_steps"],
                )
            )
        Problem.objects.bulk_create(problems.values(), batch_size=2000)
        for problem, solution, _ in solutions:
            solution.problem = problem
        Solution.objects.bulk_create([s for _, s, _ in solutions], batch_size=2000)
        for _, solution, texts in solutions:
            steps.extend(Step(solution=solution, index=i, text=t) for i, t in enumerate(texts))
            if len(steps) >= 50_000:
                Step.objects.bulk_create(steps, batch_size=5000)
                steps.clear()
        Step.objects.bulk_create(steps, batch_size=5000)
    print(f"built {n:,} solutions in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return campaign


def train_model(out: Path, *, labelled: int, seed: int = 1) -> Path:
    """A bow PRM trained on synthetic PRM800K lines (other problems than the open ones)."""
    import prm
    from bench.synthetic import write_jsonl

    if (out / "config.json").is_file():
        return out
    data = write_jsonl(out.parent / "al-bench-train.jsonl", labelled, seed=seed)
    prm.train(data, out, backbone="bow", progress=False)
    return out


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the featurising processes):
    the honest figure on a shared machine, where wall time depends on who else is running."""
    import resource

    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )


def reference_seconds() -> float:
    """CPU seconds of a fixed pure-Python loop: how fast this machine is right now. The same
    code's cold run here has taken from 43 to 84 s within an hour (a shared virtual machine), so
    each run prints this beside its figures, and runs are compared by their ratio to it."""
    t = time.process_time()
    total = 0
    for i in range(2_000_000):
        total += i % 7 * (i & 3)
    return time.process_time() - t


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=int, default=100_000)
    parser.add_argument("--train-labelled", type=int, default=4000, help="synthetic training lines")
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs: the first cold (no feature cache), then warm"
    )
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    import prm
    from labeling.models import Step
    from labeling.queue.order import queue_reorder
    from learning.ordering import queue_order
    from learning.scoring import open_scored

    call_command("migrate", verbosity=0)
    campaign = build_campaign(args.solutions)
    model_dir = train_model(
        Path(tempfile.gettempdir()) / "stepwise-bench-al-model", labelled=args.train_labelled
    )
    scorer = prm.load(model_dir)
    steps = Step.objects.filter(solution__campaign=campaign).count()
    print(
        f"database: {connection.vendor}; {args.solutions:,} open solutions, {steps:,} steps; "
        f"torch threads {prm.runtime_threads()}"
    )
    from django.conf import settings

    for old in (Path(settings.MEDIA_ROOT) / "prm" / campaign.slug).glob("features-*.npz"):
        old.unlink()  # the first run is cold
    print(f"scoring processes: {settings.STEPWISE_AL_SCORE_WORKERS}")
    for attempt in range(args.repeat):
        timings: dict[str, float] = {}
        reference = reference_seconds()
        cpu0 = _cpu_seconds()
        t0 = time.perf_counter()
        stats: dict = {}
        scored = open_scored(campaign=campaign, scorer=scorer, beat=lambda: None, stats=stats)
        timings["read + featurise + score"] = time.perf_counter() - t0
        print(
            f"run {attempt + 1} ({'cold' if stats.get('featurised') else 'warm'}: "
            f"{stats.get('featurised', 0):,} solutions featurised, "
            f"{stats.get('cached', 0):,} from the feature cache)"
        )
        t = time.perf_counter()
        order = queue_order(scored, wrong_share=0.8)
        timings["order (80/20)"] = time.perf_counter() - t
        t = time.perf_counter()
        n = len(order)
        with transaction.atomic():
            queue_reorder(
                ids=[s.solution_id for s in order],
                scores=[s.score for s in order],
                priorities=[float(n - k) for k in range(n)],
            )
        timings["write (bulk UPDATE, commit)"] = time.perf_counter() - t
        total = time.perf_counter() - t0
        cpu = _cpu_seconds() - cpu0
        for name, seconds in timings.items():
            print(f"  {name:<30} {seconds:7.2f} s")
        head = order[:100]
        print(
            f"  {'total':<30} {total:7.2f} s  (target {TARGET_S:.0f} s: "
            f"{'met' if total < TARGET_S else 'MISSED'}); {n / total:,.0f} solutions/s; "
            f"head: {sum(s.wrong for s in head)} wrong of {len(head)}"
        )
        print(
            f"  {'CPU (this process + children)':<30} {cpu:7.2f} s  "
            f"(load average {os.getloadavg()[0]:.1f} at the end)"
        )
        print(
            f"  {'reference loop (machine speed)':<30} {reference:7.3f} s before the run, "
            f"{reference_seconds():.3f} s after (CPU seconds; lower is faster)"
        )
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: this process {peak:,.0f} MB, largest featurising process {children:,.0f} MB")


if __name__ == "__main__":
    main()
