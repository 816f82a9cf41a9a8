"""The mypy baseline (scripts/mypy_baseline.py): what `make lint` lets through, what it refuses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts import mypy_baseline

OUTPUT = """\
labeling/views.py:12: error: Bad return type (got "int", expected "str")  [return-value]
labeling/views.py:40: note: Revealed type is "builtins.int"
imports/pipeline.py:7: error: Name "x" already defined on line 3  [no-redef]
imports/pipeline.py:9: error: Name "x" already defined on line 5  [no-redef]
"""


def test_an_error_is_recorded_without_its_line_number_and_notes_are_dropped():
    assert mypy_baseline.parse(OUTPUT) == [
        'imports/pipeline.py: [no-redef] Name "x" already defined on line N',
        'imports/pipeline.py: [no-redef] Name "x" already defined on line N',
        'labeling/views.py: [return-value] Bad return type (got "int", expected "str")',
    ]


def test_an_error_line_it_cannot_read_stops_the_check():
    with pytest.raises(SystemExit, match="cannot read this mypy error line"):
        mypy_baseline.parse("labeling/views.py: error: something without a line number\n")


def test_a_new_error_is_refused_and_a_fixed_one_is_named_for_deletion():
    baseline = mypy_baseline.parse(OUTPUT)
    # One of the two redefinitions fixed; a new error in another file.
    current = [*baseline[1:], "exports/reader.py: [arg-type] Argument 1 has incompatible type"]

    new, gone = mypy_baseline.compare(current, baseline)

    assert new == ["exports/reader.py: [arg-type] Argument 1 has incompatible type"]
    assert gone == ['imports/pipeline.py: [no-redef] Name "x" already defined on line N']


def test_the_same_errors_on_moved_lines_match_the_baseline():
    moved = OUTPUT.replace(":12:", ":112:").replace(":7:", ":70:")
    assert mypy_baseline.compare(mypy_baseline.parse(moved), mypy_baseline.parse(OUTPUT)) == (
        [],
        [],
    )


def test_the_strict_modules_are_read_from_pyprojects_overrides_as_mypy_applies_them(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[[tool.mypy.overrides]]\n"
        'module = ["prm", "prm.*", "common.*"]\n'
        "disallow_untyped_defs = true\n"
        "[[tool.mypy.overrides]]\n"
        'module = ["prm.training"]\n'
        "disallow_untyped_defs = false\n"
        "[[tool.mypy.overrides]]\n"
        'module = ["sympy", "sympy.*"]\n'
        "ignore_missing_imports = true\n"
    )
    rules = mypy_baseline.strict_rules(pyproject)

    assert mypy_baseline.is_strict("prm/data.py", rules)
    assert mypy_baseline.is_strict("prm/backbones/__init__.py", rules)
    assert mypy_baseline.is_strict("common/jobs.py", rules)
    assert not mypy_baseline.is_strict("prm/training.py", rules)  # named exactly: wins
    assert not mypy_baseline.is_strict("labeling/views.py", rules)
    assert not mypy_baseline.is_strict("prmx/data.py", rules)


def test_the_repositorys_strict_modules_are_checked_strictly():
    rules = mypy_baseline.strict_rules()
    assert mypy_baseline.is_strict("common/jobs.py", rules)
    assert mypy_baseline.is_strict("prm/metrics.py", rules)


def test_a_baseline_written_and_read_back_keeps_every_entry(tmp_path):
    path = tmp_path / "mypy-baseline.txt"
    entries = mypy_baseline.parse(OUTPUT)
    mypy_baseline.write_baseline(reversed(entries), path)

    assert mypy_baseline.read_baseline(path) == entries
    assert path.read_text().startswith("# ")


# -- the baseline's ceiling: its length may only go down ----------------------------------------

TODAY = """\
labeling/views.py:12: error: Bad return type (got "int", expected "str")  [return-value]
imports/pipeline.py:7: error: Name "x" already defined on line 3  [no-redef]
exports/reader.py:30: error: Argument 1 has incompatible type  [arg-type]
"""
MERGED = (
    TODAY + 'annotators/stats.py:9: error: Need type annotation for "counts"  [var-annotated]\n'
)
PYPROJECT = """\
[[tool.mypy.overrides]]
module = ["prm", "prm.*"]
disallow_untyped_defs = true

# the most lines mypy-baseline.txt may hold
[tool.stepwise]
mypy_baseline_ceiling = {ceiling}
other_setting = 7
"""


def _repo(tmp_path, errors: str, ceiling: int):
    """A baseline of ``errors`` (mypy's text) and a pyproject with the given ceiling."""
    baseline, pyproject = tmp_path / "mypy-baseline.txt", tmp_path / "pyproject.toml"
    mypy_baseline.write_baseline(mypy_baseline.parse(errors), baseline)
    pyproject.write_text(PYPROJECT.format(ceiling=ceiling))
    return {"baseline_path": baseline, "pyproject": pyproject}


def test_a_baseline_as_long_as_its_ceiling_passes(tmp_path, capsys):
    paths = _repo(tmp_path, TODAY, ceiling=3)

    assert mypy_baseline.check(mypy_baseline.parse(TODAY), prune=False, **paths) == 0
    assert "no new errors (3 baselined" in capsys.readouterr().out


def test_a_baseline_grown_past_its_ceiling_fails_even_when_it_lists_every_error(tmp_path, capsys):
    # What a hand edit or an old `make mypy-baseline` after a merge did: the new error baselined.
    paths = _repo(tmp_path, MERGED, ceiling=3)

    assert mypy_baseline.check(mypy_baseline.parse(MERGED), prune=False, **paths) == 1
    out = capsys.readouterr().out
    assert "holds 4 lines, more than its ceiling of 3" in out
    assert "may not grow" in out


def test_a_ceiling_above_the_baseline_is_stale_and_named_with_the_count_to_lower_it_to(
    tmp_path, capsys
):
    paths = _repo(tmp_path, TODAY, ceiling=5)

    assert mypy_baseline.check(mypy_baseline.parse(TODAY), prune=False, **paths) == 1
    out = capsys.readouterr().out
    assert "fewer than its ceiling of 5" in out
    assert "mypy_baseline_ceiling = 3" in out


def test_a_fixed_error_fails_the_check_until_pruned_and_prune_lowers_the_ceiling(tmp_path, capsys):
    paths = _repo(tmp_path, TODAY, ceiling=3)
    fixed = mypy_baseline.parse(TODAY)[1:]

    assert mypy_baseline.check(fixed, prune=False, **paths) == 1
    assert "no longer occur" in capsys.readouterr().out
    assert mypy_baseline.read_ceiling(paths["pyproject"]) == 3

    assert mypy_baseline.check(fixed, prune=True, **paths) == 0
    assert "lowered from 3 to 2" in capsys.readouterr().out
    assert mypy_baseline.read_baseline(paths["baseline_path"]) == fixed
    assert mypy_baseline.read_ceiling(paths["pyproject"]) == 2
    assert mypy_baseline.check(fixed, prune=False, **paths) == 0


def test_prune_cannot_take_in_a_new_error(tmp_path, capsys):
    paths = _repo(tmp_path, TODAY, ceiling=3)

    assert mypy_baseline.check(mypy_baseline.parse(MERGED), prune=True, **paths) == 1
    assert "1 error(s) not in mypy-baseline.txt" in capsys.readouterr().out
    assert len(mypy_baseline.read_baseline(paths["baseline_path"])) == 3


def test_an_update_that_would_grow_the_baseline_is_refused_and_writes_nothing(tmp_path, capsys):
    paths = _repo(tmp_path, TODAY, ceiling=3)
    before = paths["baseline_path"].read_text(), paths["pyproject"].read_text()

    assert mypy_baseline.update(mypy_baseline.parse(MERGED), **paths) == 1
    out = capsys.readouterr().out
    assert "more than the baseline's ceiling of 3" in out
    assert "fix the new errors instead" in out
    assert 'annotators/stats.py: [var-annotated] Need type annotation for "counts"' in out
    assert (paths["baseline_path"].read_text(), paths["pyproject"].read_text()) == before


def test_an_update_may_trade_errors_within_the_ceiling_and_keeps_it(tmp_path, capsys):
    # After a merge: one error fixed on one branch, another brought in by the other.
    paths = _repo(tmp_path, TODAY, ceiling=3)
    traded = [e for e in mypy_baseline.parse(MERGED) if not e.startswith("exports/")]

    assert mypy_baseline.update(traded, **paths) == 0
    assert "(1 added, 1 gone)" in capsys.readouterr().out
    assert mypy_baseline.read_baseline(paths["baseline_path"]) == traded
    assert mypy_baseline.read_ceiling(paths["pyproject"]) == 3


def test_an_update_that_shrinks_the_baseline_lowers_the_ceiling_and_nothing_else(tmp_path):
    paths = _repo(tmp_path, TODAY, ceiling=3)

    assert mypy_baseline.update(mypy_baseline.parse(TODAY)[:1], **paths) == 0
    assert paths["pyproject"].read_text() == PYPROJECT.format(ceiling=1)
    assert mypy_baseline.check(mypy_baseline.parse(TODAY)[:1], prune=False, **paths) == 0


def test_an_update_refuses_errors_in_strict_modules(tmp_path, capsys):
    paths = _repo(tmp_path, TODAY, ceiling=3)
    strict = "prm/data.py: [arg-type] Argument 1 has incompatible type"

    assert mypy_baseline.update([strict], **paths) == 1
    assert "errors in strict modules" in capsys.readouterr().out
    assert len(mypy_baseline.read_baseline(paths["baseline_path"])) == 3


def test_the_ceiling_is_never_raised(tmp_path):
    paths = _repo(tmp_path, TODAY, ceiling=3)

    assert not mypy_baseline.lower_ceiling(7, paths["pyproject"])
    assert not mypy_baseline.lower_ceiling(3, paths["pyproject"])
    assert mypy_baseline.read_ceiling(paths["pyproject"]) == 3


@pytest.mark.parametrize(
    "setting", ["", "mypy_baseline_ceiling = -1", 'mypy_baseline_ceiling = "3"']
)
def test_a_missing_or_malformed_ceiling_stops_the_check(tmp_path, setting):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.stepwise]\n{setting}\n")

    with pytest.raises(SystemExit, match="mypy_baseline_ceiling must be a whole number"):
        mypy_baseline.read_ceiling(pyproject)


def test_the_repositorys_baseline_holds_exactly_its_ceiling():
    assert len(mypy_baseline.read_baseline()) == mypy_baseline.read_ceiling()


@pytest.mark.slow
def test_it_reads_what_a_real_mypy_run_prints(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text('def f() -> int:\n    return "x"\n\n\nf(1)\n')
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--hide-error-context",
            "bad.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )

    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert mypy_baseline.parse(proc.stdout) == [
        'bad.py: [call-arg] Too many arguments for "f"',
        'bad.py: [return-value] Incompatible return value type (got "str", expected "int")',
    ]
