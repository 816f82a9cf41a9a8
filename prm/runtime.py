"""Where the PRM runs: how many CPU threads, which device, seeds, how often Python collects garbage
while featurising.

A Celery worker may run this beside other work, so the thread count is explicit: ``PRM_NUM_THREADS``
when set; else one thread for ``bow`` (its operations are tiny: on this 2-core machine, with another
process busy, a second thread made an embedding-bag step 25x *slower* waiting for it), and for the
transformer backbones the CPUs this process may use, at most 8. ``PRM_DEVICE`` forces a device;
otherwise CUDA when present.
"""

from __future__ import annotations

import gc
import os
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

_configured = False


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


# Allocations between two young-generation collections while featurising (CPython's default: 700).
FEATURISING_GC_THRESHOLD = 10_000


_gc_lock = threading.Lock()
_gc_users = 0  # featurisers running now in this process (threads of a web process, say)
_gc_before: tuple[int, int, int] = (700, 10, 10)


@contextmanager
def featurising_gc() -> Iterator[None]:
    """Python's cyclic garbage collector, run less often while steps are featurised.

    Featurising makes and drops millions of small objects (tokens, parsed expressions and their
    closures) and no cycles worth collecting, but every 700 allocations start a collection and
    every hundredth of those walks the whole heap (the solutions being featurised, the parse
    caches). Those collections were 28% of featurising's CPU (4,000 synthetic solutions: 136 ->
    105 us a step, peak memory the same, 474 MB). They still run here, less often. The thresholds
    are the process's: the first featuriser in raises them and the last one out puts them back,
    so featurisers in several threads (the item page's step scores in a threaded web process)
    never leave them raised. Nothing about the features changes.
    """
    global _gc_users, _gc_before
    with _gc_lock:
        if _gc_users == 0:
            _gc_before = gc.get_threshold()
            young, *older = _gc_before
            gc.set_threshold(max(young, FEATURISING_GC_THRESHOLD), *older)
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0:
                gc.set_threshold(*_gc_before)
