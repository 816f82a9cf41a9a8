"""What every API view shares: cursor pagination, query parameters, error shapes.

The views themselves live beside their domain (``labeling/api.py``, ``annotators/api.py``,
``imports/api.py``, ``exports/api.py``, ``learning/api.py``); routes are in
``stepwise/api_urls.py``. Authentication is the settings' default for every view (session, and
``annotators.authentication.TokenAuthentication`` for API keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from django.core.validators import MaxLengthValidator
from django.db.models import Model
from django.http import HttpRequest, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import exceptions, generics, pagination, serializers
from rest_framework.request import Request

from common.jobs import job_state_text

_Model = TypeVar("_Model", bound=Model)


class CursorPagination(pagination.CursorPagination):
    """Stable pages over tables of millions of rows: no OFFSET, no COUNT, new rows never shift
    a page. ``?page_size=`` up to 1,000."""

    page_size = 100
    max_page_size = 1000
    page_size_query_param = "page_size"
    ordering = "id"


class CursorListView(generics.ListAPIView[_Model]):
    """A list endpoint paged by ``CursorPagination``."""

    pagination_class = CursorPagination


class _MostItems(MaxLengthValidator):
    """``MaxLengthValidator`` whose limit is read when used (a setting): it gives the schema
    its ``maxItems``."""

    def __init__(self, most: int | Callable[[], int]) -> None:
        self.most = most
        super().__init__(0)

    @property
    def limit_value(self) -> int:
        return self.most() if callable(self.most) else self.most

    @limit_value.setter
    def limit_value(self, value: object) -> None:
        pass


class BoundedListField(serializers.ListField):
    """A list refused on its length before any item is validated (``ListField`` checks
    ``max_length`` only after validating every item: a long list costs before it is refused)."""

    def __init__(self, *, most: int | Callable[[], int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.most = _MostItems(most)  # an int, or a callable read at each request (a setting)
        self.validators.append(self.most)

    def to_internal_value(self, data: Any) -> list[Any]:
        most = self.most.limit_value
        if isinstance(data, list) and len(data) > most:
            raise exceptions.ValidationError(f"At most {most} items, not {len(data)}.")
        return super().to_internal_value(data)


class FiniteFloatField(serializers.FloatField):
    """A float as JSON can carry it: NaN and infinities (rows written before imports refused
    them) read as null instead of failing the whole page with a 500."""

    def to_representation(self, value: float) -> float | None:  # type: ignore[override]
        # ignore[override], cast: DRF's stubs say FloatField represents a value as str; it is
        # float(value), and null here where that is not finite.
        number = cast(float, super().to_representation(value))
        return number if math.isfinite(number) else None


@extend_schema_field(OpenApiTypes.STR)
class JobStateField(serializers.ReadOnlyField):
    """A job's state in words (``common.jobs.job_state_text``): ``waiting for a worker on queue
    long (no worker consumes it: ...)``, ``running``, ``done`` or ``failed``; beside the model's
    own ``status``, which clients compare."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("source", "*")
        kwargs.setdefault(
            "help_text",
            "The state in words; a waiting job names its queue and says when no worker "
            "consumes it.",
        )
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return job_state_text(value)


class ErrorSerializer(serializers.Serializer[dict[str, str]]):
    """A refusal: ``detail`` for people, ``code`` for programs."""

    detail = serializers.CharField()
    code = serializers.CharField(required=False)


def bad_request(field: str, message: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({field: [message]})


def query_int(request: Request, name: str) -> int | None:
    """An integer query parameter, or None when absent; a clear 400 when it is not one."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(name, f"{name} must be an integer, not {raw!r}.") from None
    if not 0 <= value < 2**63:
        raise bad_request(name, f"{name} is out of range.")
    return value


def query_text(request: Request, name: str) -> str | None:
    """A text query parameter; NUL is refused (PostgreSQL text cannot hold it)."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    if "\x00" in raw:
        raise bad_request(name, f"{name} must not contain NUL characters.")
    return raw


def query_bool(request: Request, name: str) -> bool | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    value = raw.strip().lower()
    if value in {"true", "1", "yes"}:
        return True
    if value in {"false", "0", "no"}:
        return False
    raise bad_request(name, f"{name} must be true or false, not {raw!r}.")


def query_choice(request: Request, name: str, choices: Iterable[object]) -> str | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    allowed = [str(c) for c in choices]
    if raw not in allowed:
        raise bad_request(name, f"{name} must be one of {', '.join(allowed)}, not {raw!r}.")
    return raw


def int_param(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, int, description=description)


def bool_param(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, bool, description=description)


def choice_param(name: str, choices: Iterable[object], description: str) -> OpenApiParameter:
    return OpenApiParameter(name, str, enum=[str(c) for c in choices], description=description)


def schema_add_error_responses(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: document the error shapes on every operation.

    The views answer 401 without credentials, 403 for a role that is not enough, 404 for
    campaigns and objects the caller may not know about, and 400 for bad input; a client
    generated from the schema must know those bodies.
    """
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault(
        "Error",
        {
            "type": "object",
            "description": "A refusal: `detail` for people, `code` for programs.",
            "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
            "required": ["detail"],
        },
    )
    components.setdefault(
        "ValidationError",
        {
            "type": "object",
            "description": "Bad input: every field that broke a rule, with the reasons "
            "(`non_field_errors` for rules across fields).",
            # A field's reasons: a list of strings; a nested field's or a list item's: an object.
            "additionalProperties": {"anyOf": [{"type": "array"}, {"type": "object"}]},
        },
    )
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    invalid = {
        "application/json": {
            "schema": {
                "anyOf": [
                    {"$ref": "#/components/schemas/ValidationError"},
                    {"$ref": "#/components/schemas/Error"},
                ]
            }
        }
    }
    texts = {
        "400": ("Bad input: the fields that broke a rule.", invalid),
        "401": ("No credentials, or an invalid or revoked token.", error),
        "403": ("Your role in this campaign does not allow this.", error),
        "404": ("No such object, or not one you may see.", error),
        "405": ("Method not allowed.", error),
        "406": ("Not acceptable (ask for application/json).", error),
        "415": ("Unsupported media type.", error),
        "429": ("Too many requests.", error),
    }
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for status_code, (text, content) in texts.items():
                if path.startswith("/api/schema") and status_code in {"400", "403", "404"}:
                    continue
                responses.setdefault(status_code, {"description": text, "content": content})
    return result


# --- Errors outside DRF's views ----------------------------------------------------------------
# A URL under /api/ that matches no route, or a request Django refuses before any view (a body
# over DATA_UPLOAD_MAX_MEMORY_SIZE), must still answer JSON: clients parse every API response.


def _json_or_page(
    request: HttpRequest, status_code: int, detail: str, code: str, page: HttpResponseBase
) -> HttpResponseBase:
    from django.http import JsonResponse

    if request.path.startswith("/api/"):
        return JsonResponse({"detail": detail, "code": code}, status=status_code)
    return page


def handler404(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    from django.views import defaults

    return _json_or_page(
        request, 404, "Not found.", "not_found", defaults.page_not_found(request, exception)
    )


def handler403(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    from django.views import defaults

    detail = (str(exception) if exception else "") or "Permission denied."
    return _json_or_page(
        request,
        403,
        detail,
        "permission_denied",
        defaults.permission_denied(request, exception),
    )


def handler400(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    from django.conf import settings
    from django.core.exceptions import RequestDataTooBig
    from django.views import defaults

    from common.pages import QueryInvalid

    page = defaults.bad_request(request, exception)
    if isinstance(exception, QueryInvalid):
        from django.http import HttpResponseBadRequest
        from django.utils.html import escape

        page = HttpResponseBadRequest(f"<h1>Bad request</h1><p>{escape(str(exception))}</p>")
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE / 1024 / 1024
        detail = (
            f"The request body is over {limit:.1f} MB (DATA_UPLOAD_MAX_MEMORY_SIZE); "
            "files go to the import upload, which has its own limit."
        )
        return _json_or_page(request, 413, detail, "too_large", page)
    detail = str(exception) if exception else "Bad request."
    return _json_or_page(request, 400, detail, "bad_request", page)


def handler500(request: HttpRequest) -> HttpResponseBase:
    from django.views import defaults

    return _json_or_page(
        request, 500, "Server error.", "server_error", defaults.server_error(request)
    )


IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,100}")  # printable ASCII, no spaces


def idempotent_job(request: Request, *, scope: str, create: Callable[[], Any]) -> Any:
    """The job ``create()`` makes, once per ``Idempotency-Key`` header of this user and scope.

    Without the header every call creates (as before). With it, the first request records the
    job it created in the same transaction (``common.models.IdempotentRequest``); the same key
    sent again returns that job, whatever happened to the first answer (lost, timed out, the
    broker down). Two concurrent requests with one key: the second waits for the first's
    commit on the unique key, then gets its job. A create that raises records nothing.
    """
    from django.db import IntegrityError, transaction

    from common.jobs import job_kind_of, job_kinds
    from common.models import IdempotentRequest

    key = request.headers.get("Idempotency-Key")
    if key is None:
        return create()
    if not request.user.is_authenticated:  # every job-creating view checks this before
        raise exceptions.NotAuthenticated()
    user_id = request.user.pk
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise bad_request("Idempotency-Key", "1 to 100 printable ASCII characters, no spaces.")
    with transaction.atomic():
        try:
            with transaction.atomic():
                record = IdempotentRequest.objects.create(user_id=user_id, scope=scope, key=key)
        except IntegrityError:
            record = IdempotentRequest.objects.get(user_id=user_id, scope=scope, key=key)
            return job_kinds()[record.job_kind].model.objects.get(pk=record.job_id)
        job = create()
        record.job_kind, record.job_id = job_kind_of(job).name, job.pk
        record.save(update_fields=["job_kind", "job_id"])
    return job
