"""A test run and a benchmark each keep to a bounded number of database connections: the
server's max_connections (100) is shared by every process on it."""

from __future__ import annotations

import argparse
import threading
import time

import pytest

from bench.queue_claims import fit_connections
from tests import test_queue_concurrency


def test_the_concurrency_tests_hold_at_most_their_share_of_connections(monkeypatch):
    monkeypatch.setattr(test_queue_concurrency, "DB_THREADS", 4)
    lock, running, most, done = threading.Lock(), [0], [0], []

    def work(i):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        done.append(i)

    test_queue_concurrency.run_threads(work, [(i,) for i in range(50)])
    assert sorted(done) == list(range(50))
    assert most[0] <= 4


def test_the_default_share_leaves_most_connections_to_others():
    assert test_queue_concurrency.DB_THREADS <= 16


def _args(**changes):
    values = {"max_db_connections": 48, "workers": 3, "threads": 4, "raw_clients": 64}
    return argparse.Namespace(**(values | changes))


def test_the_queue_benchmark_fits_its_connections_under_the_bound():
    args = _args()
    assert fit_connections(args) == 48
    assert args.raw_clients == 48 - 12 - 2
    small = _args(raw_clients=8)
    assert fit_connections(small) == 12 + 8 + 2 and small.raw_clients == 8
    with pytest.raises(ValueError, match="leave no room"):
        fit_connections(_args(workers=8, threads=8))
