"""The columns of annotators' tables, for the raw SQL that writes them (``common.columns``):
the queue benchmark's loader creates API tokens with COPY. Held to the model by
``tests/test_rules_columns.py``."""

from __future__ import annotations

from common.columns import Columns

API_TOKEN = Columns(
    "annotators_apitoken",
    required=("user_id", "name", "key_hash", "key_hint", "created_at"),
    filled=("id", "last_used_at", "revoked_at"),
)
