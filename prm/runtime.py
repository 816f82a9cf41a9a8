"""Where the PRM runs: how many CPU threads, which device, seeds, Python's garbage collector
while featurising.

A Celery worker may run this beside other work, so the thread count is explicit: ``PRM_NUM_THREADS``
when set; else one thread for ``bow`` (its operations are tiny: on this 2-core machine, with another
process busy, a second thread made an embedding-bag step 25x *slower* waiting for it), and for the
transformer backbones the CPUs this process may use, at most 8. ``PRM_DEVICE`` forces a device;
otherwise CUDA when present.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import torch

_configured = False
S = TypeVar("S")
P = TypeVar("P")
R = TypeVar("R")


def configure_threads(backbone: str = "minilm") -> int:
    """Set torch's intra-op threads for ``backbone`` and return the number."""
    global _configured
    env = os.environ.get("PRM_NUM_THREADS")
    if env:
        n = max(1, int(env))
    elif backbone == "bow":
        n = 1
    else:
        try:
            n = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            n = os.cpu_count() or 1
        n = max(1, min(n, 8))
    if not _configured or torch.get_num_threads() != n:
        torch.set_num_threads(n)
        _configured = True
    return n


def runtime_threads() -> int:
    """torch's intra-op thread count now (what ``configure_threads`` set)."""
    return torch.get_num_threads()


def pick_device(requested: str | None = None) -> torch.device:
    name = requested or os.environ.get("PRM_DEVICE")
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


_gc_lock = threading.Lock()
_gc_users = 0  # featurisers running now in this process (threads of a web process, say)
_gc_was_enabled = True


@contextmanager
def featurising_gc() -> Iterator[None]:
    """Python's cyclic garbage collector, off while steps are featurised.

    Featurising makes and drops millions of small objects (tokens, parsed expressions and their
    closures) and no cycles worth collecting (``tests/test_prm_featurising_gc.py`` holds it to
    that: under one cyclic object in 100 steps of real solutions), but every few thousand
    allocations start a collection that walks the young objects, and some of those walk the
    whole heap (the solutions being featurised, the parse caches). At CPython's default
    threshold they were 28% of featurising's CPU (4,000 synthetic solutions in one process: 136
    -> 105 us a step with the threshold at 10,000); in the forked featurising processes of a
    cold rescoring, still 15% with it (40,000 synthetic solutions in 8 chunks: 8.3 of 55.6 CPU
    s), and with the collector off the chunks took 47.5 CPU s instead of 58.9, peak memory the
    same (0.48-0.56 GB a process). The switch is the process's: the first featuriser in turns
    automatic collection off and the last one out turns it back on (if it was on), so
    featurisers in several threads (the item page's step scores in a threaded web process) never
    leave it off, and whatever cycles other threads make meanwhile are collected afterwards.
    Nothing about the features changes.
    """
    global _gc_users, _gc_was_enabled
    with _gc_lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_was_enabled:
                gc.enable()


# What the forked processes of ``forked_map`` share: set before they fork, never pickled.
_FORKED: Any = None


def _forked_call(fn: Callable[[Any, Any], Any], part: Any) -> Any:
    return fn(_FORKED, part)


def forked_map(fn: Callable[[S, P], R], shared: S, parts: Iterable[P], *, workers: int) -> list[R]:
    """``fn(shared, part)`` for every part, in ``workers`` forked processes; results in order.

    The one process pool of the PRM: featurising is pure Python, so processes share it, and
    ``shared`` (a loaded model, the featuriser, arrays of jobs) reaches them by ``fork`` rather
    than by pickling. Each part is sent as soon as ``parts`` yields it, so a caller that reads its
    input as it goes (rescoring reads the database) overlaps reading with the work. The children
    run torch on one thread each and without the cyclic collector (``featurising_gc``; they
    inherit both). With one worker, or inside a daemonic process (a Celery prefork child, which may
    not have children), everything runs here, in order.
    """
    global _FORKED
    if workers <= 1 or multiprocessing.current_process().daemon:
        return [fn(shared, part) for part in parts]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    _FORKED = shared
    try:
        with featurising_gc(), multiprocessing.get_context("fork").Pool(workers) as pool:
            pending = [pool.apply_async(_forked_call, (fn, part)) for part in parts]
            return [result.get() for result in pending]
    finally:
        _FORKED = None
        torch.set_num_threads(threads)
