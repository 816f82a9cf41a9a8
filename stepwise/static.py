"""Static files: WhiteNoise, with its scan of the static files made once a process.

WhiteNoise's middleware builds, when it is created, a table of every static file it serves
(``STATIC_ROOT``'s and, with ``WHITENOISE_USE_FINDERS``, every finder's: ours, the admin's, DRF's):
a walk of the folders, a ``stat`` and a set of headers per file, about 40 ms here. Django creates
the middleware once per handler: once a process when serving, but the test client makes a
handler per test, so the scan ran before nearly every test's first request (measured: 3.7 of 14 s
in the permission matrix). ``StaticFilesMiddleware`` keeps each scan's entries for the process
and reuses them while the settings they depend on are unchanged (a changed setting in a test
clears them). Serving is WhiteNoise's own: the same files, headers and answers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from django.core.signals import setting_changed
from django.dispatch import receiver
from whitenoise.middleware import WhiteNoiseMiddleware

# The settings a scan's entries depend on, beside WhiteNoise's own (``WHITENOISE_*``).
SCAN_SETTINGS = frozenset(
    {
        "DEBUG",
        "FORCE_SCRIPT_NAME",
        "INSTALLED_APPS",
        "STATICFILES_DIRS",
        "STATICFILES_FINDERS",
        "STATIC_ROOT",
        "STATIC_URL",
        "STORAGES",
    }
)


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's middleware, scanning ``STATIC_ROOT`` and the finders once a process."""

    scans: ClassVar[dict[tuple[Any, ...], dict[str, Any]]] = {}

    def add_files(self, root: str, prefix: str | None = None) -> None:
        self._scan(("root", str(root), prefix), partial(super().add_files, root, prefix))

    def add_files_from_finders(self) -> None:
        self._scan(("finders", self.static_prefix), super().add_files_from_finders)

    def _scan(self, key: tuple[Any, ...], scan: Callable[[], None]) -> None:
        """Run ``scan`` the first time, keeping the entries it added or replaced; after that,
        put those entries back instead."""
        entries = self.scans.get(key)
        if entries is None:
            before = dict(self.files)
            scan()
            entries = {url: f for url, f in self.files.items() if before.get(url) is not f}
            self.scans[key] = entries
            return
        self.files.update(entries)


@receiver(setting_changed)
def _forget_scans(*, setting: str, **kwargs: Any) -> None:
    if setting in SCAN_SETTINGS or setting.startswith("WHITENOISE_"):
        StaticFilesMiddleware.scans.clear()
