"""The model endpoints the operator declared, as this app's pages offer them.

Endpoints, their declaration and their clients live in ``machines``, above this app. The
campaign's settings (phase 1 mode's sampler, a served PRM) and the data browser's item page (the
model to ask for evidence) only offer them by name and check the model chosen, so ``machines``
registers, when it is ready, two functions that list the declared endpoints (as every app
registers its job kinds with ``common.jobs``), and the pages here ask them. With nothing
registered, nothing is offered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class OfferedEndpoint(Protocol):
    """What a page here reads of a declared endpoint (``machines.endpoints.Endpoint``)."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def models(self) -> tuple[str, ...]: ...

    def model(self, model: str = "") -> str:
        """``model`` if the endpoint serves it (blank: its first); ``ValueError`` saying why
        not otherwise."""
        ...


Offered = Callable[[], Sequence[OfferedEndpoint]]


def _none() -> Sequence[OfferedEndpoint]:
    return ()


_OFFERED: dict[str, Offered] = {"samplers": _none, "scorers": _none}


def endpoints_offered_register(*, samplers: Offered, scorers: Offered) -> None:
    """Have the pages offer ``samplers()`` (chat endpoints) and ``scorers()`` (served PRMs)."""
    _OFFERED.update(samplers=samplers, scorers=scorers)


def sampler_endpoints() -> list[OfferedEndpoint]:
    """The declared chat endpoints: phase 1 mode's sampler, rollouts, a judge."""
    return list(_OFFERED["samplers"]())


def scorer_endpoints() -> list[OfferedEndpoint]:
    """The declared scoring endpoints: a PRM served elsewhere."""
    return list(_OFFERED["scorers"]())


def endpoint_choices(endpoints: Sequence[OfferedEndpoint]) -> list[tuple[str, str]]:
    """``(name, title)`` of each endpoint, for a form's choices (never its URL)."""
    return [(e.name, e.title) for e in endpoints]


def endpoint_model(endpoints: Sequence[OfferedEndpoint], name: str, model: str) -> str:
    """The model to ask of the endpoint ``name`` among ``endpoints`` (blank: its first);
    ``ValueError`` with the reason a person may read when it is not one of them or does not
    serve ``model``."""
    endpoint = next((e for e in endpoints if e.name == name), None)
    if endpoint is None:
        names = ", ".join(e.name for e in endpoints) or "none"
        raise ValueError(f"No endpoint {name[:60]!r} is declared; the endpoints are: {names}.")
    return endpoint.model(model)
