"""The ``<id:...>`` path converter: database ids as the database holds them (64-bit).

A longer number is no id: the route does not match (404), where ``<int:...>`` would hand a
20-digit number to the database and fail there (a 500 on SQLite and PostgreSQL alike). Every
``urls.py`` that names an id imports this module, which registers the converter once.
"""

from __future__ import annotations

from django.urls import register_converter


class IdConverter:
    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
