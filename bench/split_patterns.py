"""A person's split pattern on Python's backtracking engine (the splitter before issue 24) and on
RE2 (``imports.splitting`` now), one after the other on this machine, with its load.

``(a+)+$`` on ``n`` times ``a`` and a ``!``: Python's ``re.split`` doubles its time for about
every character more (the issue measured 2.4 s at 24 on another machine); the splitter's RE2
stays linear. Python's engine is only run up to ``--max-re`` characters, so the script ends.

    .venv/bin/python bench/split_patterns.py
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stepwise.settings")

import django  # noqa: E402

django.setup()

from imports.splitting import split_texts  # noqa: E402

PATTERN = "(a+)+$"


def _seconds(call) -> float:
    started = time.process_time()  # CPU time: what the pattern costs, not what waits
    call()
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-re", type=int, default=22, help="longest run for Python's re")
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"pattern {PATTERN!r} on 'a' * n + '!' (CPU seconds)")
    print("| n | Python re.split | RE2 (the splitter) |")
    print("| ---: | ---: | ---: |")
    for n in (16, 18, 20, args.max_re, 1000, 1_000_000):
        text = "a" * n + "!"
        backtracking = (
            f"{_seconds(lambda text=text: re.split(PATTERN, text)):.3f}"
            if n <= args.max_re
            else "not run"
        )
        linear = _seconds(lambda text=text: split_texts(text, PATTERN))
        print(f"| {n:,} | {backtracking} | {linear:.4f} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
