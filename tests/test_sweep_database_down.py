"""With the database unreachable the sweep reports failure instead of success (issue 41: it
logged an error for every kind, then returned as if it had recovered everything): the beat task
raises ``SweepFailed`` naming every kind it could not sweep, so the worker records the task as
failed."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from common.job_recovery import SweepFailed
from common.jobs import job_kinds
from common.tasks import jobs_sweep_task
from tests.conftest import free_port

pytestmark = pytest.mark.django_db  # database access allowed: what fails is the connection


def test_the_sweep_fails_when_the_database_is_unreachable(tmp_path):
    outcome: list[BaseException | None] = []

    def sweep() -> None:
        connection = connections["default"]  # this thread's own, pointed where nothing is
        if connection.vendor == "sqlite":
            gone = str(tmp_path / "no-such-folder" / "db.sqlite3")
            connection.settings_dict = {**connection.settings_dict, "NAME": gone}
        else:
            connection.settings_dict = {
                **connection.settings_dict,
                "HOST": "127.0.0.1",
                "PORT": free_port(),
            }
        try:
            jobs_sweep_task()
            outcome.append(None)
        except BaseException as error:
            outcome.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=sweep)
    thread.start()
    thread.join(timeout=120)

    (error,) = outcome
    assert isinstance(error, SweepFailed), error
    kinds = job_kinds()
    assert f"could not sweep {len(kinds)} of {len(kinds)} kinds" in str(error)
    assert all(name in str(error) for name in kinds)
    assert "OperationalError" in str(error)  # the database was asked, and could not be reached
