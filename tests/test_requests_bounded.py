"""The one bounded request loop (``requests_bounded``) that generation, machine evidence and the
served PRM share: at most K requests in flight, results in the order asked, requests read lazily,
the first fatal error raised with no request started after it."""

from __future__ import annotations

import threading

import pytest

from machines.client import requests_bounded


class Gate:
    """Requests that wait for the test to let them finish, counting how many run at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = self.most = 0
        self.started: list[int] = []
        self.release: dict[int, threading.Event] = {}

    def ask(self, n: int) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(n)
            event = self.release.setdefault(n, threading.Event())
        event.wait(timeout=10)
        with self.lock:
            self.running -= 1
        if n < 0:
            raise RuntimeError(f"request {n} failed")
        return n * 10

    def let(self, *ns: int) -> None:
        for n in ns:
            with self.lock:
                self.release.setdefault(n, threading.Event()).set()


def test_it_keeps_at_most_k_in_flight_and_yields_in_the_order_asked():
    gate = Gate()
    gate.let(*range(1, 20))  # every request but the first finishes at once

    def ask(n: int) -> int:
        if n == 19:  # the first one comes back only once the last has started
            gate.let(0)
        return gate.ask(n)

    assert list(requests_bounded(ask, range(20), concurrency=3)) == [n * 10 for n in range(20)]
    assert gate.most <= 3


def test_it_reads_the_requests_lazily_so_a_stopped_generator_stops_the_asking():
    gate = Gate()
    gate.let(*range(10))
    asked: list[int] = []

    def requests():
        for n in range(10):
            if len(asked) >= 4:
                return
            asked.append(n)
            yield n

    assert list(requests_bounded(gate.ask, requests(), concurrency=1)) == [0, 10, 20, 30]
    assert gate.started == [0, 1, 2, 3]


def test_the_first_fatal_error_is_raised_in_its_place_and_nothing_starts_after_it():
    gate = Gate()
    gate.let(0, 1, -1)
    results = requests_bounded(gate.ask, [0, 1, -1, 3, 4, 5], concurrency=1)
    assert next(results) == 0
    assert next(results) == 10
    with pytest.raises(RuntimeError, match="request -1 failed"):
        next(results)
    assert gate.started == [0, 1, -1]


def test_no_request_is_no_thread_and_no_result():
    assert list(requests_bounded(lambda n: n, [], concurrency=4)) == []
    with pytest.raises(ValueError):
        list(requests_bounded(lambda n: n, [1], concurrency=0))


def test_unordered_it_hands_each_result_over_as_soon_as_it_is_back():
    gate = Gate()
    gate.let(1, 2)  # the first request is held until the others are handed over
    results = requests_bounded(gate.ask, [0, 1, 2], concurrency=3, ordered=False)
    assert sorted([next(results), next(results)]) == [10, 20]
    gate.let(0)
    assert list(results) == [0]
    assert gate.most <= 3


def test_unordered_a_fatal_error_comes_after_the_results_running_beside_it():
    gate = Gate()
    gate.let(-1, 5)
    results = requests_bounded(gate.ask, [-1, 0, 5, 6], concurrency=2, ordered=False)
    gate.let(0)
    got = []
    with pytest.raises(RuntimeError, match="request -1 failed"):
        for result in results:
            got.append(result)
    assert got == [0]
    assert sorted(gate.started) == [-1, 0]  # nothing started after the failure was seen
