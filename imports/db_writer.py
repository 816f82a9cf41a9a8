"""The writing pass of an import: parsed solutions written batch by batch, in the caller's
transaction (``rows.TableRows``: COPY on PostgreSQL).

Problems and solutions are deduplicated by their content hashes, submitted labels by a submission
key (campaign, labeler, timestamp, solution, ratings), so importing a file twice writes nothing
the second time. New solutions are written with their queue slots already counted; older
solutions that received labels are recounted with ``refresh_queue_state`` at ``finish``, and every
solution that received labels has its disagreements recounted (``disputes_recount``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.utils import timezone

from labeling.models import (
    Assignment,
    Campaign,
    Membership,
    Problem,
    Solution,
    Step,
    StepLabel,
    is_open_value,
)

from .records import LabelIn, SolutionIn
from .result import ImportResult, ImportValidationError, LineError
from .rows import Ids, TableRows

CHUNK = 5000  # values per IN (...) list: SQLite takes at most 32,766 parameters


@dataclass(slots=True)
class _Known:
    """What the writer remembers of a problem: its id, and which of its fields are filled."""

    pk: int
    truth: str
    solution: bool
    subject: bool
    level: bool
    unique_id: bool


def _json(value: object) -> str | None:
    """A JSON column's value as ``TableRows`` takes it: serialised, or None for SQL NULL."""
    return None if value is None else json.dumps(value, ensure_ascii=False)


class DatabaseWriter:
    """Writes parsed solutions batch by batch, remembering what exists (by content hash)."""

    def __init__(
        self, *, campaign: Campaign, source: str, file: str, import_job_id: int | None = None
    ) -> None:
        self.campaign = campaign
        self.source = source
        self.import_job_id = import_job_id  # recorded on the solutions it creates
        self.file = file
        self.result = ImportResult()
        self.problems: dict[str, _Known] = {}
        self.solutions: dict[str, int] = {}
        self.keys: set[str] = set()
        self.users: dict[str, int] = {}
        self.touched: set[int] = set()  # older solutions given new assignments
        self.labelled: set[int] = set()  # every solution given new labels (disputes recounted)
        self.created: list[int] = []  # [lowest, highest] id of the solutions created
        self.fills: dict[int, dict[str, str]] = {}  # problem id -> blank fields to fill
        self.now = timezone.now()
        # In a campaign without problems (solutions), none can exist but those this import wrote
        # and remembers: the per-batch lookups are skipped. Likewise assignments of solutions.
        self.had_problems = Problem.objects.filter(campaign=campaign).exists()
        self.had_solutions = Solution.objects.filter(campaign=campaign).exists()
        self.problem_rows = TableRows(
            Problem,
            [
                "id",
                "campaign_id",
                "text",
                "ground_truth_answer",
                "ground_truth_solution",
                "subject",
                "level",
                "unique_id",
                "content_hash",
            ],
        )
        self.solution_rows = TableRows(
            Solution,
            [
                "id",
                "campaign_id",
                "problem_id",
                "generator",
                "generation",
                "kind",
                "pre_generated",
                "answer",
                "answer_is_correct",
                "verifier_score",
                "source",
                "source_ref",
                "content_hash",
                "assignment_count",
                "is_open",
                "import_job_id",
                "trace",
            ],
        )
        self.step_rows = TableRows(
            Step, ["id", "solution_id", "index", "text", "raw_text", "gold_rating", "content"]
        )
        self.assignment_rows = TableRows(
            Assignment,
            [
                "id",
                "campaign_id",
                "solution_id",
                "annotator_id",
                "status",
                "leased_at",
                "submitted_at",
                "finish_reason",
                "total_time_ms",
                "submission_key",
                "source",
                "outcome_rating",
            ],
        )
        self.label_rows = TableRows(
            StepLabel,
            [
                "assignment_id",
                "step_id",
                "rating",
                "flagged",
                "completion_index",
                "alternatives",
                "human_completion",
                "chosen_completion",
            ],
        )
        self.ids = {model: Ids(model) for model in (Problem, Solution, Step, Assignment)}

    def add_labelers(self, labelers: set[str]) -> None:
        """An account (unusable password) and annotator membership for every labeler."""
        if not labelers:
            return
        User = get_user_model()
        names = sorted(labelers)
        for i in range(0, len(names), CHUNK):
            chunk = names[i : i + CHUNK]
            existing = dict(User.objects.filter(username__in=chunk).values_list("username", "pk"))
            new = [
                User(username=n, password=make_password(None)) for n in chunk if n not in existing
            ]
            User.objects.bulk_create(new)
            self.result.users_created += len(new)
            self.users.update(User.objects.filter(username__in=chunk).values_list("username", "pk"))
        members = set(
            Membership.objects.filter(campaign=self.campaign).values_list("user_id", flat=True)
        )
        Membership.objects.bulk_create(
            Membership(
                user_id=pk, campaign=self.campaign, role=Membership.Role.ANNOTATOR, is_imported=True
            )
            for pk in self.users.values()
            if pk not in members
        )

    def write(self, items: list[tuple[int, SolutionIn]]) -> None:
        hashed = [(n, s, s.problem.content_hash, s.content_hash) for n, s in items]
        self.result.lines = max(self.result.lines, items[-1][0])
        self._problems(hashed)
        labels = self._unseen_labels(hashed)
        # A label holds its solution's slot as a submitted assignment does (``holds_slot``): one
        # that gave up or reported a bad problem leaves it to someone else.
        slots = Counter(
            sh for sh, label, _ in labels if label.finish_reason not in Assignment.RELEASING_REASONS
        )
        new_steps = self._solutions([h for h in hashed if not h[1].problem_only], slots)
        self._labels(labels, new_steps)

    def _problems(self, hashed: list) -> None:
        unknown = {}
        for _, s, ph, _ in hashed:
            if ph not in self.problems:
                unknown.setdefault(ph, s.problem)
        if unknown and self.had_problems:
            rows = Problem.objects.filter(campaign=self.campaign, content_hash__in=list(unknown))
            for pk, h, truth, solution, subject, level, uid in rows.values_list(
                "pk",
                "content_hash",
                "ground_truth_answer",
                "ground_truth_solution",
                "subject",
                "level",
                "unique_id",
            ):
                self.problems[h] = _Known(
                    pk, truth, solution is not None, bool(subject), bool(level), bool(uid)
                )
        new = [(h, p) for h, p in unknown.items() if h not in self.problems]
        rows = []
        for pk, (h, p) in zip(self.ids[Problem].take(len(new)), new, strict=True):
            rows.append(
                (
                    pk,
                    self.campaign.pk,
                    p.text,
                    p.ground_truth_answer,
                    p.ground_truth_solution,
                    p.subject,
                    p.level,
                    p.unique_id,
                    h,
                )
            )
            self.problems[h] = _Known(
                pk,
                p.ground_truth_answer,
                p.ground_truth_solution is not None,
                bool(p.subject),
                bool(p.level),
                bool(p.unique_id),
            )
        if rows:
            self.result.problems_created += self.problem_rows.insert(rows)
        for number, s, ph, _ in hashed:
            self._merge(self.problems[ph], s.problem, number)

    def _merge(self, known: _Known, p, number: int) -> None:
        """Fill what a problem row lacks from a later line; refuse a different ground truth."""
        if p.ground_truth_answer and known.truth and p.ground_truth_answer != known.truth:
            raise ImportValidationError(
                [
                    LineError(
                        self.file,
                        number,
                        "ground_truth_answer",
                        f"{p.ground_truth_answer!r}, but the campaign has this problem with "
                        f"{known.truth!r}",
                    )
                ]
            )
        fill = {}
        if p.ground_truth_answer and not known.truth:
            fill["ground_truth_answer"] = known.truth = p.ground_truth_answer
        if p.ground_truth_solution is not None and not known.solution:
            fill["ground_truth_solution"], known.solution = p.ground_truth_solution, True
        for name in ("subject", "level", "unique_id"):
            if getattr(p, name) and not getattr(known, name):
                fill[name] = getattr(p, name)
                setattr(known, name, True)
        if fill:
            self.fills.setdefault(known.pk, {}).update(fill)

    def _solutions(self, hashed: list, labels: Counter) -> dict[int, list[int]]:
        """Create the solutions not seen yet, with their steps; returns their step ids.

        ``labels`` counts the labels this batch brings per solution hash: a new solution is
        written with its slots already counted, so that only solutions that existed before
        need ``refresh_queue_state`` (recounting a hundred thousand fresh rows would rewrite each).
        """
        unknown: dict[str, SolutionIn] = {}
        for _, s, _, sh in hashed:
            if sh not in self.solutions:
                unknown.setdefault(sh, s)
        if not unknown:
            return {}
        if self.had_solutions:
            rows = Solution.objects.filter(campaign=self.campaign, content_hash__in=list(unknown))
            gold = []
            for h, pk in rows.values_list("content_hash", "pk"):
                self.solutions[h] = pk
                self.result.solutions_existing += 1
                if unknown[h].gold is not None:
                    gold.append((pk, unknown[h]))
            self._gold_apply(gold)
            self._known_keys(unknown)
        new = [(h, s) for h, s in unknown.items() if h not in self.solutions]
        if not new:
            return {}
        step_ids = iter(self.ids[Step].take(sum(len(s.steps) for _, s in new)))
        solution_rows, step_rows, new_steps = [], [], {}
        for pk, (h, s) in zip(self.ids[Solution].take(len(new)), new, strict=True):
            solution_rows.append(
                (
                    pk,
                    self.campaign.pk,
                    self.problems[s.problem.content_hash].pk,  # (a cached hash)
                    s.generator,
                    s.generation,
                    s.kind,
                    s.pre_generated,
                    s.answer,
                    s.answer_is_correct,
                    s.verifier_score,
                    self.source,
                    s.source_ref,
                    h,
                    labels[h],
                    is_open_value(self.campaign, kind=s.kind, slots=labels[h]),
                    self.import_job_id,
                    _json(s.trace),
                )
            )
            ids = new_steps[pk] = [next(step_ids) for _ in s.steps]
            gold = s.gold or [None] * len(ids)
            raws = s.raw_steps or s.steps
            contents: list[dict | None] = [*s.contents] if s.contents else [None] * len(ids)
            step_rows.extend(
                (sid, pk, i, text, raw if raw != text else "", g, _json(c))
                for i, (sid, text, raw, g, c) in enumerate(
                    zip(ids, s.steps, raws, gold, contents, strict=True)
                )
            )
            self.solutions[h] = pk
        self.result.solutions_created += self.solution_rows.insert(solution_rows)
        self.result.steps_created += self.step_rows.insert(step_rows)
        self.created = [min(self.created + list(new_steps)), max(self.created + list(new_steps))]
        return new_steps

    def _known_keys(self, unknown: dict[str, SolutionIn]) -> None:
        """A generated sample whose key (``source_ref``) the campaign has is not written again,
        even when its text differs (a resumed job that sampled it a second time)."""
        keyed = {s.key: h for h, s in unknown.items() if s.key and h not in self.solutions}
        if not keyed:
            return
        rows = Solution.objects.filter(
            campaign=self.campaign, source=self.source, source_ref__in=list(keyed)
        )
        for key, pk in rows.values_list("source_ref", "pk"):
            self.solutions[keyed[key]] = pk
            self.result.solutions_existing += 1

    def _gold_apply(self, existing: list[tuple[int, SolutionIn]]) -> None:
        """Give solutions already in the campaign the kind and gold ratings the file carries
        (a file re-imported with ``--as-gold``); their queue state is recounted at ``finish``."""
        if not existing:
            return
        wanted = dict(existing)
        changed: set[int] = set()
        kinds = Solution.objects.filter(pk__in=list(wanted)).values_list("pk", "kind")
        for pk, kind in kinds:
            if kind != wanted[pk].kind:
                Solution.objects.filter(pk=pk).update(kind=wanted[pk].kind)
                changed.add(pk)
        steps = []
        for step in Step.objects.filter(solution_id__in=list(wanted)).only(
            "pk", "solution_id", "index", "gold_rating"
        ):
            gold = wanted[step.solution_id].gold
            rating = gold[step.index] if step.index < len(gold) else None
            if step.gold_rating != rating:
                step.gold_rating = rating
                steps.append(step)
                changed.add(step.solution_id)
        Step.objects.bulk_update(steps, ["gold_rating"], batch_size=1000)
        self.touched |= changed
        self.result.solutions_gold_applied += len(changed)

    def _unseen_labels(self, hashed: list) -> list[tuple[str, LabelIn, str]]:
        """(solution hash, label, submission key) of the labels not met earlier in the file."""
        out = []
        for _, s, _, sh in hashed:
            for label in s.labels:
                key = label.submission_key(self.campaign.pk, sh)
                if key in self.keys:
                    self.result.assignments_existing += 1
                    continue
                self.keys.add(key)
                out.append((sh, label, key))
        return out

    def _labels(self, labels: list, new_steps: dict[int, list[int]]) -> None:
        """Create an assignment with its step labels for every label not imported before."""
        todo = [(self.solutions[sh], label, key) for sh, label, key in labels]
        # Only a solution that existed before this batch can have the assignment already.
        old = [(pk, label, key) for pk, label, key in todo if pk not in new_steps]
        if old and self.had_solutions:
            # (annotator, submission_key) is the unique index this lookup can use.
            existing = set(
                Assignment.objects.filter(
                    annotator_id__in={self.users[label.labeler] for _, label, _ in old},
                    submission_key__in=[key for _, _, key in old],
                ).values_list("submission_key", flat=True)
            )
            self.result.assignments_existing += len(existing)
            todo = [t for t in todo if t[2] not in existing]
        self.labelled |= {pk for pk, _, _ in todo}
        steps = dict(new_steps)
        old_solutions = {pk for pk, _, _ in todo if pk not in new_steps}
        if old_solutions:
            self.touched |= old_solutions
            for solution_id, pk in (
                Step.objects.filter(solution_id__in=old_solutions)
                .order_by("solution_id", "index")
                .values_list("solution_id", "pk")
            ):
                steps.setdefault(solution_id, []).append(pk)
        if not todo:
            return
        assignment_rows, label_rows = [], []
        for aid, (solution_id, label, key) in zip(
            self.ids[Assignment].take(len(todo)), todo, strict=True
        ):
            assignment_rows.append(
                (
                    aid,
                    self.campaign.pk,
                    solution_id,
                    self.users[label.labeler],
                    Assignment.Status.SUBMITTED,
                    label.submitted_at or self.now,
                    label.submitted_at,
                    label.finish_reason,
                    label.total_time_ms,
                    key,
                    self.source,
                    label.outcome,
                )
            )
            for sid, sl in zip(steps[solution_id], label.steps, strict=False):
                label_rows.append(
                    (
                        aid,
                        sid,
                        sl.rating,
                        sl.flagged,
                        sl.completion_index,
                        json.dumps(sl.alternatives) if sl.alternatives else "[]",
                        None if sl.human_completion is None else json.dumps(sl.human_completion),
                        sl.chosen_completion,
                    )
                )
        self.result.assignments_created += self.assignment_rows.insert(assignment_rows)
        self.result.step_labels_created += self.label_rows.insert(label_rows)

    def finish(self) -> None:
        for pk, fill in self.fills.items():
            Problem.objects.filter(pk=pk).update(**fill)
        touched = sorted(self.touched)
        for i in range(0, len(touched), CHUNK):
            Solution.objects.filter(pk__in=touched[i : i + CHUNK]).refresh_queue_state()
        labelled = sorted(self.labelled)
        for i in range(0, len(labelled), CHUNK):
            Solution.objects.filter(pk__in=labelled[i : i + CHUNK]).disputes_recount()
