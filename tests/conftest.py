from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; Django must still allow ORM calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Hugging Face libraries (datasets, transformers, trl) read these at import: nothing may be
# downloaded, and without them load_dataset and the trainers try the network.
for _name in (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "HF_HUB_DISABLE_TELEMETRY",
    "TRL_EXPERIMENTAL_SILENCE",
):
    os.environ.setdefault(_name, "1")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_collection_modifyitems(config, items):
    """Skip PostgreSQL-only tests on SQLite. CI always runs the suite on PostgreSQL too."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL=postgres://...)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium: Playwright's own browser download does not work here."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.fail("Chromium is not installed: apt-get install -y chromium")
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "args": [
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ],
    }
