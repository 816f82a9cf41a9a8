"""What every background job shares beyond its row (``common.models.BackgroundJob``).

``JobBeat`` writes a running job's liveness or progress from a thread with its own database
connection: the job itself works inside one long transaction (an import) or one long call (PRM
training), and whatever it wrote there would only be seen at its end. Import jobs report their
phase and progress with it; active-learning runs beat their heartbeat, which the recovery sweep
reads to tell a live run from one whose worker died.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import OperationalError, connection, connections

log = logging.getLogger(__name__)


class JobBeat:
    """Calls ``tick()`` every ``every`` seconds from a thread, until stopped.

    The thread has its own connection. On SQLite (one writer at a time) a tick that finds the
    database busy with the job's own transaction is skipped, not waited for; any other error of
    a tick is logged and the next tick tries again. Use it as a context manager, or ``start()``
    and ``stop()``.
    """

    def __init__(self, tick: Callable[[], None], *, every: float, name: str) -> None:
        self.tick = tick
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def __enter__(self) -> JobBeat:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        try:
            if connection.vendor == "sqlite":
                with connection.cursor() as cursor:
                    cursor.execute("PRAGMA busy_timeout = 0")
            while not self._stop.wait(self.every):
                try:
                    self.tick()
                except OperationalError:
                    pass  # SQLite busy with the job's own transaction: next tick
                except Exception:
                    log.debug("%s: tick failed", self._thread.name, exc_info=True)
        finally:
            connections.close_all()  # this thread's connections only
