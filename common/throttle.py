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
import ipaddress
import logging
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

log = logging.getLogger(__name__)


def client_ip(request: HttpRequest) -> str:
    """The client's address. Behind reverse proxies, ``STEPWISE_TRUSTED_PROXY_HOPS`` says how
    many of them append to ``X-Forwarded-For`` (the client is that many entries from the end),
    and, where ``STEPWISE_TRUSTED_PROXIES`` lists them, the header is believed only from those
    addresses (a client that reaches the app directly cannot make up its own). Without hops the
    header is ignored, since anyone can send one: then every request through a proxy has the
    proxy's address, which is logged once so that the operator can set the hops."""
    remote = request.META.get("REMOTE_ADDR", "") or "unknown"
    forwarded_for = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = getattr(settings, "STEPWISE_TRUSTED_PROXY_HOPS", 0)
    if not hops:
        if forwarded_for:
            _warn_untrusted_forwarding(remote)
        return remote
    if not _from_trusted_proxy(remote):
        return remote
    forwarded = [a.strip() for a in forwarded_for.split(",") if a.strip()]
    if len(forwarded) >= hops:
        client = forwarded[-hops]
        try:
            return str(ipaddress.ip_address(client.strip("[]")))
        except ValueError:
            return remote  # not an address: the header was garbled somewhere
    return remote


def _from_trusted_proxy(remote: str) -> bool:
    trusted = getattr(settings, "STEPWISE_TRUSTED_PROXIES", []) or []
    if not trusted:
        return True
    try:
        address = ipaddress.ip_address(remote)
    except ValueError:
        return False
    for network in trusted:
        try:
            if address in ipaddress.ip_network(network, strict=False):
                return True
        except ValueError:  # refused when the settings load; never a 500 here
            continue
    return False


_warned: set[str] = set()


def _warn_untrusted_forwarding(remote: str) -> None:
    if remote not in _warned:
        _warned.add(remote)
        log.warning(
            "requests from %s carry X-Forwarded-For but STEPWISE_TRUSTED_PROXY_HOPS is 0: "
            "behind a reverse proxy every client then has its address for the throttles "
            "(docs/security.md)",
            remote,
        )


def _warn_cache_failed(error: Exception) -> None:
    """The throttles fail open when the cache fails: a guesser gets more tries for a while,
    nobody is locked out, and the operator reads why. (The Redis backend, common/cache.py,
    already answers as an empty cache while Redis is down; this covers any other failure.)"""
    log.warning("login throttling is off: the cache failed (%s: %s)", type(error).__name__, error)


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
        try:
            markers = cache.get_many([f"{key}:until" for key in self.limits])
        except Exception as error:  # a cache that fails: fail open, never a 500
            _warn_cache_failed(error)
            return None
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
        """Count one failure for every key (and set the wait markers); a cache that fails
        counts nothing (fail open: logged, never a 500)."""
        try:
            self._count()
        except Exception as error:
            _warn_cache_failed(error)

    def _count(self) -> None:
        for key in self.limits:
            slot_key = self._slot_key(key, self.slot)
            timeout = self.window + 2 * self.length
            cache.add(slot_key, 0, timeout=timeout)
            try:
                cache.incr(slot_key)
            except ValueError:  # expired between add and incr
                cache.set(slot_key, 1, timeout=timeout)
        self._weigh()
