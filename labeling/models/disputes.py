"""The disputed-step rule in SQL, for the outermost query over solutions.

One home that both sides read: the labels' queryset (``StepLabelQuerySet.disputed_steps``, whose
per-solution count this is, and ``disputed_step_count`` for a sort) and the solution's kept count
(``disputes_recount``, inside every submit). It names only tables, so neither models module
imports the other for it.
"""

from __future__ import annotations

from django.db import models
from django.db.models.expressions import RawSQL

# ``StepLabelQuerySet.disputed_steps`` counted per solution, in SQL for the outermost query (it
# names the solution table, which a subquery would alias). Only a solution with two submitted
# assignments can have any: that is checked first (one probe of an index), so the labels of the
# others are never read. A sort by it still computes it for every match.
DISPUTED_STEP_COUNT_SQL = """
    CASE WHEN EXISTS (
        SELECT 1 FROM labeling_assignment a2
        WHERE a2.solution_id = labeling_solution.id AND a2.status = 'submitted'
        LIMIT 1 OFFSET 1
    ) THEN (
        SELECT count(*) FROM (
            SELECT l.step_id FROM labeling_steplabel l
            JOIN labeling_assignment a ON a.id = l.assignment_id
            WHERE a.solution_id = labeling_solution.id AND a.status = 'submitted'
              AND l.rating IS NOT NULL
            GROUP BY l.step_id HAVING min(l.rating) <> max(l.rating)
        ) d
    ) ELSE 0 END
"""


def disputed_step_count() -> RawSQL:
    """The number of the outer solution's steps annotators disagree on (``StepLabelQuerySet``)."""
    return RawSQL(DISPUTED_STEP_COUNT_SQL, (), output_field=models.IntegerField())
