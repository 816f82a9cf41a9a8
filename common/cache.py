"""A Redis cache that an outage of Redis cannot turn into 500s.

The cache holds only what can be lost or recomputed: login-throttling counts, which workers
consume which queue, the labelling page's progress, step scores. With Django's own Redis backend
every read raises ``redis.ConnectionError`` while Redis is down, so the login page, the API's
token check and ``/metrics`` answered 500 (issue 41). Here every operation that cannot reach Redis
answers as a cache that does not have the key (a read gives the default, a write is dropped), and
logs one warning per outage. For ``STEPWISE_CACHE_RETRY_SECONDS`` after a failure Redis is not
asked at all, so a Redis that times out (instead of refusing at once) costs one short timeout per
process per interval, not one per request. Throttles then fail open (``common/throttle.py``): a
guesser gets more tries while Redis is down; nobody is locked out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache

log = logging.getLogger(__name__)
T = TypeVar("T")


class ResilientRedisCache(RedisCache):
    """Django's ``RedisCache``, answering as an empty cache while Redis cannot be reached."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = dict(params.get("OPTIONS") or {})
        # redis-py waits for ever by default on a host that drops packets.
        options.setdefault("socket_connect_timeout", 1.0)
        options.setdefault("socket_timeout", 1.0)
        super().__init__(server, {**params, "OPTIONS": options})
        self._down_until = 0.0
        self._lock = threading.Lock()

    def _guard(self, call: Callable[[], T], default: T) -> T:
        import redis

        if time.monotonic() < self._down_until:
            return default
        try:
            result = call()
        except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
            retry = float(getattr(settings, "STEPWISE_CACHE_RETRY_SECONDS", 5))
            with self._lock:
                first = self._down_until == 0.0
                self._down_until = time.monotonic() + retry
            if first:
                log.warning(
                    "the cache (Redis) cannot be reached: %s: %s; serving without it (throttles "
                    "fail open, figures are recomputed) and trying again every %g s",
                    type(error).__name__,
                    error,
                    retry,
                )
            return default
        if self._down_until:
            with self._lock:
                self._down_until = 0.0
            log.warning("the cache (Redis) answers again")
        return result

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> bool:
        return self._guard(
            lambda: super(ResilientRedisCache, self).add(key, value, timeout, version), False
        )

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        return self._guard(
            lambda: super(ResilientRedisCache, self).get(key, default, version), default
        )

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None
    ) -> None:
        self._guard(
            lambda: super(ResilientRedisCache, self).set(key, value, timeout, version), None
        )

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        return self._guard(
            lambda: super(ResilientRedisCache, self).touch(key, timeout, version), False
        )

    def delete(self, key: Any, version: Any = None) -> bool:
        return self._guard(lambda: super(ResilientRedisCache, self).delete(key, version), False)

    def get_many(self, keys: Any, version: Any = None) -> dict[Any, Any]:
        return self._guard(lambda: super(ResilientRedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: Any = None) -> bool:
        return self._guard(lambda: super(ResilientRedisCache, self).has_key(key, version), False)

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> int:
        missing = object()
        value = self._guard(
            lambda: super(ResilientRedisCache, self).incr(key, delta, version), missing
        )
        if value is missing:
            raise ValueError(f"Key '{key}' not found (the cache cannot be reached)")
        return value  # type: ignore[return-value]

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> list[Any]:
        return self._guard(
            lambda: super(ResilientRedisCache, self).set_many(data, timeout, version), list(data)
        )

    def delete_many(self, keys: Any, version: Any = None) -> None:
        self._guard(lambda: super(ResilientRedisCache, self).delete_many(keys, version), None)

    def clear(self) -> None:
        self._guard(lambda: super(ResilientRedisCache, self).clear(), None)
