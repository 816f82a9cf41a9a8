from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")
application = get_wsgi_application()

from stepwise.startup import database_reachable_or_exit  # noqa: E402 (needs Django set up)

database_reachable_or_exit("web process")
