#!/usr/bin/env bash
# Runs the web server and a Celery worker (with beat) side by side; Ctrl-C stops both.
# The worker consumes every queue: `celery` (imports, snapshots, sweeps), `learning` (training,
# scoring, exports) and `long` (generation). To scale out, run workers per queue instead (docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
PORT=${PORT:-8000}
$BIN/celery -A stepwise worker -B --loglevel=INFO --concurrency=1 --pool=prefork \
  --queues=celery,learning,long --logfile=var/celery-worker.log &
WORKER=$!
trap 'kill $WORKER 2>/dev/null; wait $WORKER 2>/dev/null' EXIT INT TERM
echo
echo "Stepwise is running at http://127.0.0.1:${PORT}/  (Celery worker log: var/celery-worker.log)"
echo
$BIN/python manage.py runserver "127.0.0.1:${PORT}" --noreload
