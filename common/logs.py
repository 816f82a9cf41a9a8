"""Logs an operator can follow: every line of a request or a job carries its ids.

``log_context(**ids)`` adds ids to every log line written inside it, in this thread or task
(a ``ContextVar``, read only by logging): the request's middleware adds ``request_id``,
``user_id`` and ``campaign``; ``common.jobs.job_run`` adds ``job_kind``, ``job_id`` and
``campaign``. ``ContextFilter`` puts them on each record, and ``JsonFormatter`` writes one JSON
object a line (``LOG_FORMAT=json``; stepwise/settings.py; gunicorn's own lines and its access
log too, through stepwise/gunicorn_conf.py). ``RequestLogMiddleware`` also writes one line per
request (logger ``stepwise.requests``, level INFO) and answers with the request's
id in ``X-Request-ID`` (a proxy's own id, when it sends a well-formed one, is kept).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

CONTEXT_FIELDS = ("request_id", "user_id", "campaign", "job_kind", "job_id")
_context: ContextVar[dict[str, Any] | None] = ContextVar("stepwise_log_context", default=None)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
requests_log = logging.getLogger("stepwise.requests")


@contextmanager
def log_context(**ids: Any) -> Iterator[None]:
    """Every log line written inside carries ``ids`` (those that are not None)."""
    token = _context.set(
        {**(_context.get() or {}), **{k: v for k, v in ids.items() if v is not None}}
    )
    try:
        yield
    finally:
        _context.reset(token)


def log_context_add(**ids: Any) -> None:
    """Add ids to the context of the current ``log_context`` (the request learns its user late)."""
    current = _context.get()
    if current is not None:
        current.update({k: v for k, v in ids.items() if v is not None})


class ContextFilter(logging.Filter):
    """Puts the current ``log_context`` ids on every record (as attributes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_context.get() or {}).items():
            setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC), level, logger, message, the context's ids, and the
    traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in (*CONTEXT_FIELDS, "method", "path", "status", "duration_ms"):
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            line.update(_access_fields(record.args))
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


# gunicorn's access-log atoms (its ``access_log_format`` letters) and the fields they become.
_ACCESS_ATOMS = {"h": "remote", "m": "method", "U": "path", "q": "query", "s": "status"}


def _access_fields(atoms: dict[str, Any]) -> dict[str, Any]:
    """The fields of a gunicorn access-log line (its record's ``args`` are gunicorn's atoms)."""
    fields: dict[str, Any] = {}
    for atom, name in _ACCESS_ATOMS.items():
        value = atoms.get(atom)
        if value not in (None, "", "-"):
            fields[name] = value
    if isinstance(atoms.get("D"), int):
        fields["duration_ms"] = round(atoms["D"] / 1000, 1)
    if isinstance(atoms.get("B"), int):
        fields["bytes"] = atoms["B"]
    with suppress(KeyError, TypeError, ValueError):
        fields["status"] = int(fields["status"])
    return fields


class RequestLogMiddleware:
    """Gives each request an id and the log context of its user and campaign; one log line per
    request (``stepwise.requests``, INFO) with its status and duration."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get("X-Request-ID", "")
        request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        started = time.perf_counter()
        with log_context(request_id=request_id):
            response = self.get_response(request)
            # The API authenticates inside the view, so the user is read after it.
            log_context_add(user_id=_user_id(request))
            requests_log.info(
                "%s %s %s",
                request.method,
                request.path,
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
        response["X-Request-ID"] = request_id
        return response

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> None:
        log_context_add(user_id=_user_id(request), campaign=view_kwargs.get("slug"))


def _user_id(request: HttpRequest) -> int | None:
    """The request's user's id, or None: anonymous, or unknown because the session cannot be
    read (the database is down: ``/healthz`` and ``/metrics`` still answer, and so does the log
    line)."""
    user = getattr(request, "user", None)
    try:
        return user.pk if user is not None and user.is_authenticated else None
    except DatabaseError:
        return None
