"""The data browser's filters and sorts over a campaign's solutions, declared once.

:data:`FILTERS` says what a manager may filter by; :class:`SolutionFilter` parses them from a
query string (or the dict an export or a bulk job stored), applies them to a ``Solution``
queryset, and writes them back as query parameters, so a view can be bookmarked and shared. The
browser page (``labeling.curation.views``), the API's solution list (``labeling.api.SolutionList``,
whose OpenAPI parameters are built from :data:`FILTERS`), bulk actions (``labeling.curation``)
and exports of a selection (``exports.reader``) all go through it.

What the labels say (a negative or flagged step, disagreement, who labelled, reviews) is read
from submitted assignments only: drafts of a live lease are nobody's final word yet.

Search is PostgreSQL full-text search (English stemming, ``websearch_to_tsquery``: words, a
"quoted phrase", ``-excluded``) over the problem's text and each step's text, read through the
GIN-indexed stored ``search_vector`` columns of migration ``labeling.0006``; the whole query
must match the problem or one step.
On SQLite every word or quoted phrase must appear (case-insensitively) in the problem or in a
step: the same results for plain words and phrases, without stemming.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.http import QueryDict

from labeling.models import (
    Assignment,
    Problem,
    Review,
    Solution,
    Step,
    StepEvidence,
    StepLabel,
)


class FilterError(ValueError):
    """A filter value that cannot be read; ``field`` names the query parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class FilterSpec:
    """One filter as people set it: a query parameter, its label on the page, its help.

    ``type``: text, choice, int, float or bool. ``many``: the parameter may repeat (or hold
    comma-separated values); the solution matches any of them.
    """

    name: str
    label: str
    help: str
    type: str = "text"
    choices: tuple[tuple[str, str], ...] = ()
    many: bool = False

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.choices)


STATES = (
    ("open", "open: the queue wants labels"),
    ("leased", "leased: an annotator holds a live lease"),
    ("complete", "complete: has all the labels it wants"),
    ("archived", "archived: out of the queue, labels kept"),
)
ANSWERS = (("right", "right"), ("wrong", "wrong"), ("ungraded", "ungraded"))
EVIDENCE = (
    ("any", "has machine evidence (rollouts or a judge)"),
    ("none", "no machine evidence"),
    ("conflict", "human labels conflict with the machine evidence"),
)
REVIEWS = (
    ("unreviewed", "no review yet"),
    ("accepted", "an assignment accepted"),
    ("rejected", "an assignment rejected"),
)

FILTERS: tuple[FilterSpec, ...] = (
    FilterSpec(
        "q",
        "Search",
        'Words or a "quoted phrase" in the problem or a step (full-text search on PostgreSQL).',
    ),
    FilterSpec(
        "kind",
        "Kind",
        "regular, qc (quality control) or screening.",
        "choice",
        tuple(Solution.Kind.choices),
        many=True,
    ),
    FilterSpec(
        "state",
        "Queue state",
        "Where the solution stands in the queue.",
        "choice",
        STATES,
        many=True,
    ),
    FilterSpec("answer", "Final answer", "The graded final answer.", "choice", ANSWERS, many=True),
    FilterSpec("generator", "Generator", "Exact generator name.", many=True),
    FilterSpec("import_job", "Import job", "Created by this import job (id).", "int"),
    FilterSpec("problem", "Problem", "Solutions of this problem (id).", "int"),
    FilterSpec("negative", "Has a negative step", "A submitted label rated a step -1.", "bool"),
    FilterSpec("flagged", "Has a flagged step", "A submitted label flagged a step.", "bool"),
    FilterSpec(
        "disagree", "Annotators disagree", "Two submitted labels rate a step differently.", "bool"
    ),
    FilterSpec(
        "evidence",
        "Machine evidence",
        "Rollouts or a judge's verdict on its steps; conflict: a step rated positive that the "
        "machines say goes wrong, a judge's first error nobody marked, or a step rated negative "
        "from which every rollout reaches the answer.",
        "choice",
        EVIDENCE,
    ),
    FilterSpec("prm_min", "PRM score from", "The active PRM's score, at least this.", "float"),
    FilterSpec("prm_max", "PRM score to", "The active PRM's score, at most this.", "float"),
    FilterSpec("annotator", "Labelled by", "Submitted by this annotator (user id).", "int"),
    FilterSpec(
        "review",
        "Review",
        "Review status of its submitted assignments.",
        "choice",
        REVIEWS,
        many=True,
    ),
    FilterSpec("id", "Solutions", "These solution ids (a selection).", "int", many=True),
)
FILTERS_BY_NAME = {f.name: f for f in FILTERS}

SORTS: tuple[tuple[str, str], ...] = (
    ("queue", "queue order (what annotators get next)"),
    ("prm", "PRM score, highest first"),
    ("disagreement", "most disagreement first"),
    ("newest", "newest first"),
    ("id", "oldest first"),
)
SORT_NAMES = tuple(name for name, _ in SORTS)
MAX_IDS = 10_000  # ids one selection may name (a bigger set is a filter, not a list)


def _raw_values(params: Mapping, name: str) -> list[str]:
    if isinstance(params, QueryDict):
        raw = params.getlist(name)
    else:
        value = params.get(name)
        raw = [] if value is None else value if isinstance(value, list | tuple) else [value]
    out = []
    for item in raw:
        text = str(item)
        if "\x00" in text:
            raise FilterError(name, f"{name} must not contain NUL characters.")
        out.extend(part.strip() for part in text.split(",") if part.strip())
    return out


def _parse_one(spec: FilterSpec, raw: str) -> Any:
    if spec.type == "choice":
        if raw not in spec.values:
            allowed = ", ".join(spec.values)
            raise FilterError(spec.name, f"{spec.name} must be one of {allowed}, not {raw!r}.")
        return raw
    if spec.type == "int":
        try:
            value = int(raw)
        except ValueError:
            raise FilterError(spec.name, f"{spec.name} must be an integer, not {raw!r}.") from None
        if not 0 <= value < 2**63:
            raise FilterError(spec.name, f"{spec.name} is out of range.")
        return value
    if spec.type == "float":
        try:
            value = float(raw)
        except ValueError:
            raise FilterError(spec.name, f"{spec.name} must be a number, not {raw!r}.") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise FilterError(spec.name, f"{spec.name} must be a finite number.")
        return value
    if spec.type == "bool":
        lowered = raw.lower()
        if lowered in {"true", "1", "yes", "on"}:
            return True
        if lowered in {"false", "0", "no", "off"}:
            return False
        raise FilterError(spec.name, f"{spec.name} must be true or false, not {raw!r}.")
    return raw


@dataclass
class SolutionFilter:
    """Parsed filter values (only those set) and the sort."""

    values: dict[str, Any] = field(default_factory=dict)
    sort: str = "queue"

    @classmethod
    def from_params(cls, params: Mapping | None, *, default_sort: str = "queue") -> SolutionFilter:
        """Read the filters from query parameters (a ``QueryDict``, or a dict of str or lists).

        Unknown parameters are ignored (a page's other parameters share the query string); a bad
        value raises :class:`FilterError`.
        """
        params = params or {}
        values: dict[str, Any] = {}
        for spec in FILTERS:
            raws = _raw_values(params, spec.name)
            if not raws:
                continue
            if spec.name == "q":
                text = " ".join(_raw_values_plain(params, "q")).strip()
                if text:
                    values["q"] = text[:500]
                continue
            parsed = [_parse_one(spec, raw) for raw in raws]
            if spec.many:
                if spec.name == "id" and len(parsed) > MAX_IDS:
                    raise FilterError("id", f"A selection names at most {MAX_IDS} ids.")
                values[spec.name] = list(dict.fromkeys(parsed))
            else:
                values[spec.name] = parsed[-1]
        sort = (_raw_values(params, "sort") or [default_sort])[-1]
        if sort not in SORT_NAMES:
            raise FilterError("sort", f"sort must be one of {', '.join(SORT_NAMES)}, not {sort!r}.")
        return cls(values=values, sort=sort)

    def to_params(self, *, with_sort: bool = True) -> dict[str, list[str]]:
        """The filters as query parameters (what ``from_params`` reads back)."""
        out: dict[str, list[str]] = {}
        for spec in FILTERS:
            if spec.name not in self.values:
                continue
            value = self.values[spec.name]
            items = value if isinstance(value, list) else [value]
            out[spec.name] = [
                ("true" if v else "false") if isinstance(v, bool) else str(v) for v in items
            ]
        if with_sort:
            out["sort"] = [self.sort]
        return out

    def querystring(self, *, with_sort: bool = True) -> str:
        query = QueryDict(mutable=True)
        for name, items in self.to_params(with_sort=with_sort).items():
            query.setlist(name, items)
        return query.urlencode()

    def describe(self) -> str:
        """The filters as people read them: ``answer=wrong, negative=true``."""
        params = self.to_params(with_sort=False)
        return ", ".join(f"{name}={','.join(items)}" for name, items in params.items())

    def __bool__(self) -> bool:
        return bool(self.values)

    def apply(self, solutions: QuerySet) -> QuerySet:
        """``solutions`` narrowed to those that match every filter set."""
        v = self.values
        if "q" in v:
            solutions = solutions.filter(search_q(v["q"]))
        if "kind" in v:
            solutions = solutions.filter(kind__in=v["kind"])
        if "state" in v:
            solutions = solutions.filter(_states_q(v["state"]))
        if "answer" in v:
            solutions = solutions.filter(_answers_q(v["answer"]))
        if "generator" in v:
            solutions = solutions.filter(generator__in=v["generator"])
        if "import_job" in v:
            solutions = solutions.filter(import_job_id=v["import_job"])
        if "problem" in v:
            solutions = solutions.filter(problem_id=v["problem"])
        labels_here = StepLabel.objects.filter(assignment__solution_id=OuterRef("pk"))
        for name, labels in (
            ("negative", labels_here.submitted().filter(rating=-1)),
            ("flagged", labels_here.submitted().filter(flagged=True)),
        ):
            if name in v:
                has = Exists(labels)
                solutions = solutions.filter(has if v[name] else ~has)
        if "disagree" in v:
            # The kept count of the rule's steps (``SolutionQuerySet.disputes_recount``).
            disputed = Q(disputed_steps__gt=0)
            solutions = solutions.filter(disputed if v["disagree"] else ~disputed)
        if "evidence" in v:
            evidence = StepEvidence.objects.filter(solution_id=OuterRef("pk"))
            if v["evidence"] == "conflict":
                evidence = evidence.conflicting()
            has = Exists(evidence)
            solutions = solutions.filter(~has if v["evidence"] == "none" else has)
        if "prm_min" in v:
            solutions = solutions.filter(prm_score__gte=v["prm_min"])
        if "prm_max" in v:
            solutions = solutions.filter(prm_score__lte=v["prm_max"])
        if "annotator" in v:
            solutions = solutions.filter(
                Exists(
                    Assignment.objects.filter(
                        solution=OuterRef("pk"),
                        status=Assignment.Status.SUBMITTED,
                        annotator_id=v["annotator"],
                    )
                )
            )
        if "review" in v:
            solutions = solutions.filter(_reviews_q(v["review"]))
        if "id" in v:
            solutions = solutions.filter(pk__in=v["id"])
        return solutions

    def ordered(self, solutions: QuerySet) -> QuerySet:
        """``solutions`` in the sort order, with ``sort_key`` annotated where it has one."""
        key, descending = _sort_key(self.sort)
        if key is None:
            return solutions.order_by("-pk" if descending else "pk")
        if self.sort == "queue":
            solutions = solutions.annotate(queued=queued_first())
        return solutions.annotate(sort_key=key).order_by(*self.ordering)

    @property
    def ordering(self) -> tuple[str, ...]:
        """The ``order_by`` of :meth:`ordered` (the API's cursor pagination reads it)."""
        key, descending = _sort_key(self.sort)
        if key is None:
            return ("-pk",) if descending else ("pk",)
        order = ("-sort_key" if descending else "sort_key", "pk")
        return ("-queued", *order) if self.sort == "queue" else order

    def without(self, name: str, value: Any = None) -> SolutionFilter:
        """This filter less ``name`` (less only ``value`` of a filter that holds many)."""
        values = dict(self.values)
        if value is not None and isinstance(values.get(name), list):
            values[name] = [v for v in values[name] if v != value]
        if value is None or not values.get(name):
            values.pop(name, None)
        return SolutionFilter(values=values, sort=self.sort)


def _raw_values_plain(params: Mapping, name: str) -> list[str]:
    """A text parameter as given (commas are part of a search)."""
    if isinstance(params, QueryDict):
        return params.getlist(name)
    value = params.get(name)
    if value is None:
        return []
    return [str(x) for x in value] if isinstance(value, list | tuple) else [str(value)]


# --- Search ----------------------------------------------------------------------------------


# Ids of the solutions whose problem or one of whose steps matches, from the stored tsvector
# columns (PostgreSQL only: migration labeling.0006).
_SEARCH_SQL = """
    SELECT s.id FROM labeling_solution s
    WHERE s.problem_id = ANY(ARRAY(
        SELECT p.id FROM labeling_problem p
        WHERE p.search_vector @@ websearch_to_tsquery('english'::regconfig, %s)))
    UNION ALL
    SELECT st.solution_id FROM labeling_step st
    WHERE st.search_vector @@ websearch_to_tsquery('english'::regconfig, %s)
"""
# Up to this many matches a search becomes a list of ids (read first, with the index); more
# stay a subquery. The planner cannot estimate a phrase's matches (it guesses thousands where
# there are a few hundred) and would scan every solution of the campaign to test each one.
SEARCH_IDS_MAX = 5000


def search_q(text: str) -> Q:
    """Solutions whose problem or one of whose steps matches the search ``text``."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_SEARCH_SQL + " LIMIT %s", (text, text, SEARCH_IDS_MAX + 1))
            rows = cursor.fetchall()
        if len(rows) <= SEARCH_IDS_MAX:
            return Q(pk__in=sorted({pk for (pk,) in rows}))
        # Many matches: each solution is tested against the matches, hashed, while the page
        # walks its order (it stops once it has a page).
        problems = Problem.objects.filter(_matches(text)).values("pk")
        steps = Step.objects.filter(_matches(text)).values("solution_id")
        return Q(problem_id__in=problems) | Q(pk__in=steps)
    matched = Q()
    for term in _terms(text):
        steps = Step.objects.filter(text__icontains=term).values("solution_id")
        matched &= Q(problem__text__icontains=term) | Q(pk__in=steps)
    return matched


def _matches(text: str) -> RawSQL:
    # Unqualified: in each subquery only the searched table has the column.
    return RawSQL(
        "search_vector @@ websearch_to_tsquery('english'::regconfig, %s)",
        (text,),
        output_field=BooleanField(),
    )


def _terms(text: str) -> list[str]:
    """Quoted phrases and words (SQLite's search); ``-word`` exclusions are dropped."""
    try:
        parts = shlex.split(text)
    except ValueError:  # an unbalanced quote: plain words
        parts = text.replace('"', " ").split()
    return [p for p in parts if p and not p.startswith("-") and p.lower() != "or"]


# --- Queue states, answers, reviews ----------------------------------------------------------


def live_lease() -> Exists:
    """Whether the outer solution has a live lease (``Assignment.live_lease_q``)."""
    return Exists(Assignment.objects.live_leases().filter(solution=OuterRef("pk")))


def _states_q(states: Iterable[str]) -> Q:
    """Disjoint states: archived, else leased (a live lease), else open or complete."""
    live = live_lease()
    kept = Q(archived=False)
    by_state = {
        "archived": Q(archived=True),
        "leased": kept & Q(live),
        "open": kept & Q(is_open=True) & ~Q(live),
        "complete": kept & Q(is_open=False) & ~Q(live),
    }
    out = Q(pk__in=[])
    for state in states:
        out |= by_state[state]
    return out


def _answers_q(answers: Iterable[str]) -> Q:
    by_answer = {
        "right": Q(answer_is_correct=True),
        "wrong": Q(answer_is_correct=False),
        "ungraded": Q(answer_is_correct__isnull=True),
    }
    out = Q(pk__in=[])
    for answer in answers:
        out |= by_answer[answer]
    return out


def _reviews_q(reviews: Iterable[str]) -> Q:
    def reviewed(decision: str | None) -> Exists:
        rows = Review.objects.filter(assignment__solution_id=OuterRef("pk"))
        if decision:
            rows = rows.filter(decision=decision)
        return Exists(rows)

    by_review = {
        "unreviewed": ~Q(reviewed(None)),
        "accepted": Q(reviewed(Review.Decision.ACCEPTED)),
        "rejected": Q(reviewed(Review.Decision.REJECTED)),
    }
    out = Q(pk__in=[])
    for review in reviews:
        out |= by_review[review]
    return out


# --- Sorts and pages -------------------------------------------------------------------------


def queued_first() -> Case:
    """1 for a solution the queue may serve (open, not archived: the claim's own condition,
    ``claim_candidates``), 0 for the rest: "queue order" lists what is served next first."""
    return Case(When(is_open=True, archived=False, then=Value(1)), default=Value(0))


def _sort_key(sort: str) -> tuple[Any, bool]:
    """(the key expression or None for the id itself, descending)."""
    if sort == "queue":
        return F("priority"), True
    if sort == "prm":
        return Coalesce("prm_score", Value(-1.0)), True
    if sort == "disagreement":
        # The kept count (``SolutionQuerySet.disputes_recount``); ``solution_by_disputes`` walks it.
        return F("disputed_steps"), True
    if sort == "newest":
        return None, True
    return None, False


@dataclass
class Page:
    solutions: list[Solution]
    next_cursor: str | None


def solutions_page(
    solutions: QuerySet, solution_filter: SolutionFilter, *, cursor: str | None, size: int = 50
) -> Page:
    """One page of ``solutions`` in the filter's order after ``cursor`` (keyset: no OFFSET).

    A cursor is the last row's sort key and id (``"0.73_123"``; ``"123"`` for the id sorts;
    ``"1_0.73_123"`` in queue order, led by whether the queue may serve it).
    """
    if solution_filter.sort == "queue":
        return _queue_page(solutions, cursor=cursor, size=size)
    key, descending = _sort_key(solution_filter.sort)
    ordered = solution_filter.ordered(solutions)
    if cursor:
        try:
            if key is None:
                last_id = int(cursor)
            else:
                raw_key, raw_id = cursor.rsplit("_", 1)
                last_key, last_id = float(raw_key), int(raw_id)
        except ValueError:
            raise FilterError("cursor", "This page link is broken: start again.") from None
        if key is None:
            ordered = ordered.filter(**{"pk__lt" if descending else "pk__gt": last_id})
        else:
            before = Q(sort_key__lt=last_key) if descending else Q(sort_key__gt=last_key)
            ordered = ordered.filter(before | Q(sort_key=last_key, pk__gt=last_id))
    rows = list(ordered[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    next_cursor = None
    if more and rows:
        last = rows[-1]
        next_cursor = str(last.pk) if key is None else f"{float(last.sort_key)!r}_{last.pk}"
    return Page(rows, next_cursor)


def _queue_page(solutions: QuerySet, *, cursor: str | None, size: int) -> Page:
    """A page in queue order (``queued_first``, then priority): the solutions the queue may
    serve, then the rest, each walked in priority order (the index ``solution_browse_queue``);
    ordering by ``queued_first()`` in SQL would sort every solution of the campaign."""
    group, after = 1, Q()
    if cursor:
        try:
            raw_group, raw_key, raw_id = cursor.split("_", 2)
            group, last_key, last_id = int(raw_group), float(raw_key), int(raw_id)
        except ValueError:
            raise FilterError("cursor", "This page link is broken: start again.") from None
        if group not in (0, 1):
            raise FilterError("cursor", "This page link is broken: start again.")
        after = Q(priority__lt=last_key) | Q(priority=last_key, pk__gt=last_id)
    served = Q(is_open=True, archived=False)
    rows: list[Solution] = []
    for part in range(group, -1, -1):
        part_rows = (
            solutions.filter(served if part else ~served)
            .filter(after if part == group else Q())
            .annotate(queued=Value(part), sort_key=F("priority"))
            .order_by("-priority", "pk")
        )
        rows += part_rows[: size + 1 - len(rows)]
        if len(rows) > size:
            break
    more = len(rows) > size
    rows = rows[:size]
    next_cursor = None
    if more and rows:
        last: Any = rows[-1]  # with the query's annotations, queued and sort_key
        next_cursor = f"{last.queued}_{float(last.sort_key)!r}_{last.pk}"
    return Page(rows, next_cursor)


def count_capped(solutions: QuerySet, cap: int = 10_000) -> tuple[int, bool]:
    """How many match, counting no further than ``cap`` (a page must not count a million rows);
    the flag says whether there are more."""
    n = solutions.order_by().values("pk")[: cap + 1].count()
    return min(n, cap), n > cap
