"""Export benchmark: a synthetic campaign with a million step labels, exported in every format.

Builds (once; later runs reuse it) a campaign of PRM800K-shaped phase 2 lines from
``bench/synthetic.py`` in PostgreSQL, loaded with COPY, then runs each export in a fresh
subprocess so that its peak RSS is its own, and prints seconds, rows/s and peak RSS per format.

Targets on the reference machine (2 cores): ``trl`` JSONL under 30 s, every format under 60 s,
peak RSS under 300 MB.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sw_exports python bench/export.py
    python bench/export.py --labels 100000 --formats trl csv   # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")


def _django():
    import django

    django.setup()


def _campaign_slug(labels: int) -> str:
    return f"bench-export-{labels}"


def build_campaign(labels: int, *, seed: int = 0):
    """The benchmark campaign with exactly ``labels`` step labels; built with COPY if missing."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection, transaction

    from bench.synthetic import records
    from labeling.models import (
        Assignment,
        Campaign,
        Problem,
        Solution,
        Step,
        StepLabel,
    )

    slug = _campaign_slug(labels)
    existing = Campaign.objects.filter(slug=slug).first()
    if existing is not None:
        have = StepLabel.objects.filter(assignment__campaign=existing).count()
        if have == labels:
            print(f"reusing campaign {slug} ({have:,} step labels)", flush=True)
            return existing
        existing.delete()

    started = time.monotonic()
    User = get_user_model()
    tables = {m: m._meta for m in (Problem, Solution, Step, Assignment, StepLabel)}

    def next_id(model) -> int:
        with connection.cursor() as cur:
            cur.execute(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {model._meta.db_table}")
            return cur.fetchone()[0]

    with transaction.atomic():
        campaign = Campaign.objects.create(slug=slug, name=f"Export benchmark ({labels:,} labels)")
        users: dict[str, int] = {}
        ids = {m: next_id(m) for m in tables}
        columns = {
            m: [f.column for f in meta.concrete_fields if not f.primary_key]
            for m, meta in tables.items()
        }
        defaults = {
            m: {f.column: f.get_default() for f in meta.concrete_fields}
            for m, meta in tables.items()
        }
        json_columns = {"alternatives", "human_completion"}

        cursor = connection.cursor()
        raw = cursor.cursor  # psycopg's own cursor, for COPY
        copies = {
            m: f"COPY {m._meta.db_table} (id, {', '.join(columns[m])}) FROM STDIN" for m in tables
        }

        # Rows are collected per table in chunks and written with one COPY per table per chunk.
        buffers: dict = {m: [] for m in tables}

        def row(model, values: dict) -> int:
            pk = ids[model]
            ids[model] += 1
            d = defaults[model]
            out = [pk]
            for col in columns[model]:
                v = values[col] if col in values else d[col]
                if col in json_columns and v is not None:
                    v = json.dumps(v)
                out.append(v)
            buffers[model].append(out)
            return pk

        def flush() -> None:
            for model in tables:  # insertion order respects foreign keys
                if buffers[model]:
                    with raw.copy(copies[model]) as copy:
                        for r in buffers[model]:
                            copy.write_row(r)
                    buffers[model].clear()

        now = datetime.now(UTC)
        count = 0
        problem_id = None
        problem_text = None
        hashes: set[str] = set()
        for i, rec in enumerate(records(10**9, seed=seed)):
            q, label = rec["question"], rec["label"]
            steps = q["pre_generated_steps"]
            content = Solution.hash_content(q["problem"], steps, q["pre_generated_answer"])
            if content in hashes:
                continue
            hashes.add(content)
            if q["problem"] != problem_text:
                problem_text = q["problem"]
                problem_id = row(
                    Problem,
                    {
                        "campaign_id": campaign.pk,
                        "text": problem_text,
                        "ground_truth_answer": q["ground_truth_answer"],
                        "content_hash": Problem.hash_text(problem_text),
                        "created_at": now,
                    },
                )
            if rec["labeler"] not in users:
                user, _ = User.objects.get_or_create(
                    username=rec["labeler"], defaults={"password": make_password(None)}
                )
                users[rec["labeler"]] = user.pk
            solution_id = row(
                Solution,
                {
                    "campaign_id": campaign.pk,
                    "problem_id": problem_id,
                    "generator": "synthetic",
                    "generation": rec["generation"],
                    "answer": q["pre_generated_answer"],
                    "answer_is_correct": q["pre_generated_answer"] == q["ground_truth_answer"],
                    "verifier_score": q["pre_generated_verifier_score"],
                    "is_open": False,
                    "assignment_count": 1,
                    "source": "synthetic",
                    "source_ref": str(i),
                    "content_hash": content,
                    "created_at": now,
                },
            )
            step_ids = [
                row(Step, {"solution_id": solution_id, "index": k, "text": text})
                for k, text in enumerate(steps)
            ]
            submitted = datetime.fromisoformat(rec["timestamp"]).replace(tzinfo=UTC)
            assignment_id = row(
                Assignment,
                {
                    "campaign_id": campaign.pk,
                    "solution_id": solution_id,
                    "annotator_id": users[rec["labeler"]],
                    "status": Assignment.Status.SUBMITTED,
                    "leased_at": submitted,
                    "submitted_at": submitted,
                    "finish_reason": label["finish_reason"],
                    "total_time_ms": label["total_time"],
                    "source": "synthetic",
                },
            )
            for k, s in enumerate(label["steps"][: labels - count]):
                own, *alternatives = s["completions"]
                row(
                    StepLabel,
                    {
                        "assignment_id": assignment_id,
                        "step_id": step_ids[k],
                        "rating": own["rating"],
                        "flagged": own["flagged"],
                        "time_spent_ms": 1000 + k,
                        "completion_index": 0,
                        "alternatives": alternatives,
                        "human_completion": s["human_completion"],
                        "chosen_completion": s["chosen_completion"],
                        "created_at": now,
                    },
                )
                count += 1
            if len(buffers[StepLabel]) >= 50_000:
                flush()
                print(f"  loaded {count:,} step labels", end="\r", flush=True)
            if count >= labels:
                break
        flush()
        with connection.cursor() as cur:
            for model in tables:
                table = model._meta.db_table
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT MAX(id) FROM {table}))"
                )
    with connection.cursor() as cur:
        for model in tables:
            cur.execute(f"ANALYZE {model._meta.db_table}")
    print(
        f"built campaign {slug}: {count:,} step labels, "
        f"{Solution.objects.filter(campaign=campaign).count():,} solutions, "
        f"in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    return campaign


def run_one(fmt: str, slug: str, out_dir: Path) -> dict:
    """One export in this process: its own figures, as JSON on stdout."""
    _django()
    from exports.formats import FORMATS, write_export
    from labeling.models import Campaign

    campaign = Campaign.objects.get(slug=slug)
    out = out_dir / f"{slug}-{fmt}{FORMATS[fmt].extension}"
    started, cpu_started = time.monotonic(), time.process_time()
    manifest = write_export(campaign=campaign, fmt=fmt, out=out)
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu_started
    counts = manifest["counts"]["all"]
    return {
        "format": fmt,
        "seconds": seconds,
        "records": counts["records"],
        "steps": counts["steps"],
        "bytes": sum(f["bytes"] for f in manifest["files"]),
        "cpu_seconds": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument(
        "--formats", nargs="*", default=None, help="default: every format, one after the other"
    )
    parser.add_argument("--out", type=Path, default=None, help="folder for the files (temp)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--slug", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(run_one(args.child, args.slug, args.out)))
        return

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit(
            "bench/export.py measures PostgreSQL: set DATABASE_URL=postgres://... "
            "(e.g. postgres://postgres@127.0.0.1:5432/stepwise_bench)"
        )
    _django()
    from django.core.management import call_command

    from exports.formats import FORMATS

    call_command("migrate", verbosity=0)
    campaign = build_campaign(args.labels)
    formats = args.formats or list(FORMATS)
    with tempfile.TemporaryDirectory(prefix="stepwise-export-bench-") as tmp:
        out_dir = args.out or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        print(
            f"\n{'format':<14}{'seconds':>9}{'records':>11}{'records/s':>11}"
            f"{'labels/s':>11}{'MB out':>9}{'peak RSS MB':>13}{'CPU s':>8}"
        )
        for fmt in formats:
            child = ["--child", fmt, "--slug", campaign.slug, "--out", str(out_dir)]
            done = subprocess.run(
                [sys.executable, __file__, *child],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                print(f"{fmt:<14} failed:\n{done.stderr}", flush=True)
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{fmt:<14}{r['seconds']:>9.1f}{r['records']:>11,}"
                f"{r['records'] / r['seconds']:>11,.0f}{args.labels / r['seconds']:>11,.0f}"
                f"{r['bytes'] / 1e6:>9.0f}{r['peak_rss_mb']:>13.0f}{r['cpu_seconds']:>8.1f}",
                flush=True,
            )
    print(
        "\nlabels/s: the campaign's step labels read per second of export; records: lines or "
        "rows written (alternatives add examples); CPU s: the export process's own CPU time "
        "(PostgreSQL's work is not in it). Targets: trl < 30 s, all < 60 s, RSS < 300 MB."
    )
    print(f"load average while it ran: {os.getloadavg()[0]:.1f} (2 cores shared)")


if __name__ == "__main__":
    main()
