"""The data browser's item page: the first open in a fresh server process, and the next ones.

The page shows each step's score by the campaign's active PRM. Run: ``python bench/item_page.py``
(a throwaway SQLite database and media folder; a bow PRM trained on the repository's PRM800K
fixture). Prints the wall time of the first request, whether it imported torch, and of three
more; then of the deferred scores' own request (``?scores=now``) where the page has one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "prm" / "phase1_trl_small.jsonl"

SERVER = r"""
import json, sys, time
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()
from django.contrib.auth.models import User
from labeling.models import Membership
from learning.models import PRMModel
from tests.factories import make_campaign, make_member, make_solution
campaign = make_campaign(slug="bench-item")
steps = [f"Step {i}: we add {i} and {i} to get {2 * i}." for i in range(1, 9)]
solution = make_solution(campaign=campaign, steps=steps)
PRMModel.objects.create(campaign=campaign, version=1, path="prm/bench/v0001", is_active=True)
manager = make_member(campaign=campaign, role=Membership.Role.MANAGER).user
client = Client()
client.force_login(manager)
url = f"/campaigns/{campaign.slug}/browse/{solution.pk}/"
out = {"torch_before": "torch" in sys.modules, "pages": []}
for _ in range(4):
    t = time.perf_counter()
    html = client.get(url).content.decode()
    out["pages"].append(round((time.perf_counter() - t) * 1000, 1))
    out.setdefault("torch_after_first", "torch" in sys.modules)
out["deferred"] = "scores=now" in html
t = time.perf_counter()
client.get(url + "?scores=now")
out["scores_request"] = round((time.perf_counter() - t) * 1000, 1)
print(json.dumps(out))
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        media = Path(tmp) / "media"
        db = Path(tmp) / "bench.sqlite3"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "stepwise.settings",
            "MEDIA_ROOT": str(media),
            "DATABASE_URL": f"sqlite:///{db}",
            # A cache of its own: the scores a run keeps must not answer the next run.
            "STEPWISE_VAR_DIR": str(Path(tmp) / "var"),
        }
        subprocess.run(
            [sys.executable, "-c", "import prm, sys; prm.train(sys.argv[1], sys.argv[2], "
             "backbone='bow', epochs=1, progress=False)", str(FIXTURE),
             str(media / "prm" / "bench" / "v0001")],
            cwd=ROOT, env=env, check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        got = subprocess.run(
            [sys.executable, "-c", SERVER],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(got.stdout.strip().splitlines()[-1])
        shutil.rmtree(media, ignore_errors=True)
    first, *rest = result["pages"]
    print(f"first open: {first} ms (torch imported by it: {result['torch_after_first']})")
    print(f"next opens: {', '.join(f'{ms} ms' for ms in rest)}")
    if result["deferred"]:
        print(f"the deferred scores' request: {result['scores_request']} ms")


if __name__ == "__main__":
    main()
