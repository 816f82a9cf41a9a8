"""No copy of a rule outside its home, and no app writing another app's tables.

Each rule below has one home (docs/architecture.md, "Rules and their homes"); a line elsewhere
that spells it again fails here with the file and line, and the home to call instead. The check
is textual (a regular expression per rule, line by line) for the spellings a copy would take,
plus two structural checks of writes: an upper app calling a write (``update``, ``create``,
``delete``, ...) on a ``labeling`` model's manager, and raw SQL that writes another app's table.
It cannot see a copy spelled some other way (a rule rewritten with other names, a ``save()``
on a loaded row); ``test_the_guard_catches_a_planted_copy_of_each_rule`` shows what it sees.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from exports.formats.options import FORMAT_OPTIONS
from exports.policy import POLICY_OPTIONS

ROOT = Path(__file__).resolve().parents[1]
APPS = (
    "common",
    "labeling",
    "annotators",
    "imports",
    "machines",
    "exports",
    "learning",
    "stepwise",
    "bench",
)
# This module spells every rule in its samples below.
GUARD = Path(__file__).resolve().relative_to(ROOT).as_posix()

_EXPORT_NAMES = [o.name for o in POLICY_OPTIONS] + [o.name for o in FORMAT_OPTIONS]
_EXPORT_OPTIONS = "|".join(_EXPORT_NAMES)
_EXPORT_FLAGS = "|".join(name.replace("_", "-") for name in _EXPORT_NAMES)


@dataclass(frozen=True)
class Rule:
    """A rule, where it may be spelled (files or folders), how a copy reads, where to look, and
    a ``sample`` copy that the guard must catch (planted by the test below)."""

    name: str
    homes: tuple[str, ...]
    pattern: re.Pattern[str]
    sample: str
    where: tuple[str, ...] = APPS
    suffix: str = ".py"


RULES = (
    Rule(
        "a live or expired lease (Assignment.live_lease_q, expired_lease_q)",
        ("labeling/models",),
        re.compile(
            r"lease_expires_at(__gt|__gte|__lt|__lte)\b|lease_expires_at\s*[<>]=?\s*(now|%s)"
        ),
        "Assignment.objects.filter(lease_expires_at__gt=now)",
    ),
    Rule(
        "annotators disagree (StepLabelQuerySet.disputed, disputed_steps, disputed_step_count)",
        ("labeling/models",),
        re.compile(r"low__lt\s*=\s*F\(|min\(\w*\.?rating\)\s*<>\s*max|exclude\(rating=OuterRef"),
        "labels.annotate(low=Min('rating')).filter(low__lt=F('high'))",
    ),
    Rule(
        "an active membership (MembershipQuerySet.active, CampaignQuerySet.with_member)",
        ("labeling/models",),
        re.compile(r"memberships__status|status=Membership\.Status\.ACTIVE\b(?!\w)"),
        "Membership.objects.filter(status=Membership.Status.ACTIVE)",
    ),
    Rule(
        "stopping a member's work: pausing or removing them, ending their leases "
        "(labeling.queue.membership_pause)",
        ("labeling/queue/leases.py",),
        re.compile(
            r"\.status\s*=\s*Membership\.Status\.(PAUSED|REMOVED)\b"
            r"|\.(paused_at|pause_reason|pause_figures)\b[^=\n]*(?<![=!<>])=(?!=)"
            r"|update\([^)]*\b(status\s*=\s*Membership\.Status\.(PAUSED|REMOVED)|paused_at\s*=)"
            r"|lease_expires_at\s*=\s*(now|timezone\.now\(\))\s*[,)]"
        ),
        "Assignment.objects.filter(annotator=user).update(lease_expires_at=timezone.now())",
    ),
    Rule(
        "labels of submitted work (StepLabelQuerySet.submitted, submitted_rated; "
        "StepLabel.submitted_q through a relation)",
        ("labeling/models",),
        re.compile(r"assignment__status\s*=\s*(\w+\.)*(SUBMITTED\b|[\"']submitted[\"'])"),
        "StepLabel.objects.filter(assignment__status=Assignment.Status.SUBMITTED)",
    ),
    Rule(
        "a step's consensus (labeling.consensus: plurality_rating, majority_label, "
        "strict_majority_rating)",
        ("labeling/consensus.py",),
        re.compile(
            r"min\(\s*\w+\s+for\s+\w+\s*,\s*\w+\s+in\s+\w+\.items\(\)\s+if\s+\w+\s*==\s*\w+\s*\)"
            r"|\bpositive\s*>\s*(negative\b|len\(\w+\)\s*-\s*positive\b)"
            r"|\b2\s*\*\s*\w+\s*(<=|>)\s*\w+"
        ),
        "return positive > negative  # a tie: negative",
    ),
    Rule(
        "PRM800K's step-label codec (labeling.prm800k_steps: own_completion, completions_split, "
        "completions_join)",
        ("labeling/prm800k_steps.py",),
        re.compile(
            r"\[:\s*(\w+)\s*\]\s*\+\s*\w+\[\s*\1\s*\+\s*1\s*:\s*\]"
            r"|\bchosen\s+if\s+chosen\s+is\s+not\s+None\b"
            r"|\.insert\(\s*[\w.]*completion_index"
        ),
        "alternatives = completions[:own] + completions[own + 1 :]",
    ),
    Rule(
        "an export option, declared once (exports.policy.LabelPolicy, "
        "exports.formats.options.FORMAT_OPTIONS) and built into the form, API and command",
        ("exports/policy.py", "exports/formats/options.py"),
        re.compile(
            rf"^\s*({_EXPORT_OPTIONS})\s*=\s*(forms|serializers)\.\w+\("
            rf"|add_argument\(\s*[\"']--({_EXPORT_FLAGS})[\"']"
            rf"|^\s*[\"']--({_EXPORT_FLAGS})[\"']\s*(,|$)"
        ),
        "    max_length = forms.IntegerField(min_value=8, required=False)",
        where=("exports",),
    ),
    Rule(
        "the labelling page's submission fields and early finishes (labeling/_submit_fields.html, "
        "labeling/_finish_early.html)",
        ("templates/labeling/_submit_fields.html",),
        re.compile(r"name=\"(finish_reason|submission_key|total_time_ms)\""),
        '<input type="hidden" name="finish_reason" value="give_up">',
        where=("templates",),
        suffix=".html",
    ),
    Rule(
        "waiting in a test for another process or thread (tests.waiting.wait_until)",
        ("tests/waiting.py", GUARD),
        re.compile(r"time\.monotonic\(\)\s*\+|while\s+time\.monotonic\(\)"),
        "deadline = time.monotonic() + 30",
        where=("tests",),
    ),
)

# Raw SQL that writes a table: the table's app is the prefix of its name.
WRITE_SQL = re.compile(r"\b(UPDATE|INSERT\s+INTO|DELETE\s+FROM|COPY)\s+\"?([a-z]+)_[a-z_]+\b")
# The manager calls that write rows.
WRITES = {
    "update",
    "delete",
    "create",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
# Writes of labeling's tables by the apps above it that this re-cut has not moved yet (issue 37:
# labeling is to be the only writer of its tables); a new one fails. Path -> the models it writes
# through their managers, and "labeling" where it writes their tables in raw SQL.
KNOWN_WRITERS = {
    # Invitations and sign-up create the memberships they grant.
    "annotators/services.py": {"Invitation", "Membership"},
    # Review and adjudication (being gathered into one app with their models).
    "annotators/review/services.py": {"Review", "Adjudication"},
    # Machine evidence: the machines app writes the rows it asked for.
    "machines/evidence.py": {"StepEvidence"},
    # The import writer: its raw rows are held to the models by tests/test_rules_columns.py.
    "imports/db_writer.py": {"Membership", "Problem", "Solution", "Step"},
    "imports/management/commands/import_solutions.py": {"Campaign"},
    "imports/management/commands/seed_demo.py": {"Campaign", "Membership"},
}
# Raw SQL that may write another app's tables: the benchmarks' loaders.
SQL_WRITERS_EXEMPT = ("bench",)


def _sources(root: Path, where: tuple[str, ...], suffix: str) -> Iterator[Path]:
    for folder in where:
        for path in (root / folder).rglob(f"*{suffix}"):
            if "migrations" not in path.parts:
                yield path


def _at_home(relative: str, homes: tuple[str, ...]) -> bool:
    return any(relative == home or relative.startswith(home + "/") for home in homes)


def rule_copies(root: Path) -> list[str]:
    """Every line under ``root`` that spells a rule outside its home."""
    found = []
    for rule in RULES:
        for path in _sources(root, rule.where, rule.suffix):
            relative = path.relative_to(root).as_posix()
            if _at_home(relative, rule.homes):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if rule.pattern.search(line):
                    found.append(f"{relative}:{number}: {rule.name}: {line.strip()}")
    return found


def _labeling_models() -> set[str]:
    models = set()
    for path in (ROOT / "labeling" / "models").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.endswith(("QuerySet", "Manager")):
                models.add(node.name)
    return models


def _manager_model(node: ast.expr) -> str | None:
    """``Model`` when ``node`` is a chain that starts at ``Model.objects``."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr == "objects" and isinstance(node.value, ast.Name):
                return node.value.id
            node = node.value
        else:
            return None


def foreign_writes(root: Path) -> list[str]:
    """Writes of a table by an app that does not own it: a labeling model's manager written
    from an app above labeling, or raw SQL on another app's table (outside the known writers)."""
    models = _labeling_models()
    found = []
    for path in _sources(root, APPS, ".py"):
        relative = path.relative_to(root).as_posix()
        app = relative.split("/", 1)[0]
        known = KNOWN_WRITERS.get(relative, set())
        text = path.read_text()
        if app not in ("labeling", "common", "bench"):
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    model = _manager_model(node.func.value)
                    if node.func.attr in WRITES and model in models and model not in known:
                        found.append(f"{relative}:{node.lineno}: writes {model} (labeling's)")
        if app in SQL_WRITERS_EXEMPT:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in WRITE_SQL.finditer(line):
                owner = match.group(2)
                if owner in APPS and owner != app and owner not in known:
                    found.append(f"{relative}:{number}: raw SQL writes {owner}'s table: {line}")
    return found


def test_no_rule_is_spelled_outside_its_home():
    found = rule_copies(ROOT)
    assert not found, "copies of a rule (call its home instead):\n" + "\n".join(found)


def test_no_app_writes_a_table_of_another_app():
    found = foreign_writes(ROOT)
    assert not found, "writes of another app's table (call its command):\n" + "\n".join(found)


def test_the_guard_catches_a_planted_copy_of_each_rule(tmp_path):
    """Each rule's sample, planted outside its home, is caught (and only there); so is a write of
    a labeling table from an upper app, by the ORM and by raw SQL."""
    for rule in RULES:
        home = rule.homes[0]
        planted = tmp_path / rule.where[0] / f"planted{rule.suffix}"
        at_home = tmp_path / (home if home.endswith(rule.suffix) else f"{home}/p{rule.suffix}")
        for path in (planted, at_home):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(rule.sample + "\n")
        caught = rule_copies(tmp_path)
        assert any(rule.name in line for line in caught), f"not caught: {rule.name}"
        assert all(line.startswith(planted.relative_to(tmp_path).as_posix()) for line in caught)
        planted.unlink()
        at_home.unlink()
        assert rule_copies(tmp_path) == []

    writer = tmp_path / "annotators" / "planted.py"
    writer.parent.mkdir(exist_ok=True)
    writer.write_text(
        "Assignment.objects.filter(pk=1).update(status='expired')\n"
        "cursor.execute('UPDATE labeling_solution SET priority = 0')\n"
    )
    caught = "\n".join(foreign_writes(tmp_path))
    assert "writes Assignment (labeling's)" in caught and "raw SQL writes labeling" in caught
    writer.unlink()
    assert foreign_writes(tmp_path) == []
