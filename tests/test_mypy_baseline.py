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
