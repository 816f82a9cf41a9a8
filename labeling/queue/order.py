"""The queue's order, written by its owner: the one writer of a solution's ``priority``,
``prm_score``, ``al_arm`` and ``al_placed_by``.

The queue serves by ``Solution.priority`` (highest first, ties to the older solution). An
active-learning run (``learning``) decides the order and calls ``queue_reorder`` with it; nothing
above this app writes the ``labeling_solution`` table.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from labeling.models import Solution

WRITE_BATCH = 20000  # rows per bulk UPDATE


def queue_reorder(
    *,
    ids: Sequence[int],
    scores: Sequence[float | None],
    priorities: Sequence[float],
    arms: Sequence[tuple[str, str]] | None = None,
) -> None:
    """Set ``prm_score`` (None: no PRM scored it), ``priority`` and (given ``arms``: ``(arm,
    strategy that placed it)`` per solution) ``al_arm`` and ``al_placed_by`` of many solutions in
    bulk.

    PostgreSQL: one ``UPDATE ... FROM unnest(arrays)`` per batch (a join, no per-row statement);
    SQLite: ``executemany`` of a prepared UPDATE, which SQLite runs in C. Both inside the caller's
    transaction (a run activates its model and reorders in one).
    """
    if arms is not None:
        _arms_rewrite(ids=ids, arms=arms)
    table = Solution._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(ids), WRITE_BATCH):
            chunk = slice(start, start + WRITE_BATCH)
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"UPDATE {table} AS s SET prm_score = v.score, priority = v.priority"
                    " FROM unnest(%s::bigint[], %s::float8[], %s::float8[])"
                    " AS v(id, score, priority) WHERE s.id = v.id",
                    [list(ids[chunk]), list(scores[chunk]), list(priorities[chunk])],
                )
            else:
                cursor.executemany(
                    f"UPDATE {table} SET prm_score = %s, priority = %s WHERE id = %s",
                    list(zip(scores[chunk], priorities[chunk], ids[chunk], strict=True)),
                )


def _arms_rewrite(*, ids: Sequence[int], arms: Sequence[tuple[str, str]]) -> None:
    """``al_arm`` and ``al_placed_by`` of many solutions: one UPDATE per pair and batch (the
    control arm and a few strategies)."""
    by_arm: dict[tuple[str, str], list[int]] = {}
    for sid, pair in zip(ids, arms, strict=True):
        by_arm.setdefault(pair, []).append(sid)
    for (arm, placed_by), members in by_arm.items():
        for start in range(0, len(members), WRITE_BATCH):
            Solution.objects.filter(pk__in=members[start : start + WRITE_BATCH]).update(
                al_arm=arm, al_placed_by=placed_by
            )
