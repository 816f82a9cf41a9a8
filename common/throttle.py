"""Counting failures (wrong passwords, wrong API tokens) in sliding windows of Django's cache.

A fixed window resets: a guesser who spends the limit in the last second of one window gets the
limit again in the first second of the next. Here each key counts in slots of a tenth of the
window, and what is compared with the limit is the sum of the slots within one window of now, the
oldest weighted by how much of it still lies within it (a "sliding window counter"): failures age
out gradually, never all at once. Counts are increments of cache keys (atomic on Redis and within
one machine's file cache) and expire by themselves soon after a window.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The client's address. Behind a reverse proxy, ``STEPWISE_TRUSTED_PROXY_HOPS`` says how
    many proxies append to ``X-Forwarded-For`` (the client is that many entries from the end);
    without it the header is ignored, since anyone can send one."""
    hops = getattr(settings, "STEPWISE_TRUSTED_PROXY_HOPS", 0)
    if hops:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [a for a in forwarded if a]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def failure_key(kind: str, value: str) -> str:
    return "login-fail:" + kind + ":" + hashlib.sha256(value.encode()).hexdigest()[:32]


SLOTS = 10  # a window is counted in this many slots


class FailureCounter:
    """Failures per key (each with its limit) in sliding windows of ``window`` seconds.

    Counted in ``SLOTS`` slots per window: the last ``SLOTS`` slots count whole, the one before
    them by the share of it still within one window of now.
    """

    def __init__(self, limits: dict[str, int], *, window: int, now: float | None = None) -> None:
        self.limits = limits
        self.window = window
        self.length = max(1, -(-window // SLOTS))  # seconds per slot
        self.now = time.time() if now is None else now
        self.slot = int(self.now // self.length)
        self.elapsed = self.now - self.slot * self.length  # seconds into the current slot

    def _slot_key(self, key: str, slot: int) -> str:
        return f"{key}:{slot}"

    def blocked_for(self) -> int | None:
        """Seconds until the next attempt is accepted, or None when it is now.

        One cache read per key (a marker that ``failed`` sets once the limit is reached): this
        runs before every token-authenticated API request, the weighing only after a failure.
        """
        markers = cache.get_many([f"{key}:until" for key in self.limits])
        waits = [until - self.now for until in markers.values() if until > self.now]
        return max(1, math.ceil(max(waits))) if waits else None

    def _weigh(self) -> int | None:
        """Seconds until the counts weigh less than every limit, or None when they do now."""
        slots = range(self.slot, self.slot - SLOTS - 1, -1)
        counts = cache.get_many([self._slot_key(k, s) for k in self.limits for s in slots])
        waits = {}
        for key, limit in self.limits.items():
            recent = [counts.get(self._slot_key(key, s), 0) for s in slots]
            if (wait := self._wait(recent, limit)) is not None:
                waits[key] = wait
        for key, wait in waits.items():
            cache.set(f"{key}:until", self.now + wait, timeout=wait + 1)
        return max(waits.values()) if waits else None

    def _wait(self, counts: list[int], limit: int) -> int | None:
        """Seconds until ``counts`` (newest slot first) weigh less than ``limit``, if no other
        failure comes: the weight falls linearly, so each slot boundary starts a straight piece."""
        length, elapsed = self.length, self.elapsed
        for crossed in range(SLOTS + 1):
            whole = sum(counts[: SLOTS - crossed])
            oldest = counts[SLOTS - crossed]
            start = elapsed if crossed == 0 else 0.0
            offset = 0.0 if crossed == 0 else (length - elapsed) + (crossed - 1) * length
            if whole >= limit:
                continue
            if whole + oldest * (1 - start / length) < limit:
                return None if crossed == 0 else max(1, math.ceil(offset))
            until = length * (1 - (limit - whole) / oldest)
            return max(1, math.ceil(offset + until - start) + 1)
        return None

    def failed(self) -> None:
        for key in self.limits:
            slot_key = self._slot_key(key, self.slot)
            timeout = self.window + 2 * self.length
            cache.add(slot_key, 0, timeout=timeout)
            try:
                cache.incr(slot_key)
            except ValueError:  # expired between add and incr
                cache.set(slot_key, 1, timeout=timeout)
        self._weigh()
