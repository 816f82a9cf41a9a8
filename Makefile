# The two commands: `make run` (demo app on the embedded defaults) and `make test` (whole suite).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export DJANGO_SETTINGS_MODULE := stepwise.settings
# Python keeps compiled modules (and pytest its rewritten test modules) in __pycache__, even where
# the environment says not to (PYTHONDONTWRITEBYTECODE=1 here): without them every test process
# compiles Django, torch and 170 test modules again, 4.4 s of each worker's collection.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: run test test-fast lint mypy mypy-baseline format lock clean-demo

$(VENV)/.installed: requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.lock
	touch $@

run: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v 0
	$(BIN)/python manage.py seed_demo
	./scripts/serve.sh

test: lint
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The inner loop: lint, layers, and every test that needs no browser, no Celery worker, no
# PostgreSQL and is not marked slow, on two processes (aimed at a minute on an idle 2-core machine, 50 s measured;
# docs/contributing.md says how to keep it there).
# Run `make test` before you push.
test-fast: lint
	$(BIN)/python -m pytest -q -n 2 -m "not browser and not celery and not postgres and not slow" $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python scripts/mypy_baseline.py check

# The type checker alone: strict on prm/ and common/, elsewhere no error beyond mypy-baseline.txt
# (docs/contributing.md, "Types"). `make mypy-baseline` rewrites the baseline from today's errors,
# never to more lines than pyproject's mypy_baseline_ceiling, which it lowers as the baseline shrinks.
mypy: $(VENV)/.installed
	$(BIN)/python scripts/mypy_baseline.py check

mypy-baseline: $(VENV)/.installed
	$(BIN)/python scripts/mypy_baseline.py update

format: $(VENV)/.installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Re-pin everything after changing the dependencies in pyproject.toml.
lock:
	rm -rf /tmp/stepwise-lock && $(PYTHON) -m venv /tmp/stepwise-lock
	/tmp/stepwise-lock/bin/pip install -q --upgrade pip
	/tmp/stepwise-lock/bin/pip install -q "torch==2.13.0" ".[dev]"
	/tmp/stepwise-lock/bin/pip freeze --exclude stepwise | sed 's/^torch==2.13.0+cpu/torch==2.13.0/' > requirements.lock
