"""The API's request parsers (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``). A module of its own:
REST framework imports it while its views are being defined, before ``common.api`` can load."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import exceptions, parsers

from common.jsoncheck import MAX_DEPTH, json_unfit


class JSONParser(parsers.JSONParser):
    """REST framework's JSON parser (strict: no NaN), also refusing what no field can store: a
    NUL character or lone surrogate in a string, and nesting deeper than ``MAX_DEPTH`` (which
    would otherwise end in a RecursionError, a 500). A 400 that names the path."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(
                f"JSON parse error - nested more than {MAX_DEPTH} levels deep"
            ) from None
        if (unfit := json_unfit(data)) is not None:
            path, reason = unfit
            raise exceptions.ParseError(f"JSON parse error - {path or 'the body'}: {reason}")
        return data
