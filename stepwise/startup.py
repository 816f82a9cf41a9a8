"""Refuse to start a web process or a worker whose database is unreachable, with a message that
says so, instead of serving ``/login/`` while every other page answers 500, or a worker that says
``ready`` and fails every job. ``stepwise/wsgi.py`` (gunicorn) and the Celery app's
``worker_init`` call it; ``manage.py`` commands do not (``migrate`` reports its own error)."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime

EXIT_CODE = 3  # gunicorn stops its master when a worker exits with 3 while booting


def say_and_exit_later(message: str) -> None:
    """Write why the process cannot start on stderr: as it is, or one JSON object with
    ``LOG_FORMAT=json`` (every line of the log is then JSON, this one too)."""
    if os.environ.get("LOG_FORMAT", "text") == "json":
        line = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "level": "CRITICAL",
            "logger": "stepwise.startup",
            "message": message,
        }
        sys.stderr.write(json.dumps(line) + "\n")
    else:
        sys.stderr.write(message + "\n")


def database_reachable_or_exit(process: str) -> None:
    """Connect once to the database; on failure, print why on stderr and exit."""
    from django.db import connection

    try:
        connection.ensure_connection()
    except Exception as error:
        db = connection.settings_dict
        engine = db["ENGINE"].rsplit(".", 1)[-1]
        where = str(db.get("NAME"))
        if db.get("HOST"):
            where = f"{where} on {db['HOST']}:{db.get('PORT') or 'its default port'}"
        say_and_exit_later(
            f"Stepwise {process} cannot start: the database ({engine}, {where}) is unreachable:"
            f" {type(error).__name__}: {str(error).strip()}\n"
            "Check DATABASE_URL (and that the database exists: createdb), then start again."
        )
        sys.stderr.flush()
        raise SystemExit(EXIT_CODE) from None
    finally:
        connection.close()  # the process opens its own when it needs one
