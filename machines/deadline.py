"""A deadline for a whole request to a model endpoint, not only for each read.

httpx's timeouts bound each read and write: a server that drips one byte every few seconds never
trips them and holds its caller for ever. Every client ``machines.endpoints`` builds uses
:class:`DeadlineTransport`, whose sockets take the time left before the calling thread's deadline
(:func:`deadline`, set by ``machines.client.endpoint_post`` around each request) as the timeout of
every read, write and connection: at the deadline the request fails with httpx's own
``TimeoutException``, whatever the server sends. Without a deadline set, the transport is
httpx's own.
"""

from __future__ import annotations

import ssl
import threading
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager

import httpcore
import httpx

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Requests made by this thread inside the block end within ``seconds`` (an outer deadline
    that is sooner still holds)."""
    outer: float | None = getattr(_local, "at", None)
    at = time.monotonic() + seconds
    _local.at = at if outer is None else min(outer, at)
    try:
        yield
    finally:
        _local.at = outer


def deadline_passed() -> bool:
    """Whether this thread's deadline (if any) has passed."""
    at: float | None = getattr(_local, "at", None)
    return at is not None and time.monotonic() >= at


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left before this thread's deadline; ``error`` once it passed."""
    at: float | None = getattr(_local, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most until the deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = self.inner.start_tls(
            ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(inner)

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's synchronous sockets, each wrapped in a :class:`_DeadlineStream`."""

    def __init__(self) -> None:
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(
            host, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self.inner.connect_unix_socket(
            path, _left(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport (no proxy, HTTP/1.1) on sockets that keep the calling thread's
    deadline. httpx takes no network backend, so its connection pool is built again here with
    the same options and this one."""

    def __init__(
        self,
        *,
        limits: httpx.Limits,
        verify: ssl.SSLContext | str | bool = True,
    ) -> None:
        super().__init__(limits=limits, verify=verify, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(),
        )
