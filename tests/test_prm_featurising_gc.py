"""Featurising turns Python's cyclic garbage collector off, makes no cycles for it to miss, and
leaves the process's collector as it found it (prm.runtime.featurising_gc), however its users
overlap."""

from __future__ import annotations

import gc
import threading

import pytest

from prm.runtime import featurising_gc


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_back_on_after_an_error(collector_on):
    with featurising_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), featurising_gc():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on):
    gc.disable()
    with featurising_gc():
        pass
    assert not gc.isenabled()


def test_overlapping_users_in_threads_leave_the_collector_as_it_was(collector_on):
    # The first thread in leaves before the second: the collector must stay off until the second
    # leaves too.
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def first():
        with featurising_gc():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second():
        first_in.wait(5)
        with featurising_gc():
            second_in.set()
            first_out.wait(5)
            seen.append(gc.isenabled())  # still off: a featuriser is running

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [False]
    assert gc.isenabled()


def test_featurising_real_solutions_leaves_next_to_no_cyclic_garbage(collector_on):
    # What makes turning the collector off safe: whatever featurising drops is freed by reference
    # counting. Real PRM800K, ProcessBench and GSM8K solutions and synthetic ones, the checks on.
    from prm.backbones.bow import BowBackbone
    from prm.feature_cache import Features
    from prm.latex import load_parser
    from tests.test_prm_checks_fast import corpus

    load_parser()
    rows = corpus()
    backbone = BowBackbone(buckets=1 << 12, dim=4, hidden=4)
    gc.collect()
    with featurising_gc():
        built = Features.build(backbone, rows)
    unreachable = gc.collect()
    assert built.items > 4000
    assert unreachable < built.items / 100, (unreachable, built.items)
