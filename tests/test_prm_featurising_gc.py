"""Featurising collects garbage less often, and leaves the process's thresholds as it found them
(prm.runtime.featurising_gc), however its users overlap."""

from __future__ import annotations

import gc
import threading

import pytest

from prm.runtime import FEATURISING_GC_THRESHOLD, featurising_gc


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_the_young_threshold_is_raised_inside_and_put_back_after_an_error(thresholds):
    with featurising_gc():
        assert gc.get_threshold() == (FEATURISING_GC_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(ZeroDivisionError), featurising_gc():
        1 / 0  # noqa: B018
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_users_in_threads_leave_the_thresholds_as_they_were(thresholds):
    # The first thread in leaves before the second: the second must not restore the raised value.
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
            seen.append(gc.get_threshold())  # still raised: a featuriser is running

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [(FEATURISING_GC_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == (700, 10, 10)
