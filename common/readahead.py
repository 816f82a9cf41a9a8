"""Overlap a producer's work with its consumer's: run an iterator in a thread, a few items ahead.

An export reads batches from the database while it writes the previous ones out; an import
parses the next batch of a file while it writes the previous one to the database. On two cores
that overlaps one side's waiting (PostgreSQL, psycopg releases the GIL) with the other's Python
instead of adding them up.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar, cast

from django.db import connections

T = TypeVar("T")


class _Failed:
    """What the producer raised, handed over to be raised in the consumer."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def read_ahead(items: Iterator[T], *, depth: int = 1, name: str = "read-ahead") -> Iterator[T]:
    """The same items, produced in a thread at most ``depth`` items ahead of the consumer.

    An exception of the producer is raised in the consumer, at the item where it happened. A
    consumer that stops early stops the producer. The thread's database connections (Django's
    are per thread) are closed when it ends, so a producer that reads the database must not run
    inside the consumer's transaction (it would not see its writes).
    """
    handoff: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item: object) -> bool:
        """Hand over an item unless the consumer has gone."""
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(end)
        except BaseException as exc:
            put(_Failed(exc))
        finally:
            connections.close_all()

    producer = threading.Thread(target=produce, name=name, daemon=True)
    producer.start()
    try:
        while (item := handoff.get()) is not end:
            if isinstance(item, _Failed):
                raise item.exc
            yield cast(T, item)  # neither the end nor a failure: one of the items
    finally:
        stop.set()
        producer.join()
