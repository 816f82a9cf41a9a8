"""The processes that run math-verify: a few workers, each grading one pair at a time.

Why processes, when nothing times out any more: the work on one pair is bounded by its size
(``labeling.grading.bounds``), but sympy is a large library and a pair can still find a slow
path in it, or a crash in C code; a worker is a place where that can happen without taking the
import (or the Celery worker) with it. Two backstops, neither of which any real answer reaches:

- **CPU time**: before each pair a worker sets its own ``RLIMIT_CPU`` to what it has used plus
  :data:`CPU_BUDGET_S`. The kernel stops a worker that spends that (``SIGXCPU``); its pair is
  undecided and a fresh worker takes over. CPU time is what the pair costs, not how long the
  machine made it wait: the costliest real pair among 2,001 takes 2.6 CPU seconds (an infinite
  sum) and the costliest the bounds admit that we found 1.3, so no pair comes near the budget,
  at any load (CPU time grows a little on a busy machine, through shared caches; not tenfold).
- **A stalled worker** that answers nothing and uses no CPU for :data:`STALL_S` (stuck, not busy:
  the parent watches its CPU time in ``/proc``) is killed, and its pair is undecided.

Nothing here uses signals in the caller's process, and a worker sets no alarm (math-verify's
timeouts are off).
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

from labeling.grading.answers import normalise, quick
from labeling.grading.bounds import Limits, expression_refusal, text_refusal
from labeling.grading.readings import unwrap
from labeling.grading.rules import MATHEMATICAL, PRM800K, check

CPU_BUDGET_S = 30.0
STALL_S = 120.0
_POLL_S = 5.0
_SERVE = "from labeling.grading.workers import serve; serve()"
WORKERS = max(1, min(4, os.cpu_count() or 1))

Pair = tuple[str | None, str | None]


class Grader:
    """A few worker processes grading (answer, truth) pairs.

    Workers start on first use and are reused; ``close()`` stops them. ``shared()`` is one per
    process, closed at exit. ``killed`` counts the workers lost on a pair (past the CPU budget,
    stalled or crashed): each of those pairs is undecided."""

    _shared: Grader | None = None

    def __init__(
        self,
        *,
        workers: int = WORKERS,
        limits: Limits | None = None,
        cpu_budget_s: float = CPU_BUDGET_S,
        stall_s: float = STALL_S,
    ) -> None:
        self.size = workers
        self.config = {"limits": asdict(limits or Limits()), "cpu_budget_s": cpu_budget_s}
        self.stall_s = stall_s
        self._procs: list[subprocess.Popen] = []
        self.killed = 0

    @classmethod
    def shared(cls) -> Grader:
        if cls._shared is None:
            cls._shared = cls()
            atexit.register(cls._shared.close)
        return cls._shared

    def grade_many(
        self, pairs: Iterable[Pair], *, rule: str = MATHEMATICAL, progress: bool = False
    ) -> dict[Pair, bool | None]:
        """Grade each distinct pair once under ``rule`` (``rules``); returns pair -> result."""
        check(rule)
        results: dict[Pair, bool | None] = {}
        todo: list[Pair] = []
        for pair in pairs:
            if pair in results:
                continue
            decided, result = quick(*pair, rule)
            results[pair] = result
            if not decided:
                todo.append(pair)
        if todo:
            todo.sort(key=lambda pair: normalise(pair[1]) or "")  # see serve()
            bar = _bar(len(todo), progress)
            for pair, result in self._run(todo, rule, bar):
                results[pair] = result
            if bar is not None:
                bar.close()
        return results

    def _run(self, todo: list[Pair], rule: str, bar: Any) -> Iterator[tuple[Pair, bool | None]]:
        """Feed pairs to idle workers; yield (pair, result) as answers come back."""
        new = [self._spawn() for _ in range(min(self.size, len(todo)) - len(self._procs))]
        for proc in new:
            _wait_ready(proc)
        self._procs += new
        pending = list(reversed(todo))
        busy: dict[subprocess.Popen, _Busy] = {}
        sel = selectors.DefaultSelector()
        try:
            while pending or busy:
                for proc in list(self._procs):
                    if proc not in busy and pending:
                        pair = pending.pop()
                        try:
                            line = [normalise(pair[0]), normalise(pair[1]), rule]
                            proc.stdin.write(json.dumps(line) + "\n")
                            proc.stdin.flush()
                        except (BrokenPipeError, OSError):
                            pending.append(pair)
                            self._replace(proc)
                            continue
                        busy[proc] = _Busy(pair, proc.pid)
                        sel.register(proc.stdout, selectors.EVENT_READ, proc)
                if not busy:
                    continue
                for key, _ in sel.select(timeout=_POLL_S):
                    proc = key.data
                    sel.unregister(proc.stdout)
                    pair = busy.pop(proc).pair
                    try:
                        result = json.loads(proc.stdout.readline())
                    except ValueError:  # the worker died on this pair (its CPU budget, a crash)
                        self.killed += 1
                        self._replace(proc)
                        result = None
                    yield pair, result
                    if bar is not None:
                        bar.update(1)
                for proc, state in list(busy.items()):
                    if state.stalled(self.stall_s):
                        sel.unregister(proc.stdout)
                        del busy[proc]
                        self.killed += 1
                        self._replace(proc)
                        yield state.pair, None
                        if bar is not None:
                            bar.update(1)
        finally:
            sel.close()
            # Anything still busy (we were interrupted) is in an unknown state: drop it.
            for proc in busy:
                self._replace(proc, respawn=False)

    def _spawn(self) -> subprocess.Popen:
        root = str(Path(__file__).resolve().parents[2])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
            # sympy orders some results by hash: the same pair gets the same answer in every worker
            "PYTHONHASHSEED": "0",
        }
        return subprocess.Popen(
            [sys.executable, "-c", _SERVE, json.dumps(self.config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
            cwd=root,
        )

    def _replace(self, proc: subprocess.Popen, *, respawn: bool = True) -> None:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            stream.close()
        self._procs.remove(proc)
        if respawn:
            fresh = self._spawn()
            _wait_ready(fresh)
            self._procs.append(fresh)

    def close(self) -> None:
        for proc in list(self._procs):
            try:
                proc.stdin.close()  # the worker exits at end of input
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            proc.stdout.close()
        self._procs = []


def _bar(total: int, progress: bool) -> Any:
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="grading", unit="pair", file=sys.stderr)


class _Busy:
    """A pair a worker is on, and when the worker last used any CPU."""

    def __init__(self, pair: Pair, pid: int) -> None:
        self.pair, self.pid = pair, pid
        self.cpu = _cpu_ticks(pid)
        self.progress = time.monotonic()

    def stalled(self, stall_s: float) -> bool:
        cpu = _cpu_ticks(self.pid)
        now = time.monotonic()
        if cpu is None or cpu != self.cpu:  # busy (or not measurable: then only CPU bounds it)
            self.cpu, self.progress = cpu, now
        return now - self.progress >= stall_s


def _cpu_ticks(pid: int) -> int | None:
    """User + system CPU time of a process in clock ticks (Linux ``/proc``), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _wait_ready(proc: subprocess.Popen) -> None:
    """Block until the worker has imported math-verify, so start-up is not charged to a pair."""
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("an answer-grading worker failed to start (is math-verify installed?)")


# -- inside a worker -----------------------------------------------------------------------------


def serve() -> None:
    """Worker loop: read ``[answer, truth, rule]`` lines on stdin, write ``true/false/null``
    lines. Sides arrive normalised (``answers.normalise``) and never both missing."""
    import resource
    import warnings

    from labeling.grading.as_prm800k import compare, sympy_equal_bounded

    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    limits = Limits(**config.get("limits", {}))
    budget = float(config.get("cpu_budget_s", CPU_BUDGET_S))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a worker stopped by its budget dumps nothing
    logging.disable(logging.WARNING)  # math-verify warns that its timeouts are off
    from math_verify import parse, verify

    sympy_equal = sympy_equal_bounded(limits)
    # after the imports, which install sympy's own filters: its deprecation notices on odd
    # answers ((1,2)-(2,1)) would fill the log
    warnings.simplefilter("ignore")

    @lru_cache(maxsize=4096)
    def parsed(text: str) -> list:
        # Pairs arrive sorted by truth: a problem's truth is parsed once for all its answers.
        if text_refusal(text, limits):
            return []
        result = parse(f"${text}$", parsing_timeout=None)
        if any(expression_refusal(item, limits) for item in result):
            return []
        return result

    # Answers go to the real stdout; anything a library prints goes to stderr instead.
    out, sys.stdout = sys.stdout, sys.stderr
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        _allow_cpu(resource, budget)
        answer, truth, rule = json.loads(line)
        result: bool | None
        if rule == PRM800K:
            result = compare(answer, truth, sympy_equal)
        else:
            # a wrapper around all of it goes: \text{A,B,E} is the list A,B,E
            gold, pred = parsed(unwrap(truth)), parsed(unwrap(answer))
            result = bool(verify(gold, pred, timeout_seconds=None)) if gold and pred else None
        out.write(json.dumps(result) + "\n")
        out.flush()


def _allow_cpu(resource: Any, budget: float) -> None:
    """Let this process use ``budget`` more CPU seconds, then be stopped by the kernel."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + budget)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
