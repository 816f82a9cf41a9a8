"""Screenshots of the app's pages, taken from the real app, for the docs and the README.

Builds a throwaway SQLite database with the demo data (``manage.py seed_demo``: real GSM8K,
Qwen2.5-Math, PRM800K and ProcessBench extracts from ``demo/``), starts ``runserver`` on a free
port, logs in through the login form as ``demo-annotator`` and labels a little with the keyboard,
then saves desktop (1280x800) and phone (390x844) screenshots, light and dark, into
``docs/screenshots/``, and its My work page with one item. Then, as ``demo-manager``: the login
page, the dashboard, members, imports (with a failed import), exports, active learning (after one
real run), campaign settings, reviews, adjudication and a 404 page, desktop and phone:

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

Two solutions are moved to the head of the queue in the throwaway database so the pictures show
LaTeX (a Qwen2.5-Math solution) and a wrong step (a GSM8K solution). Nothing else is staged: what
you see is what an annotator sees. Needs Chromium (``/usr/bin/chromium``, or ``CHROMIUM``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "stepwise-demo"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

# Put a short Qwen2.5-Math solution with LaTeX (correct answer) first, then a wrong GSM8K one.
STAGE = """
from django.db.models import Count
from labeling.models import Solution
demo = Solution.objects.filter(campaign__slug="demo", kind="regular")
latex = (demo.filter(generator__startswith="qwen", problem__text__contains="$",
                     answer_is_correct=True)
         .exclude(problem__text__contains="[asy]").annotate(n=Count("steps"))
         .filter(n__gte=5, n__lte=7).order_by("pk").first())
wrong = (demo.filter(answer_is_correct=False, generator="175b_finetuning")
         .annotate(n=Count("steps")).filter(n__gte=3, n__lte=5).order_by("pk").first())
Solution.objects.filter(pk=latex.pk).update(priority=10)
Solution.objects.filter(pk=wrong.pk).update(priority=9)

# A failed import on the imports page (what a file with bad lines leaves behind).
from django.utils import timezone
from imports.models import ImportJob
ImportJob.objects.create(
    campaign=demo.first().campaign, file_name="qwen-math-samples.jsonl", format="jsonl",
    status="failed", finished_at=timezone.now(), size=48213,
    errors=[
        {"file": "qwen-math-samples.jsonl", "line": 3, "field": "solutions[0].steps",
         "message": "must be a non-empty list"},
        {"file": "qwen-math-samples.jsonl", "line": 7, "field": "ground_truth_answer",
         "message": "differs from line 2's for the same problem: "
                    "\\frac{1}{9}_versus_0.1111111111111111111111111111111111111111111111"},
    ],
)
"""

# Fresh figures for the dashboard, once the annotator has labelled (no worker runs here).
FIGURES = """
from annotators.models import CampaignSnapshot
from annotators.snapshots import snapshot_run
from labeling.models import Campaign
snapshot_run(snapshot=CampaignSnapshot.objects.create(campaign=Campaign.objects.get(slug="demo")))

# The run the demo's import queued (no worker runs here), run in this process on the labels the
# demo imported and those just given: the active-learning page shows its model, charts and runs.
from learning.models import ActiveLearningRun
from learning.run import active_learning_run
demo = Campaign.objects.get(slug="demo")
run = ActiveLearningRun.objects.filter(campaign=demo, status="queued").first()
active_learning_run(run=run or ActiveLearningRun.objects.create(campaign=demo))
"""

# The manager's pages: (name, path under the campaign or an absolute path, what to scroll to).
MANAGER_PAGES = [
    ("dashboard", "dashboard/", None),
    ("members", "members/", None),
    ("imports", "imports/", ".import-errors"),
    ("exports", "exports/", None),
    ("active-learning", "active-learning/", None),
    ("active-learning-charts", "active-learning/", "#best-of-n-legend"),
    ("settings", "settings/", None),
    ("browse", "browse/?answer=wrong&negative=true", None),
    ("reviews", "reviews/", None),
    ("adjudication", "adjudication/", None),
    ("not-found", "/campaigns/no-such-campaign/", None),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True)


def wait_for(url: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def settle(page: Page) -> None:
    """Wait for htmx to finish and KaTeX's fonts to load, so pictures are complete."""
    page.wait_for_load_state("networkidle")
    page.wait_for_selector("#steps")
    page.evaluate("document.fonts.ready.then(() => true)")


def press(page: Page, keys: str) -> None:
    for key in keys:
        before = page.get_attribute("#steps", "data-current")
        page.keyboard.press(key)
        page.wait_for_function(
            "before => document.querySelector('#steps')?.dataset.current !== before", arg=before
        )


def shoot_page(
    browser,
    state: dict | None,
    url: str,
    out: Path,
    name: str,
    *,
    phone: bool,
    scroll_to: str | None = None,
) -> Path:
    """A page other than the labelling page, light, as it first shows (or scrolled to a part)."""
    context = browser.new_context(
        storage_state=state,
        viewport=PHONE if phone else DESKTOP,
        device_scale_factor=2 if phone else 1,
        is_mobile=phone,
        has_touch=phone,
        color_scheme="light",
    )
    page = context.new_page()
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if scroll_to:
        page.evaluate(
            "s => document.querySelector(s)"
            "?.scrollIntoView({block: 'center', behavior: 'instant'})",
            scroll_to,
        )
    path = out / f"{name}-{'phone' if phone else 'desktop'}-light.png"
    page.screenshot(path=str(path))
    context.close()
    return path


def shoot(
    browser,
    state: dict,
    url: str,
    out: Path,
    name: str,
    *,
    phone: bool,
    dark: bool,
    correction: str | None = None,
    missing: bool = False,
) -> Path:
    context = browser.new_context(
        storage_state=state,
        viewport=PHONE if phone else DESKTOP,
        device_scale_factor=2 if phone else 1,
        is_mobile=phone,
        has_touch=phone,
        color_scheme="dark" if dark else "light",
    )
    page = context.new_page()
    page.goto(url)
    settle(page)
    if missing:
        # Enter before every step is rated: the page says which steps are missing.
        page.keyboard.press("Enter")
        page.wait_for_selector("[data-missing]:not([hidden])")
    if correction:
        # A correction is a draft of the browser tab until it is submitted.
        page.fill("#correction", correction)
        page.evaluate("document.activeElement.blur()")
    if phone:
        # Show the step being rated with the one before it, as a thumb-reader would see it.
        page.evaluate(
            "document.querySelector('.step.current, #finish')"
            "?.scrollIntoView({block: 'end', behavior: 'instant'})"
        )
    path = out / f"{name}-{'phone' if phone else 'desktop'}-{'dark' if dark else 'light'}.png"
    page.screenshot(path=str(path))
    context.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if chromium is None:
        sys.exit("Chromium not found: apt-get install -y chromium (or set CHROMIUM=/path)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="stepwise-shots-") as tmp:
        env = {
            **os.environ,
            "STEPWISE_VAR_DIR": tmp,
            "DATABASE_URL": f"sqlite:///{tmp}/shots.sqlite3",
            "CELERY_BROKER_URL": "filesystem://",
            "DEBUG": "False",
            "STEPWISE_PRODUCTION": "False",
        }
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "seed_demo", "--password", PASSWORD)
        manage(env, "shell", "-v", "0", "-c", STAGE)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(base + "/login/")
            saved = take(
                base,
                chromium,
                args.out,
                figures=lambda: manage(env, "shell", "-v", "0", "-c", FIGURES),
            )
        finally:
            server.terminate()
            server.wait(timeout=20)
    for path in saved:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def log_in(browser, base: str, username: str):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.goto(base + "/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")
    return context, page


def take(base: str, chromium: str, out: Path, *, figures) -> list[Path]:
    label = base + "/campaigns/demo/label/"
    saved = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--disable-gpu"])
        for phone in (False, True):
            saved.append(shoot_page(browser, None, base + "/login/", out, "login", phone=phone))
        context, page = log_in(browser, base, "demo-annotator")
        page.goto(label)
        settle(page)
        press(page, "333")  # three steps rated, the fourth is current
        state = context.storage_state()
        for phone in (False, True):
            for dark in (False, True):
                saved.append(shoot(browser, state, label, out, "label", phone=phone, dark=dark))
        for phone, dark in ((False, False), (True, True)):
            saved.append(
                shoot(browser, state, label, out, "missing", phone=phone, dark=dark, missing=True)
            )

        # Finish it, then the wrong GSM8K solution: a negative step and a correction.
        press(page, "333")
        page.keyboard.press("Enter")
        page.wait_for_selector(".notice")
        settle(page)
        press(page, "31")
        state = context.storage_state()
        fix = "She uses 4 eggs for muffins, so 13 - 4 = 9 are left to sell."
        for phone, dark in ((False, False), (True, True)):
            saved.append(
                shoot(browser, state, label, out, "error", phone=phone, dark=dark, correction=fix)
            )
        # What the annotator submitted, with its review outcome, and one item as they rated it.
        my_work = base + "/campaigns/demo/my-work/"
        for phone in (False, True):
            saved.append(shoot_page(browser, state, my_work, out, "my-work", phone=phone))
        page.goto(my_work)
        item = page.locator("table.my-work a[href*='/my-work/']").first.get_attribute("href")
        for phone in (False, True):
            saved.append(shoot_page(browser, state, base + item, out, "my-work-item", phone=phone))
        context.close()

        figures()
        context, page = log_in(browser, base, "demo-manager")
        state = context.storage_state()
        context.close()
        for name, path, scroll_to in MANAGER_PAGES:
            url = base + (path if path.startswith("/") else f"/campaigns/demo/{path}")
            for phone in (False, True):
                saved.append(
                    shoot_page(browser, state, url, out, name, phone=phone, scroll_to=scroll_to)
                )
        browser.close()
    return saved


if __name__ == "__main__":
    main()
