"""Final-answer grading: pull the answer out of a solution, decide whether it equals the truth.

``math-verify`` does the mathematics, with three precautions learnt the hard way (NOTES.md):

- both sides are wrapped in ``$...$``: on a bare string ``parse()`` silently fails on answers
  such as ``\\dfrac{1}{9}`` or ``900,\\!000``;
- it bounds its own work with ``signal.alarm``, which only works in a process's main thread and
  does not interrupt a computation stuck inside C code. So it runs in separate worker processes
  (plain subprocesses, so that this also works inside a daemonic Celery worker), and a worker
  that stays silent past a hard per-answer limit is killed and replaced;
- pairs are graded once: a campaign has many solutions but few distinct (answer, truth) pairs.

A pair grades ``True``/``False``; ``None`` means it could not be decided: no answer, no truth,
an answer math-verify cannot parse, or a comparison that ran out of time.

Nothing here imports Django except :func:`solutions_grade`, which does so lazily: the worker
processes import this module without settings.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.db.models import QuerySet

# math-verify's own limits (seconds, whole numbers: signal.alarm). A comparison that uses all of
# its time is reported as undecided rather than as math-verify's silent False.
PARSE_TIMEOUT = 3
VERIFY_TIMEOUT = 3
# A worker that has not answered a pair after this long is killed (the alarm did not fire).
HARD_LIMIT = 20.0
WORKERS = max(1, min(4, os.cpu_count() or 1))

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_PRM800K_ANSWER = re.compile(r"^#\s*Answer\s*$", re.MULTILINE)
_GSM8K_HASHES = re.compile(r"^####\s*(.+?)\s*$", re.MULTILINE)
_GSM8K_A = re.compile(r"^A:\s*(.+?)\s*$", re.MULTILINE)
_INTEGER = re.compile(r"[+-]?\d{1,100}")


def extract_answer(text: str | None) -> str | None:
    """The final answer a solution text states, or ``None``.

    In order: PRM800K's closing ``# Answer`` section, GSM8K's ``#### x`` or ``A: x`` as the last
    line, else the last ``\\boxed{...}`` (MATH, Qwen). Explicit end markers win because a PRM800K
    or GSM8K solution may box intermediate results along the way.
    """
    if not text:
        return None
    text = text.strip()
    if marks := list(_PRM800K_ANSWER.finditer(text)):
        answer = text[marks[-1].end() :].strip()
        return answer or None
    last_line = text.rsplit("\n", 1)[-1]
    for pattern in (_GSM8K_HASHES, _GSM8K_A):
        if m := pattern.match(last_line):
            return m.group(1)
    return _last_boxed(text)


def _last_boxed(text: str) -> str | None:
    starts = list(_BOXED.finditer(text))
    if not starts:
        return None
    i = starts[-1].end()
    depth = 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip() or None
    return None  # unbalanced: the answer was cut off


def normalise(answer: str | None) -> str | None:
    """Whitespace and surrounding ``$`` removed; ``None`` for an empty answer."""
    if answer is None:
        return None
    answer = answer.strip().strip("$").strip()
    return answer or None


def grade(answer: str | None, truth: str | None) -> bool | None:
    """Whether ``answer`` equals ``truth`` mathematically (``None``: undecidable)."""
    return Grader.shared().grade_many([(answer, truth)])[(answer, truth)]


def _quick(answer: str | None, truth: str | None) -> tuple[bool, bool | None]:
    """(decided, result) for pairs that need no math-verify: a missing side, identical strings,
    two plain integers (math-verify would agree; it just takes milliseconds to)."""
    a, t = normalise(answer), normalise(truth)
    if a is None or t is None:
        return True, None
    if a == t:
        return True, True
    if _INTEGER.fullmatch(a) and _INTEGER.fullmatch(t):
        return True, int(a) == int(t)
    return False, None


class Grader:
    """A few worker processes grading (answer, truth) pairs, each under a hard time limit.

    Workers start on first use and are reused; ``close()`` stops them. ``shared()`` is one per
    process, closed at exit.
    """

    _shared: Grader | None = None

    def __init__(self, *, workers: int = WORKERS, hard_limit: float = HARD_LIMIT) -> None:
        self.size = workers
        self.hard_limit = hard_limit
        self._procs: list[subprocess.Popen] = []
        self.killed = 0

    @classmethod
    def shared(cls) -> Grader:
        if cls._shared is None:
            cls._shared = cls()
            atexit.register(cls._shared.close)
        return cls._shared

    def grade_many(
        self, pairs: Iterable[tuple[str | None, str | None]], *, progress: bool = False
    ) -> dict[tuple[str | None, str | None], bool | None]:
        """Grade each distinct pair once; returns pair -> result."""
        results: dict[tuple[str | None, str | None], bool | None] = {}
        todo: list[tuple[str | None, str | None]] = []
        for pair in pairs:
            if pair in results:
                continue
            decided, result = _quick(*pair)
            results[pair] = result
            if not decided:
                todo.append(pair)
        if todo:
            todo.sort(key=lambda pair: pair[1])  # see serve()
            bar = _bar(len(todo), progress)
            for pair, result in self._run(todo, bar):
                results[pair] = result
            if bar is not None:
                bar.close()
        return results

    def _run(self, todo: list[tuple], bar):
        """Feed pairs to idle workers; yield (pair, result) as answers come back."""
        new = [_spawn() for _ in range(min(self.size, len(todo)) - len(self._procs))]
        for proc in new:
            _wait_ready(proc)
        self._procs += new
        pending = list(reversed(todo))
        busy: dict[subprocess.Popen, tuple[tuple, float]] = {}
        sel = selectors.DefaultSelector()
        try:
            while pending or busy:
                for proc in list(self._procs):
                    if proc not in busy and pending:
                        pair = pending.pop()
                        a, t = normalise(pair[0]), normalise(pair[1])
                        try:
                            proc.stdin.write(json.dumps([a, t]) + "\n")
                            proc.stdin.flush()
                        except (BrokenPipeError, OSError):
                            pending.append(pair)
                            self._replace(proc)
                            continue
                        busy[proc] = (pair, time.monotonic())
                        sel.register(proc.stdout, selectors.EVENT_READ, proc)
                if not busy:
                    continue
                oldest = min(started for _, started in busy.values())
                wait = max(0.0, oldest + self.hard_limit - time.monotonic())
                for key, _ in sel.select(timeout=wait):
                    proc = key.data
                    sel.unregister(proc.stdout)
                    pair, _ = busy.pop(proc)
                    try:
                        result = json.loads(proc.stdout.readline())
                    except ValueError:  # the worker died on this pair
                        self._replace(proc)
                        result = None
                    yield pair, result
                    if bar is not None:
                        bar.update(1)
                now = time.monotonic()
                for proc, (pair, started) in list(busy.items()):
                    if now - started >= self.hard_limit:
                        sel.unregister(proc.stdout)
                        del busy[proc]
                        self.killed += 1
                        self._replace(proc)
                        yield pair, None
                        if bar is not None:
                            bar.update(1)
        finally:
            sel.close()
            # Anything still busy (we were interrupted) is in an unknown state: drop it.
            for proc in busy:
                self._replace(proc, respawn=False)

    def _replace(self, proc: subprocess.Popen, *, respawn: bool = True) -> None:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            stream.close()
        self._procs.remove(proc)
        if respawn:
            fresh = _spawn()
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


def _bar(total: int, progress: bool):
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="grading", unit="pair", file=sys.stderr)


def _spawn() -> subprocess.Popen:
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", "from labeling.grading import serve; serve()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        env=env,
        cwd=root,
    )


def _wait_ready(proc: subprocess.Popen) -> None:
    """Block until the worker has imported math-verify, so start-up is not charged to a pair."""
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("an answer-grading worker failed to start (is math-verify installed?)")


def serve() -> None:
    """Worker loop: read ``[answer, truth]`` lines on stdin, write ``true/false/null`` lines."""
    logging.disable(logging.WARNING)  # math-verify logs every timeout
    from math_verify import parse, verify

    @lru_cache(maxsize=4096)
    def parsed(text: str) -> list:
        # Pairs arrive sorted by truth: a problem's truth is parsed once for all its answers.
        return parse(f"${text}$", parsing_timeout=PARSE_TIMEOUT)

    # Answers go to the real stdout; anything a library prints goes to stderr instead.
    out, sys.stdout = sys.stdout, sys.stderr
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        answer, truth = json.loads(line)
        out.write(json.dumps(_verify(parsed, verify, answer, truth)) + "\n")
        out.flush()


def _verify(parsed, verify, answer: str, truth: str) -> bool | None:
    gold, pred = parsed(truth), parsed(answer)
    if not gold or not pred:
        return None
    started = time.monotonic()
    ok = verify(gold, pred, timeout_seconds=VERIFY_TIMEOUT)
    if not ok and time.monotonic() - started >= VERIFY_TIMEOUT:
        return None  # math-verify reports a timeout as False; we do not know
    return bool(ok)


@dataclass
class GradingResult:
    solutions: int = 0  # solutions looked at
    graded: int = 0  # of which now True or False
    pairs: int = 0  # distinct (answer, truth) pairs
    seconds: float = 0.0


def solutions_grade(
    *, solutions: QuerySet, regrade: bool = False, progress: bool = False, chunk: int = 2000
) -> GradingResult:
    """Set ``answer_is_correct`` on these solutions from their answer and problem's truth.

    Only ungraded ones unless ``regrade``. A solution without an answer, or whose problem has no
    ground-truth answer, stays null; so does one whose pair cannot be decided.
    """
    from labeling.models import Solution

    started = time.monotonic()
    if not regrade:
        solutions = solutions.filter(answer_is_correct__isnull=True)
    rows = (
        solutions.exclude(answer__isnull=True)
        .exclude(answer="")
        .exclude(problem__ground_truth_answer="")
        .values_list("pk", "answer", "problem__ground_truth_answer")
        .order_by()
    )
    by_pair: dict[tuple[str, str], list[int]] = {}
    n = 0
    for pk, answer, truth in rows.iterator(chunk_size=chunk):
        by_pair.setdefault((answer, truth), []).append(pk)
        n += 1
    results = Grader.shared().grade_many(by_pair, progress=progress)
    graded = 0
    for value in (True, False, None):
        ids = [pk for pair, pks in by_pair.items() if results[pair] is value for pk in pks]
        if value is not None:
            graded += len(ids)
        elif not regrade:
            continue  # already null
        for i in range(0, len(ids), chunk):
            Solution.objects.filter(pk__in=ids[i : i + chunk]).update(answer_is_correct=value)
    return GradingResult(
        solutions=n, graded=graded, pairs=len(by_pair), seconds=time.monotonic() - started
    )
