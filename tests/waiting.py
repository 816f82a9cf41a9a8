"""Waiting in tests for something another process or thread does: one loop for all of them.

A test that starts a worker, a server or a second connection polls until what it waits for is
there. The bound is a failure bound, never a timing assertion (a slow machine only waits
longer), and the wait stops at once when a process it depends on has exited, since nothing
would change then. On failure the test says what it waited for and shows the log it names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T | None],
    *,
    what: str,
    seconds: float,
    every: float = 0.1,
    processes: Iterable[Any] = (),
    log: Callable[[], str] | None = None,
) -> T:
    """Call ``condition`` every ``every`` seconds until it returns something true; return that.

    Fails the test when ``seconds`` pass or one of ``processes`` (anything with ``poll()``, as
    ``subprocess.Popen``) has exited first; the failure names ``what`` and ends with ``log()``.
    """
    processes = list(processes)
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if any(p.poll() is not None for p in processes):
            reason = "a process it needed exited while waiting for"
            break
        if time.monotonic() >= deadline:
            reason = f"timed out after {seconds:g} s waiting for"
            break
        time.sleep(every)
    pytest.fail(f"{reason} {what}" + (f"\n{log()}" if log else ""))


def log_tail(*processes: Any, chars: int = 5000) -> Callable[[], str]:
    """The end of each worker's log (``log_path``, as the worker fixtures give it), read when
    a wait fails."""
    return lambda: "\n".join(p.log_path.read_text(errors="replace")[-chars:] for p in processes)


def answers(call: Callable[[], T], *errors: type[BaseException]) -> Callable[[], T | None]:
    """``call`` as a condition that is not met (None) while it raises one of ``errors``: a server
    still starting refuses connections."""

    def condition() -> T | None:
        try:
            return call()
        except errors:
            return None

    return condition
