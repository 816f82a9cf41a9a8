"""The ``stepwise`` command that a wheel installs (``pip install stepwise-*.whl``): the app without
a checkout, like its peers' ``label-studio start``.

- ``stepwise run [--demo] [--port 8000] [--host 127.0.0.1]``: what ``make run`` does: migrate,
  collect the static files, with ``--demo`` the demo campaign and its two logins, then a Celery
  worker (every queue, with beat) beside the web server; Ctrl-C stops both;
- ``stepwise worker [celery options]``: a worker alone (every queue and beat unless ``-Q`` or
  ``--no-beat`` says otherwise);
- ``stepwise import ...`` and ``stepwise export ...``: ``manage.py import_solutions`` and
  ``export_dataset``; ``stepwise createuser``: ``createsuperuser`` (a staff account);
- anything else is a ``manage.py`` command (``stepwise migrate``, ``stepwise seed_demo``...).

Settings come from the environment as in a checkout (docs/settings.md); the database, broker
folders, media and secret key live in ``$STEPWISE_HOME/var``, else ``./var`` (the directory the
command runs in).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

ALIASES = {
    "import": "import_solutions",
    "export": "export_dataset",
    "createuser": "createsuperuser",
}


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
    import django

    django.setup()


def _manage(*args: str) -> None:
    """One ``manage.py`` command in this process."""
    from django.core.management import execute_from_command_line

    execute_from_command_line(["stepwise", *args])


def _queues() -> str:
    from django.conf import settings

    return ",".join(settings.STEPWISE_QUEUES)


def worker_command(args: Sequence[str]) -> list[str]:
    """The Celery worker ``stepwise worker`` starts: every queue and beat, unless told."""
    given = list(args)
    beat = "--no-beat" not in given
    given = [a for a in given if a != "--no-beat"]
    command = [sys.executable, "-m", "celery", "-A", "stepwise", "worker", "--loglevel=INFO"]
    if not any(a in ("-Q", "--queues") or a.startswith("--queues=") for a in given):
        command.append(f"--queues={_queues()}")
    if beat and "-B" not in given and "--beat" not in given:
        command.append("-B")
    return [*command, *given]


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def run(argv: Sequence[str]) -> int:
    """``make run`` without make: migrate, static files, optionally the demo, worker + web."""
    parser = argparse.ArgumentParser(prog="stepwise run", description=run.__doc__)
    parser.add_argument("--demo", action="store_true", help="create the demo campaign and logins")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--no-worker", action="store_true", help="the web process alone")
    options = parser.parse_args(argv)
    from django.conf import settings

    _manage("migrate", "--noinput")
    _manage("collectstatic", "--noinput", "-v", "0")
    if options.demo:
        _manage("seed_demo")
    worker = None
    if not options.no_worker:
        log = settings.VAR_DIR / "celery-worker.log"
        command = worker_command(["--concurrency=1", "--pool=prefork", f"--logfile={log}"])
        worker = subprocess.Popen(command, start_new_session=True)
    # A supervisor's SIGTERM stops the web server as Ctrl-C does, and the worker with it.
    signal.signal(signal.SIGTERM, _stop)
    url = f"http://{options.host}:{options.port}/"
    where = f"  (Celery worker log: {settings.VAR_DIR / 'celery-worker.log'})" if worker else ""
    print(f"\nStepwise is running at {url}{where}; data in {settings.VAR_DIR}\n", flush=True)
    try:
        _manage("runserver", f"{options.host}:{options.port}", "--noreload")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``stepwise`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    name, rest = args[0], args[1:]
    _django()
    if name == "run":
        return run(rest)
    if name == "worker":
        return subprocess.call(worker_command(rest))
    _manage(ALIASES.get(name, name), *rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
