"""Operations that migrations share: moving a model's Django bookkeeping to another app.

A model moved between apps keeps its table (``db_table``); only Django's state and its content
type change app. Moving the content type row (rather than letting Django create a new one)
keeps the model's permissions, and the admin log entries that point at it, working.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.apps.registry import Apps
from django.db.backends.base.schema import BaseDatabaseSchemaEditor


def content_types_moved(
    old_app: str, new_app: str, models: Sequence[str]
) -> Callable[[Apps, BaseDatabaseSchemaEditor], None]:
    """A ``RunPython`` function that relabels the content types of ``models`` to ``new_app``."""

    def move(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        ContentType = apps.get_model("contenttypes", "ContentType")
        db = schema_editor.connection.alias
        for model in models:
            if ContentType.objects.using(db).filter(app_label=new_app, model=model).exists():
                continue  # created already (a database that never had the old one)
            ContentType.objects.using(db).filter(app_label=old_app, model=model).update(
                app_label=new_app
            )

    return move
