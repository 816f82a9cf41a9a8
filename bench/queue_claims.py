"""Queue benchmark: the app under gunicorn, driven over HTTP by an async client (issue 3).

Loads a PostgreSQL database of its own with a campaign of 100,000 open solutions (overlap 3) and a
history of submitted assignments (closed solutions, and open ones already labelled once or
twice, some skipped or expired), so the planner sees full tables; a second campaign with 1,000
open solutions for the scaling comparison. Then, in one run:

1. open loop: 100 ``next`` + 100 ``submit`` requests per second for ``--seconds`` (about 3,000
   annotators taking 30 s per solution); p50/p95/p99 of each, measured from the moment each
   request was due (so a slow server cannot hide latency by slowing the client down);
2. closed loop: 100 annotators with no think time (next, submit, next...) for ``--seconds``:
   claims per second;
3. scaling: ``next`` latency with 100,000 open solutions against 1,000, same light load;
4. raw SQL: the app's own single-statement claim (``labeling.queue.claim.CLAIM_SKIP_LOCKED``:
   ``WITH ... FOR NO KEY UPDATE SKIP LOCKED``, update, insert: one round trip) run straight from
   psycopg by 32 clients (cut to fit ``--max-db-connections``, 48 by default: the server's
   connections are shared), as the ceiling the app's claims/s is compared with;
5. invariants over every row afterwards (all must be 0), most of them the models' own rules.

It prints the machine's load average at the start and the end (figures from a loaded machine
are not comparable with an idle one's: compare runs one after the other).

    .venv/bin/python bench/queue_claims.py                     # full size, about 6 minutes
    .venv/bin/python bench/queue_claims.py --open 5000 --seconds 10 --raw-seconds 5   # a quick look

The database (default ``postgres://postgres@127.0.0.1:5432/sw_bench_queue``, or
``BENCH_DATABASE_URL``) is dropped and recreated. Disk flush times on the reference machine
switch between about 0.15 ms and 4 ms from minute to minute: compare figures within one run.
"""

# ruff: noqa: E402  (imports follow the sys.path fix below)
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import argparse
import asyncio
import os
import random
import signal
import subprocess
import time
import urllib.request
import uuid
from collections import deque

import aiohttp
import psycopg

from bench.fresh_db import fresh_database
from bench.queue_load import load, loaded
from bench.queue_sql import explain_claim, invariants, raw_sql

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/sw_bench_queue"


# --- The server --------------------------------------------------------------------------------


def start_gunicorn(url: str, port: int, workers: int, threads: int) -> subprocess.Popen:
    """gunicorn; with ``threads`` > 1 its threaded workers, which keep connections alive."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DB_CONN_MAX_AGE": "600",
        "DEBUG": "False",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "ERROR",
        "DJANGO_SETTINGS_MODULE": "stepwise.settings",
    }
    server = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "gunicorn"),
            "stepwise.wsgi",
            "--workers",
            str(workers),
            "--worker-class",
            "gthread" if threads > 1 else "sync",
            "--threads",
            str(threads),
            "--bind",
            f"127.0.0.1:{port}",
            "--backlog",
            "4096",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.1)
    server.kill()
    raise SystemExit("gunicorn did not start")


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system) used so far by the live processes of a process group."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # field 5 of stat: the process group
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


class CpuMeter:
    """CPU used by the server (gunicorn) and by this client between two readings, per request."""

    def __init__(self, server: subprocess.Popen) -> None:
        self.pgid = server.pid
        self.start()

    def start(self) -> None:
        self.server, self.client = group_cpu_seconds(self.pgid), time.process_time()

    def per_request(self, requests: int) -> str:
        server = group_cpu_seconds(self.pgid) - self.server
        client = time.process_time() - self.client
        self.start()
        n = max(requests, 1)
        return (
            f"  CPU per request: server {server / n * 1000:.1f} ms,"
            f" client {client / n * 1000:.1f} ms"
        )


def stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


# --- The client --------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {"next": [], "submit": []}
        self.errors: dict[str, int] = {}
        self.no_work = 0
        self.claims = 0

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


class Annotator:
    def __init__(self, pk: int, token: str) -> None:
        self.pk = pk
        self.headers = {"Authorization": f"Token {token}"}
        self.assignment: dict | None = None


def ratings_for(n: int, rng: random.Random) -> list[int]:
    if rng.random() < 0.3:
        k = rng.randrange(n)
        return [1] * k + [-1]
    return [rng.choice((1, 1, 1, 0)) for _ in range(n)]


async def do_next(client, base, slug, who: Annotator, stats: Stats, due: float) -> bool:
    try:
        async with client.post(f"{base}/api/campaigns/{slug}/next/", headers=who.headers) as r:
            status = r.status
            body = await r.json() if status == 200 else None
    except (aiohttp.ClientError, TimeoutError) as error:
        stats.error(f"next {type(error).__name__}")
        return False
    stats.latency["next"].append(time.perf_counter() - due)
    if status != 200:
        stats.error(f"next {status}")
        return False
    if body["assignment"] is None:
        stats.no_work += 1
        return False
    if who.assignment is None or who.assignment["id"] != body["assignment"]["id"]:
        stats.claims += 1
    who.assignment = body["assignment"]
    return True


async def do_submit(client, base, who: Annotator, stats: Stats, due: float, rng) -> bool:
    a = who.assignment
    body = {
        "submission_key": uuid.uuid4().hex,
        "ratings": ratings_for(len(a["steps"]), rng),
        "total_time_ms": rng.randint(10_000, 60_000),
    }
    url = f"{base}/api/assignments/{a['id']}/submit/"
    try:
        async with client.post(url, json=body, headers=who.headers) as r:
            status = r.status
            await r.read()
    except (aiohttp.ClientError, TimeoutError) as error:
        stats.error(f"submit {type(error).__name__}")
        return False
    stats.latency["submit"].append(time.perf_counter() - due)
    who.assignment = None  # on an error too: the next "next" says where they stand
    if status != 200:
        stats.error(f"submit {status}")
        return False
    return True


def _client() -> aiohttp.ClientSession:
    """aiohttp: a fraction of httpx's CPU per request, which matters with client and server
    sharing two cores."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=400), timeout=aiohttp.ClientTimeout(total=60)
    )


async def warm_up(base, slug, annotators: list[Annotator], concurrency: int) -> Stats:
    """Every open-loop annotator takes a solution first, so submits can start at once."""
    stats = Stats()
    queue = deque(annotators)
    async with _client() as client:

        async def worker():
            while queue:
                who = queue.popleft()
                await do_next(client, base, slug, who, stats, time.perf_counter())

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return stats


async def open_loop(base, slug, holders, idle, rate: float, seconds: float) -> tuple[Stats, list]:
    """Every 1/rate s one ``next`` (an idle annotator) and one ``submit`` (the oldest holder)."""
    stats, lags, tasks = Stats(), [], set()
    held = deque(holders)
    idle = deque(idle)
    rng = random.Random(11)
    async with _client() as client:

        async def next_for(who, due):
            lags.append(time.perf_counter() - due)
            if await do_next(client, base, slug, who, stats, due):
                held.append(who)
            else:
                idle.append(who)

        async def submit_for(who, due):
            lags.append(time.perf_counter() - due)
            await do_submit(client, base, who, stats, due, rng)
            idle.append(who)

        start = time.perf_counter()
        missed = 0
        for k in range(int(rate * seconds)):
            due = start + k / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if idle:
                tasks.add(asyncio.create_task(next_for(idle.popleft(), due)))
            else:
                missed += 1
            if held:
                tasks.add(asyncio.create_task(submit_for(held.popleft(), due)))
            else:
                missed += 1
            tasks = {t for t in tasks if not t.done()}
        await asyncio.gather(*tasks)
    stats.errors["client had nobody to send (missed sends)"] = missed
    return stats, lags


async def closed_loop(base, slug, annotators, seconds: float) -> tuple[Stats, float]:
    stats = Stats()
    rng = random.Random(12)
    async with _client() as client:
        end = time.perf_counter() + seconds

        async def annotate(who):
            while time.perf_counter() < end:
                if who.assignment is None and not await do_next(
                    client, base, slug, who, stats, time.perf_counter()
                ):
                    await asyncio.sleep(0.05)
                    continue
                await do_submit(client, base, who, stats, time.perf_counter(), rng)

        start = time.perf_counter()
        await asyncio.gather(*(annotate(who) for who in annotators))
        elapsed = time.perf_counter() - start
    return stats, elapsed


# --- Report ------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


def line(name: str, values: list[float]) -> str:
    return (
        f"  {name:<8} n={len(values):>6}  p50 {pct(values, 0.50):7.1f} ms  "
        f"p95 {pct(values, 0.95):7.1f} ms  p99 {pct(values, 0.99):7.1f} ms"
    )


def fit_connections(args: argparse.Namespace) -> int:
    """Cut the raw SQL clients so that the run opens at most ``--max-db-connections``: gunicorn's
    workers x threads, the raw clients, and this process (two). Returns the most it opens."""
    room = args.max_db_connections - args.workers * args.threads - 2
    if room < 1:
        raise ValueError(
            f"--workers {args.workers} x --threads {args.threads} leave no room under "
            f"--max-db-connections {args.max_db_connections}"
        )
    if args.raw_clients > room:
        print(f"raw SQL clients cut from {args.raw_clients} to {room} (--max-db-connections)")
        args.raw_clients = room
    return args.workers * args.threads + args.raw_clients + 2


def django_setup(url: str) -> None:
    """Django on the benchmark's database, for the app's claim statement and rules (this process
    only opens a connection when it reads them)."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min), {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--open", type=int, default=100_000, help="open solutions (big campaign)")
    parser.add_argument("--small", type=int, default=1_000, help="open solutions (small campaign)")
    parser.add_argument(
        "--history", type=int, default=50_000, help="closed, fully labelled solutions"
    )
    parser.add_argument("--seconds", type=float, default=60, help="open and closed loop duration")
    parser.add_argument(
        "--rate", type=float, default=100, help="open loop: next (and submit) per s"
    )
    parser.add_argument("--open-annotators", type=int, default=3_500)
    parser.add_argument("--closed-annotators", type=int, default=100)
    parser.add_argument("--scale-annotators", type=int, default=8)
    parser.add_argument("--scale-seconds", type=float, default=15)
    parser.add_argument("--raw-clients", type=int, default=32)
    parser.add_argument(
        "--max-db-connections",
        type=int,
        default=int(os.environ.get("BENCH_MAX_DB_CONNECTIONS", "48")),
        help="most connections this run opens at once (PostgreSQL's max_connections, 100 by "
        "default, is shared by everything on the server): gunicorn's workers x threads plus "
        "the raw SQL clients plus this process; the raw clients are cut to fit",
    )
    parser.add_argument("--raw-seconds", type=float, default=15)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument(
        "--threads", type=int, default=4, help="threads per gunicorn worker (1: sync workers)"
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--load-only", action="store_true", help="load the database and stop")
    parser.add_argument(
        "--no-load",
        action="store_true",
        help="use the database as an earlier run left it (quick looks only: it is no longer fresh)",
    )
    args = parser.parse_args(argv)
    url = args.database_url
    try:
        fit_connections(args)
    except ValueError as error:
        parser.error(str(error))

    started = time.perf_counter()
    django_setup(url)
    print(f"database {url}; {load_average()}", flush=True)
    if args.no_load:
        setup = loaded(url)
    else:
        fresh_database(url)
        setup = load(url, args)
    c = setup["counts"]
    print(
        f"loaded in {time.perf_counter() - started:.0f} s: {c['open']} open (both campaigns)"
        f" + {c['closed']} closed solutions, {c['assignments']} history assignments,"
        f" {c['labels']} step labels",
        flush=True,
    )
    if args.load_only:
        return 0
    with psycopg.connect(url) as conn:
        open_big = conn.execute(
            "SELECT count(*) FROM labeling_solution WHERE campaign_id = %s AND is_open",
            (setup["big"],),
        ).fetchone()[0]
    roles = {k: [Annotator(pk, key) for pk, key in v] for k, v in setup["roles"].items()}
    big_ms, big_index = explain_claim(url, setup["big"], roles["closed"][0].pk)
    small_ms, small_index = explain_claim(url, setup["small"], roles["scale_small"][0].pk)
    from django.db import connections

    connections.close_all()  # not held while the server runs (the connections are counted)

    print(f"open solutions in the big campaign: {open_big}", flush=True)
    # ``timeout`` and Ctrl-C: still stop gunicorn (it runs in its own session).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = start_gunicorn(url, args.port, args.workers, args.threads)
    base = f"http://127.0.0.1:{args.port}"
    print(f"gunicorn: {args.workers} workers x {args.threads} threads", flush=True)
    cpu = CpuMeter(server)
    try:
        holders = roles["open"][: int(args.rate * 30)]
        idle = roles["open"][len(holders) :]
        warm = asyncio.run(warm_up(base, "bench-big", holders, 50))
        say(f"warm-up: {warm.claims} annotators took a solution; errors {warm.errors or 'none'}")
        # The load's ANALYZE saw no live lease; a running campaign's statistics hold its
        # thousands of live leases. Planned from the empty picture, PostgreSQL walks the whole
        # partial lease index to find one annotator's lease (about 1 ms per 3,000 leases). This
        # server runs with autovacuum off, so analyze by hand, as autovacuum would have.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE labeling_assignment")
        cpu.start()

        begun = time.perf_counter()
        open_stats, lags = asyncio.run(
            open_loop(base, "bench-big", holders, idle, args.rate, args.seconds)
        )
        done = len(open_stats.latency["next"]) + len(open_stats.latency["submit"])
        say(
            f"open loop, {args.rate:g} next + {args.rate:g} submit per s for {args.seconds:g} s"
            " (latency from when each request was due):",
            line("next", open_stats.latency["next"]),
            line("submit", open_stats.latency["submit"]),
            f"  answered {done / (time.perf_counter() - begun):.0f} requests/s;"
            f" client send lag p99 {pct(lags, 0.99):.1f} ms; no-work answers"
            f" {open_stats.no_work}; errors {open_stats.errors or 'none'}",
            cpu.per_request(len(open_stats.latency["next"]) + len(open_stats.latency["submit"])),
        )

        closed_stats, elapsed = asyncio.run(
            closed_loop(base, "bench-big", roles["closed"], args.seconds)
        )
        app_rate = closed_stats.claims / elapsed
        say(
            f"closed loop, {len(roles['closed'])} annotators, no think time, {elapsed:.0f} s:",
            f"  claims/s {app_rate:.1f}"
            f"  (submits/s {len(closed_stats.latency['submit']) / elapsed:.1f})",
            line("next", closed_stats.latency["next"]),
            line("submit", closed_stats.latency["submit"]),
            f"  no-work answers {closed_stats.no_work}; errors {closed_stats.errors or 'none'}",
            cpu.per_request(
                len(closed_stats.latency["next"]) + len(closed_stats.latency["submit"])
            ),
        )

        scale = {}
        for name, slug in (("big", "bench-big"), ("small", "bench-small")):
            stats, _ = asyncio.run(
                closed_loop(base, slug, roles[f"scale_{name}"], args.scale_seconds)
            )
            scale[name] = stats.latency["next"]
        b, sm = scale["big"], scale["small"]
        say(
            f"scaling, {args.scale_annotators} annotators each, next latency:",
            line("100k", b),
            line("1k", sm),
            f"  ratio 100k / 1k: p50 {pct(b, 0.5) / pct(sm, 0.5):.2f}x,"
            f" p95 {pct(b, 0.95) / pct(sm, 0.95):.2f}x",
            f"  claim SELECT alone (EXPLAIN ANALYZE median): {big_ms:.3f} ms vs {small_ms:.3f} ms"
            f" (reads {big_index} / {small_index})",
        )
    finally:
        stop(server)

    raw_rate, raw_lat = raw_sql(url, setup["big"], [a.pk for a in roles["raw"]], args.raw_seconds)
    say(
        f"raw SQL claim, {args.raw_clients} clients, {args.raw_seconds:g} s:"
        f" {raw_rate:.0f} claims/s, p50 {pct(raw_lat, 0.5):.2f} ms,"
        f" p99 {pct(raw_lat, 0.99):.2f} ms",
        f"  app / raw SQL claims per second: {app_rate / raw_rate:.1%}"
        if raw_rate
        else "  app / raw SQL: no raw claim succeeded (the campaign ran out of open solutions?)",
    )

    broken = invariants(url)
    say("invariants over every row:", *(f"  {n:>6}  {name}" for name, n in broken.items()))
    total = sum(broken.values())
    say(
        f"  violations: {total}",
        f"total time {time.perf_counter() - started:.0f} s; {load_average()}",
    )
    return 1 if total else 0


def say(*lines: str) -> None:
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
