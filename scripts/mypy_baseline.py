"""Run mypy and hold its errors to a baseline that may only shrink.

`python scripts/mypy_baseline.py check` (part of `make lint`) runs mypy with the settings in
pyproject.toml and fails when an error appears that `mypy-baseline.txt` does not list, or when the
baseline lists an error that no longer occurs (delete those lines: `... prune` does it for you).
`python scripts/mypy_baseline.py update` (`make mypy-baseline`) rewrites the baseline from today's
errors; run it only to take in errors that were already there (after a merge), never to hide new
ones.

The number of lines is held too: pyproject's ``[tool.stepwise] mypy_baseline_ceiling`` is the most
the baseline may hold, and it may only be lowered. ``check`` fails when the baseline holds more
lines than the ceiling, and when it holds fewer (the ceiling is then stale: lower it, or let
``prune`` do it); ``update`` and ``prune`` lower the ceiling to the new count, and ``update``
refuses to write a baseline longer than the ceiling (fix the errors instead).

An error is recorded without its line number (`path: [code] message`), so the baseline survives
edits elsewhere in the file; a file with two identical errors lists the line twice. The strict
modules (pyproject's overrides that set `disallow_untyped_defs`, as mypy applies them) may have no
entry at all.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "mypy-baseline.txt"
PYPROJECT = ROOT / "pyproject.toml"
HEADER = (
    "# mypy errors outside the strict modules, as of the last `make mypy-baseline`.\n"
    "# This file may only shrink: fix an error, then delete its line. See docs/contributing.md.\n"
    "# Its ceiling (pyproject.toml, mypy_baseline_ceiling) only goes down: `... prune` lowers it.\n"
)
CEILING_KEY = "mypy_baseline_ceiling"
# The key's line in pyproject.toml (under ``[tool.stepwise]``), rewritten in place when lowered.
CEILING_LINE = re.compile(rf"^(?P<head>{CEILING_KEY}\s*=\s*)(?P<value>\d+)", re.MULTILINE)

ERROR = re.compile(
    r"^(?P<path>[^:\s][^:]*):(?P<line>\d+)(?::\d+)?: error: "
    r"(?P<msg>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$"
)
# Messages that quote another line ("already defined on line 12") would change with every edit.
LINE_REF = re.compile(r"\bline \d+\b")


def strict_rules(pyproject: Path = PYPROJECT) -> dict[str, bool]:
    """pyproject's mypy overrides that set ``disallow_untyped_defs``: module pattern -> value
    (``prm.*``: True; a module not yet annotated may be listed with False for a while)."""
    config = tomllib.loads(pyproject.read_text())
    rules: dict[str, bool] = {}
    for override in config.get("tool", {}).get("mypy", {}).get("overrides", []):
        if "disallow_untyped_defs" not in override:
            continue
        modules = override["module"]
        for module in [modules] if isinstance(modules, str) else modules:
            rules[module] = bool(override["disallow_untyped_defs"])
    return rules


def module_of(path: str) -> str:
    """``prm/backbones/__init__.py`` -> ``prm.backbones``; ``prm/data.py`` -> ``prm.data``."""
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return module


def is_strict(path: str, rules: dict[str, bool]) -> bool:
    """Whether mypy checks ``path`` strictly, by its override rules (as mypy picks them: a
    module named exactly wins over a pattern, a longer pattern over a shorter one)."""
    module = module_of(path)
    if module in rules:
        return rules[module]
    best, strict = -1, False
    for pattern, value in rules.items():
        if not pattern.endswith(".*"):
            continue
        stem = pattern.removesuffix(".*")
        if (module == stem or module.startswith(stem + ".")) and len(stem) > best:
            best, strict = len(stem), value
    return strict


def strict_names(rules: dict[str, bool]) -> str:
    return ", ".join(sorted(p for p, v in rules.items() if v and p.endswith(".*")))


def _path_of(line: str) -> str:
    return line.split(": [", 1)[0]


def run_mypy() -> list[str]:
    """Today's errors, one `path: [code] message` entry each, sorted."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-pretty",
            "--no-color-output",
            "--no-error-summary",
            "--hide-error-context",
            "--show-error-codes",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    # 0: no errors, 1: errors reported; anything else is mypy failing to run (a bad config).
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"mypy failed to run (exit {proc.returncode})")
    return parse(proc.stdout)


def parse(output: str) -> list[str]:
    """The baseline entries of mypy's text output (its notes dropped), sorted."""
    entries = []
    for line in output.splitlines():
        match = ERROR.match(line)
        if match:
            entries.append(entry(match["path"], match["code"], match["msg"]))
        elif ": error: " in line:
            raise SystemExit(f"cannot read this mypy error line: {line!r}")
    return sorted(entries)


def entry(path: str, code: str | None, message: str) -> str:
    return f"{path}: [{code or 'no-code'}] {LINE_REF.sub('line N', message)}"


def read_baseline(path: Path = BASELINE) -> list[str]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def write_baseline(entries: Iterable[str], path: Path = BASELINE) -> None:
    path.write_text(HEADER + "".join(f"{line}\n" for line in sorted(entries)))


def compare(current: Sequence[str], baseline: Sequence[str]) -> tuple[list[str], list[str]]:
    """(errors not in the baseline, baseline lines that no longer occur), each as a multiset."""
    now, then = Counter(current), Counter(baseline)
    new = sorted((now - then).elements())
    gone = sorted((then - now).elements())
    return new, gone


def read_ceiling(pyproject: Path = PYPROJECT) -> int:
    """The most lines the baseline may hold (pyproject's ``[tool.stepwise]``)."""
    config = tomllib.loads(pyproject.read_text())
    value = config.get("tool", {}).get("stepwise", {}).get(CEILING_KEY)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SystemExit(
            f"{pyproject.name}: [tool.stepwise] {CEILING_KEY} must be a whole number "
            "(the most lines mypy-baseline.txt may hold)"
        )
    return value


def lower_ceiling(count: int, pyproject: Path = PYPROJECT) -> bool:
    """Lower the ceiling to ``count`` (never raise it); whether the file changed."""
    ceiling = read_ceiling(pyproject)
    if count >= ceiling:
        return False
    text = pyproject.read_text()
    match = CEILING_LINE.search(text)
    if match is None or int(match["value"]) != ceiling:
        raise SystemExit(f"{pyproject.name}: cannot find the line `{CEILING_KEY} = {ceiling}`")
    pyproject.write_text(f"{text[: match.start()]}{match['head']}{count}{text[match.end() :]}")
    return True


def ceiling_problem(count: int, ceiling: int) -> str | None:
    """Why a baseline of ``count`` lines does not match its ceiling, or None when it does."""
    if count > ceiling:
        return (
            f"mypy-baseline.txt holds {count} lines, more than its ceiling of {ceiling} "
            f"(pyproject.toml, [tool.stepwise] {CEILING_KEY}): the baseline may not grow. Fix "
            "the errors it gained and delete their lines; the ceiling may only be lowered."
        )
    if count < ceiling:
        return (
            f"mypy-baseline.txt holds {count} lines, fewer than its ceiling of {ceiling}: lower "
            f"the ceiling to {count} (pyproject.toml, [tool.stepwise] {CEILING_KEY} = {count}), "
            "or run `python scripts/mypy_baseline.py prune`, which does it."
        )
    return None


def check(
    current: Sequence[str],
    *,
    prune: bool,
    baseline_path: Path = BASELINE,
    pyproject: Path = PYPROJECT,
) -> int:
    """Hold today's errors (``current``, as ``parse`` gives them) to the baseline and its
    ceiling; with ``prune``, delete the lines of errors that no longer occur (and lower the
    ceiling to match). 0 when all is well, 1 otherwise; what is wrong is printed."""
    baseline = read_baseline(baseline_path)
    rules = strict_rules(pyproject)
    ceiling = read_ceiling(pyproject)
    new, gone = compare(current, baseline)
    failed = False
    in_strict = sorted(line for line in baseline if is_strict(_path_of(line), rules))
    if in_strict:
        failed = True
        print(
            f"mypy-baseline.txt lists errors in strict modules ({strict_names(rules)}); "
            "these must be fixed, not baselined:"
        )
        print("".join(f"  {line}\n" for line in in_strict), end="")
    if new:
        failed = True
        print(
            f"mypy: {len(new)} error(s) not in mypy-baseline.txt (fix them; a "
            "`# type: ignore[code]` only with a reason beside it):"
        )
        print("".join(f"  {line}\n" for line in new), end="")
        print("Run `.venv/bin/mypy` for their line numbers.")
    if prune:
        if gone:
            baseline = list((Counter(baseline) - Counter(gone)).elements())
            write_baseline(baseline, baseline_path)
            print(f"mypy-baseline.txt: deleted {len(gone)} line(s) that no longer occur.")
        if lower_ceiling(len(baseline), pyproject):
            print(f"pyproject.toml: {CEILING_KEY} lowered from {ceiling} to {len(baseline)}.")
            ceiling = len(baseline)
    elif gone:
        failed = True
        print(
            f"mypy: {len(gone)} baselined error(s) no longer occur; delete these lines from "
            "mypy-baseline.txt and lower the ceiling to match (or run "
            "`python scripts/mypy_baseline.py prune`, which does both):"
        )
        print("".join(f"  {line}\n" for line in gone), end="")
    problem = ceiling_problem(len(baseline), ceiling)
    if problem:
        failed = True
        print(problem)
    if not failed:
        print(
            f"mypy: no new errors ({len(baseline)} baselined, at its ceiling; "
            f"none allowed in {strict_names(rules)})."
        )
    return 1 if failed else 0


def update(
    current: Sequence[str], *, baseline_path: Path = BASELINE, pyproject: Path = PYPROJECT
) -> int:
    """Rewrite the baseline from today's errors (``current``) and lower the ceiling to their
    number; refused (nothing written) for errors in strict modules or more errors than the
    ceiling allows."""
    rules = strict_rules(pyproject)
    in_strict = [line for line in current if is_strict(_path_of(line), rules)]
    if in_strict:
        print(
            f"mypy reports errors in strict modules ({strict_names(rules)}); fix them first, "
            "the baseline does not take them:"
        )
        print("".join(f"  {line}\n" for line in in_strict), end="")
        return 1
    before = read_baseline(baseline_path)
    new, gone = compare(current, before)
    ceiling = read_ceiling(pyproject)
    if len(current) > ceiling:
        print(
            f"mypy reports {len(current)} errors outside the strict modules, more than the "
            f"baseline's ceiling of {ceiling} (pyproject.toml, [tool.stepwise] {CEILING_KEY}). "
            "The baseline may not grow: fix the new errors instead (`.venv/bin/mypy` gives their "
            "line numbers); mypy-baseline.txt is unchanged. Errors it does not list:"
        )
        print("".join(f"  {line}\n" for line in new), end="")
        return 1
    write_baseline(current, baseline_path)
    print(f"mypy-baseline.txt: {len(current)} error(s) ({len(new)} added, {len(gone)} gone).")
    if lower_ceiling(len(current), pyproject):
        print(f"pyproject.toml: {CEILING_KEY} lowered from {ceiling} to {len(current)}.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "prune", "update"], nargs="?", default="check")
    args = parser.parse_args(argv)
    if args.command == "update":
        return update(run_mypy())
    return check(run_mypy(), prune=args.command == "prune")


if __name__ == "__main__":
    raise SystemExit(main())
