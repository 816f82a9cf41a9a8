"""Static files are WhiteNoise's, scanned once a process (stepwise/static.py)."""

from __future__ import annotations

from django.test import Client

from stepwise.static import StaticFilesMiddleware

CSS = "/static/css/stepwise.css"


def _get(path: str = CSS):
    return Client().get(path)  # a client of its own: a new handler, a new middleware


def test_a_second_handler_serves_the_same_file_with_the_same_headers_without_scanning(
    monkeypatch,
):
    first = _get()
    assert first.status_code == 200
    assert b"".join(first.streaming_content)

    def no_scan():
        raise AssertionError("the finders were scanned again")

    monkeypatch.setattr("whitenoise.middleware.finders.get_finders", no_scan)
    second = _get()
    assert second.status_code == 200
    per_request = {"X-Request-ID"}
    assert {k: v for k, v in second.headers.items() if k not in per_request} == {
        k: v for k, v in first.headers.items() if k not in per_request
    }
    assert _get("/static/css/no-such-file.css").status_code == 404


def test_a_changed_setting_scans_again(settings):
    _get()
    assert StaticFilesMiddleware.scans
    settings.WHITENOISE_MAX_AGE = 7
    assert not StaticFilesMiddleware.scans
    assert _get()["Cache-Control"] == "max-age=7, public"
