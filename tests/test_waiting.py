"""The tests' one wait loop (``tests.waiting``): what it returns and how it fails."""

from __future__ import annotations

import itertools

import pytest

from tests.waiting import answers, wait_until


class Exited:
    def poll(self) -> int:
        return 1


def test_it_returns_what_the_condition_gave_once_it_holds():
    counter = itertools.count()
    assert (
        wait_until(lambda: next(counter) >= 3 and "ready", what="x", seconds=5, every=0) == "ready"
    )


def test_it_fails_naming_what_it_waited_for_and_the_log():
    with pytest.raises(pytest.fail.Exception, match=r"timed out .* the answer\nthe log"):
        wait_until(lambda: False, what="the answer", seconds=0.01, every=0, log=lambda: "the log")


def test_it_stops_at_once_when_a_process_it_needs_has_exited():
    with pytest.raises(pytest.fail.Exception, match="a process it needed exited"):
        wait_until(lambda: None, what="a worker", seconds=60, processes=[Exited()])


def test_an_error_the_caller_expects_counts_as_not_yet():
    calls = itertools.count()

    def starting() -> str:
        if next(calls) < 2:
            raise ConnectionError
        return "up"

    assert wait_until(answers(starting, ConnectionError), what="x", seconds=5, every=0) == "up"
