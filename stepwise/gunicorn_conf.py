"""gunicorn's settings for the web process (``--config python:stepwise.gunicorn_conf``).

With ``LOG_FORMAT=json`` every line the web process writes is one JSON object: the app's lines
already are (``LOGGING``, common/logs.py), but gunicorn's own (starting, listening, booting and
stopping workers, a worker that failed) and its access log are written by gunicorn's loggers,
which the app's configuration does not reach (they are set up in the master, before the app is
loaded). This gives them the same formatter, so that a log pipeline parses every line. With
``text`` (the default) gunicorn's own format is kept.
"""

from __future__ import annotations

import os
from typing import Any


def _json_logging() -> dict[str, Any]:
    """gunicorn's ``logconfig_dict``: its error log to stderr and its access log to stdout, as
    gunicorn does, through ``common.logs.JsonFormatter``; nothing propagates to the root logger
    (whose handler the app configures once it is loaded: each line would be written twice)."""
    level = os.environ.get("LOG_LEVEL", "INFO").upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "common.logs.JsonFormatter"}},
        "handlers": {
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            },
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stdout",
            },
        },
        "root": {"level": "WARNING", "handlers": ["error_console"]},
        "loggers": {
            "gunicorn.error": {
                "level": "INFO" if level == "WARNING" else level,
                "handlers": ["error_console"],
                "propagate": False,
            },
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False},
        },
    }


if os.environ.get("LOG_FORMAT", "text") == "json":
    logconfig_dict = _json_logging()
