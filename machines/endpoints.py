"""Model endpoints: declared by the operator, chosen by name, reached only as declared.

Every place where the server itself calls a model (generation's chat completions, a PRM served
on vLLM's pooling API or as a plain step-scores server, rollouts, an LLM judge) takes its
endpoint from here, so one declaration and one set of rules hold for all of them:

- **Declared endpoints** come from ``settings.STEPWISE_ENDPOINTS`` (the JSON of the environment
  variable ``STEPWISE_ENDPOINTS`` and/or the file ``STEPWISE_ENDPOINTS_FILE``): a list of
  ``{name, kind, base_url, models, key_env, timeout_s, max_concurrency, label}``. They are checked
  when the app starts (``endpoints_check``, from ``machines.apps``): a bad entry stops the process
  with ``ImproperlyConfigured`` naming the entry and the field. A manager picks one by ``name``
  and one of its ``models``; the URL is the operator's and is not shown to managers.
- **A key goes only to its endpoint**: ``key_env`` names the environment variable that holds it;
  it is read when a client is built, sent as ``Authorization: Bearer`` to that endpoint alone, and
  never stored. A free-form URL never gets a key.
- **Free-form URLs** exist only where the operator turns them on (``STEPWISE_ENDPOINT_URLS``), and
  only to the hosts listed in ``STEPWISE_ENDPOINT_HOSTS`` (names, addresses or networks). The
  check is made on addresses, after resolution: every address of the name (IPv4 and IPv6, and the
  IPv4 address inside a mapped, NAT64, 6to4 or Teredo one), whatever the spelling of the URL
  (``0x7f000001``, ``2130706433``, ``127.1``, ``[::1]``...). Loopback, private, link-local,
  shared, unspecified, multicast and reserved addresses are refused unless an address or network
  listed covers them. The client connects to the very address that was checked (the name is not
  resolved again between the check and the connection, so DNS rebinding gains nothing).
- **Clients** built here follow no redirect (one could point anywhere), ignore the proxy
  variables of the environment, and keep a deadline for the whole request
  (``machines.deadline``); ``machines.client.endpoint_post`` bounds what an answer may be.
- **Errors shown to managers** (``machines.client.endpoint_error_message``) say what failed in
  words that do not map the network: for a free-form URL, a refused connection, a closed port,
  a timeout and a protocol error read the same. The operator's log keeps the detail.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import socket
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from machines.deadline import DeadlineTransport

log = logging.getLogger(__name__)

CHAT = "chat"  # an OpenAI-compatible chat-completions server: generation, rollouts, a judge
POOLING = "pooling"  # vLLM's pooling API (POST /pooling): a process reward model
STEP_SCORES = "step-scores"  # POST {problem, steps} -> {"scores": [one per step]}
KINDS = {
    CHAT: "OpenAI-compatible chat completions",
    POOLING: "vLLM pooling API",
    STEP_SCORES: "step-scores JSON server",
}

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
KEY_ENV_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,99}$"
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_CONCURRENCY = 16

URLS_OFF = (
    "Endpoints are declared by the operator on this site: choose one by name "
    "(free-form URLs are off, STEPWISE_ENDPOINT_URLS)."
)
URL_REFUSED = (
    "This endpoint URL is not allowed: a URL may only name a host the operator lists in "
    "STEPWISE_ENDPOINT_HOSTS, at a public address unless the operator lists that address."
)


class EndpointRefused(ValueError):
    """An endpoint that may not be used as asked; the text is safe to show to the person.

    A ``ValueError``, so that the pages of lower apps, which offer endpoints without importing
    this app (``labeling.endpoints``), can say why a choice is refused."""


@dataclass(frozen=True)
class Endpoint:
    """One model endpoint as declared (or, ``declared=False``, a free-form URL the operator's
    host list allows: no key, no declared models, every connection checked and pinned)."""

    name: str
    kind: str
    base_url: str
    models: tuple[str, ...] = ()
    key_env: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    label: str = ""
    declared: bool = True

    def __str__(self) -> str:
        return self.name if self.declared else "a free-form URL"

    @property
    def title(self) -> str:
        """How managers see it: its label and name, never the URL."""
        return (
            f"{self.label} ({self.name})" if self.label and self.label != self.name else self.name
        )

    @property
    def default_model(self) -> str:
        return self.models[0] if self.models else ""

    def model(self, model: str = "") -> str:
        """``model`` if this endpoint serves it (blank: the default); refused otherwise. A
        free-form URL serves whatever name it is given."""
        model = (model or "").strip()
        if not self.declared:
            if not model:
                raise EndpointRefused("Name the model to ask.")
            return model[:200]
        if not model:
            return self.default_model
        if model not in self.models:
            raise EndpointRefused(
                f"Endpoint {self.name!r} serves {', '.join(self.models)}; not {model[:100]!r}."
            )
        return model

    def url(self, path: str = "") -> str:
        """The URL of ``path`` under the base URL (the base URL itself for ``""``)."""
        return f"{self.base_url}/{path.lstrip('/')}" if path else self.base_url

    def key(self) -> str:
        """The API key, read from the environment now (a free-form URL never has one)."""
        return os.environ.get(self.key_env, "") if self.declared and self.key_env else ""

    def client(
        self,
        *,
        timeout_s: float | None = None,
        max_connections: int | None = None,
        verify: ssl.SSLContext | str | bool = True,
    ) -> httpx.Client:
        """An HTTP client for this endpoint alone: its key (if any) in the headers, no
        redirects, no proxies from the environment; for a free-form URL, a transport that
        connects only to the checked address of the URL's host. ``verify``: how TLS
        certificates are checked (httpx's: the system's CAs by default, or a CA bundle)."""
        headers = {"User-Agent": "stepwise"}
        if key := self.key():
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=max_connections or self.max_concurrency)
        transport: httpx.BaseTransport
        if self.declared:
            transport = DeadlineTransport(limits=limits, verify=verify)
        else:
            transport = _PinnedTransport(httpx.URL(self.base_url), limits=limits, verify=verify)
        return httpx.Client(
            timeout=httpx.Timeout(timeout_s or self.timeout_s),
            headers=headers,
            follow_redirects=False,
            trust_env=False,
            transport=transport,
        )

    def scrub(self, message: str) -> str:
        """``message`` (cut to 500 characters) with the key taken out, also where only a part of
        it is quoted (any 8 characters of it in a row) or it is percent-encoded."""
        return scrub_secret(str(message)[:500], self.key())


# --- the declaration -----------------------------------------------------------------------------


class Declaration(BaseModel):
    """One entry of ``STEPWISE_ENDPOINTS`` as the operator writes it, checked field by field.

    Strict: a number where text is wanted, ``true`` for a count or a field nobody reads is a
    mistake to report at start, not to coerce into something the operator did not mean.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: Annotated[str, Field(pattern=NAME_RE.pattern)]
    kind: str
    base_url: str
    models: Annotated[list[Annotated[str, Field(max_length=200)]], Field(min_length=1)]
    key_env: Annotated[str, Field(pattern=KEY_ENV_PATTERN)] | None = None
    timeout_s: Annotated[float, Field(ge=1, le=3600)] = DEFAULT_TIMEOUT_S
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = DEFAULT_MAX_CONCURRENCY
    label: Annotated[str, Field(max_length=100)] | None = None

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError("an unknown kind")
        return value

    @field_validator("base_url")
    @classmethod
    def _plain_url(cls, value: str) -> str:
        try:
            return _check_url(value)
        except EndpointRefused as e:
            raise ValueError(str(e)) from None

    @field_validator("models")
    @classmethod
    def _named(cls, value: list[str]) -> list[str]:
        if not all(m.strip() for m in value):
            raise ValueError("a blank model name")
        return [m.strip() for m in value]

    def endpoint(self) -> Endpoint:
        return Endpoint(
            name=self.name,
            kind=self.kind,
            base_url=self.base_url,
            models=tuple(self.models),
            key_env=self.key_env or "",
            timeout_s=float(self.timeout_s),
            max_concurrency=self.max_concurrency,
            label=(self.label or "").strip(),
        )


# What the operator is told about a field that fails its check (``base_url`` says its own reason).
FIELD_RULES = {
    "name": "1-50 lower-case letters, digits, '-' or '_', starting with one of the first two.",
    "kind": f"one of {', '.join(KINDS)}.",
    "models": "a non-empty list of model names (the first is the default).",
    "key_env": "the name of an environment variable (letters, digits, '_').",
    "timeout_s": "a number of seconds between 1 and 3600.",
    "max_concurrency": "a whole number from 1 to 256.",
    "label": "text of at most 100 characters.",
}
FIELDS = frozenset(Declaration.model_fields)


def endpoints_declared() -> dict[str, Endpoint]:
    """Every declared endpoint by name, checked (``ImproperlyConfigured`` names a bad entry)."""
    raw = getattr(settings, "STEPWISE_ENDPOINTS", None) or []
    if not isinstance(raw, list | tuple):
        raise ImproperlyConfigured("STEPWISE_ENDPOINTS must be a JSON list of endpoint objects.")
    found: dict[str, Endpoint] = {}
    for index, entry in enumerate(raw):
        endpoint = endpoint_declared(index, entry)
        if endpoint.name in found:
            raise ImproperlyConfigured(
                f"STEPWISE_ENDPOINTS[{index}] ({endpoint.name!r}): the name is declared twice."
            )
        found[endpoint.name] = endpoint
    return found


def endpoint_declared(index: int, entry: object) -> Endpoint:
    """Entry ``index`` of ``STEPWISE_ENDPOINTS`` as an endpoint, or ``ImproperlyConfigured``
    naming the entry (its index, and its name where it has one) and the first field at fault,
    an unknown field before the others (a misspelt field explains the rest)."""
    where = f"STEPWISE_ENDPOINTS[{index}]"
    if not isinstance(entry, dict):
        raise ImproperlyConfigured(f"{where}: each endpoint is a JSON object.")
    name = entry.get("name")
    if isinstance(name, str) and name:
        where = f"{where} ({name!r})"
    try:
        return Declaration.model_validate(entry).endpoint()
    except ValidationError as invalid:
        errors = sorted(invalid.errors(), key=lambda e: e["type"] != "extra_forbidden")
        error = errors[0]
        field_name = str(error["loc"][0]) if error["loc"] else "?"
        if error["type"] == "extra_forbidden":
            why = f"unknown field (the fields are {', '.join(sorted(FIELDS))})."
        elif field_name == "base_url" and error["type"] == "value_error":
            why = str(error["ctx"]["error"])
        else:
            why = FIELD_RULES.get(field_name, error["msg"])
        raise ImproperlyConfigured(f"{where}, field {field_name!r}: {why}") from None


def endpoints_check() -> None:
    """Check the whole configuration once, when the app starts: every declared endpoint, and
    the host list when free-form URLs are on."""
    endpoints_declared()
    if getattr(settings, "STEPWISE_ENDPOINT_URLS", False):
        names, networks = _allowed_hosts()
        if not names and not networks:
            raise ImproperlyConfigured(
                "STEPWISE_ENDPOINT_URLS is on but STEPWISE_ENDPOINT_HOSTS lists no host: list "
                "the hosts (names, addresses or networks) that free-form URLs may name."
            )


def endpoint_keys_missing() -> list[str]:
    """``name (VARIABLE)`` of every declared endpoint whose key variable this process's
    environment lacks (readiness reports them, instead of the first job that needs the key)."""
    return [
        f"{e.name} ({e.key_env})"
        for e in endpoints_declared().values()
        if e.key_env and not os.environ.get(e.key_env)
    ]


def endpoints_of(kind: str) -> list[Endpoint]:
    return [e for e in endpoints_declared().values() if e.kind == kind]


def endpoint_choices(kind: str) -> list[tuple[str, str]]:
    """``(name, title)`` of every declared endpoint of ``kind``, for forms and serializers."""
    return [(e.name, e.title) for e in endpoints_of(kind)]


def endpoint_get(name: str, *, kind: str) -> Endpoint:
    """The declared endpoint ``name`` of ``kind``; refused with the names there are."""
    endpoint = endpoints_declared().get((name or "").strip())
    if endpoint is None or endpoint.kind != kind:
        names = ", ".join(e.name for e in endpoints_of(kind))
        shown = (name or "")[:60]
        if not names:
            raise EndpointRefused(
                f"No {KINDS[kind]} endpoint is declared on this site (the operator declares "
                "them in STEPWISE_ENDPOINTS)."
            )
        raise EndpointRefused(f"No endpoint {shown!r} is declared; the endpoints are: {names}.")
    return endpoint


def endpoint_for_url(url: str, *, kind: str) -> Endpoint:
    """A free-form URL as an endpoint, where the operator allows it: refused when free-form
    URLs are off, when the URL is not a plain http(s) one, or when its host (every address it
    resolves to) is not allowed. Nothing is connected to here."""
    if not getattr(settings, "STEPWISE_ENDPOINT_URLS", False):
        raise EndpointRefused(URLS_OFF)
    base_url = _check_url(url)
    parsed = httpx.URL(base_url)
    checked_address(parsed.raw_host.decode("ascii"), parsed.port or _default_port(parsed))
    return Endpoint(
        name="",
        kind=kind,
        base_url=base_url,
        declared=False,
        timeout_s=DEFAULT_TIMEOUT_S,
        max_concurrency=DEFAULT_MAX_CONCURRENCY,
    )


def endpoint_by_url(url: str, *, kind: str) -> Endpoint | None:
    """The declared endpoint of ``kind`` whose base URL is ``url`` (jobs made before endpoints
    were declared stored a URL), if there is one."""
    url = (url or "").strip().rstrip("/")
    return next((e for e in endpoints_of(kind) if e.base_url == url), None)


def _check_url(url: str) -> str:
    """A plain http(s) base URL: a host, no credentials, no query or fragment; or refused."""
    url = (url or "").strip().rstrip("/")
    if len(url) > 500:
        raise EndpointRefused("The endpoint URL is longer than 500 characters.")
    try:
        parsed = httpx.URL(url)
        parsed.port  # noqa: B018 (parses it)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise EndpointRefused("The endpoint is not a valid URL.") from None
    if parsed.scheme not in ("http", "https"):
        raise EndpointRefused("The endpoint must be an http:// or https:// URL.")
    if not parsed.raw_host:
        raise EndpointRefused("The endpoint URL has no host.")
    if parsed.userinfo:
        raise EndpointRefused("Put no credentials in the URL: a key comes from key_env.")
    if parsed.query or parsed.fragment or "?" in url or "#" in url:
        raise EndpointRefused("The endpoint URL takes no query or fragment.")
    return url


def _default_port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


# --- which addresses a free-form URL may reach --------------------------------------------------

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _allowed_hosts() -> tuple[set[str], list[Network]]:
    """STEPWISE_ENDPOINT_HOSTS as host names (lower case, no trailing dot, IDNA) and networks."""
    names: set[str] = set()
    networks: list[Network] = []
    for entry in getattr(settings, "STEPWISE_ENDPOINT_HOSTS", []) or []:
        entry = entry.strip().strip("[]")
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(_host_name(entry))
    return names, networks


def _host_name(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _embedded_ipv4(address: Address) -> list[Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, NAT64, 6to4, Teredo, compatible)."""
    if address.version != 6:
        return []
    inner: list[Address] = []
    if address.ipv4_mapped:
        inner.append(address.ipv4_mapped)
    if address.sixtofour:
        inner.append(address.sixtofour)
    if address.teredo:
        inner.extend(address.teredo)
    if address in ipaddress.ip_network("64:ff9b::/96") or address in ipaddress.ip_network("::/96"):
        inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return inner


def _is_public(address: Address) -> bool:
    special = (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )
    return not special and all(_is_public(a) for a in _embedded_ipv4(address))


def address_allowed(address: Address, networks: Iterable[Network]) -> bool:
    """Public, or inside a network the operator lists (an IPv6 address carrying an IPv4 one is
    judged by both)."""
    networks = list(networks)
    listed = any(address in n for n in networks if n.version == address.version)
    return listed or _is_public(address)


def checked_address(host: str, port: int) -> str:
    """The address to connect to for ``host``: every address it resolves to must be allowed,
    and the host must be a listed name or resolve only into listed networks. Refused (one
    message for every reason, logged in full for the operator) otherwise."""
    names, networks = _allowed_hosts()
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    except (OSError, UnicodeError, ValueError) as error:
        log.warning("endpoint URL refused: %r does not resolve (%s)", host, error)
        raise EndpointRefused(URL_REFUSED) from None
    if not addresses:
        log.warning("endpoint URL refused: %r resolves to no address", host)
        raise EndpointRefused(URL_REFUSED)
    listed_name = _host_name(host) in names
    in_networks = all(any(a in n for n in networks if n.version == a.version) for a in addresses)
    bad = [str(a) for a in addresses if not address_allowed(a, networks)]
    if bad or not (listed_name or in_networks):
        log.warning(
            "endpoint URL refused: %r resolves to %s (%s)",
            host,
            ", ".join(str(a) for a in addresses),
            f"not allowed: {', '.join(bad)}" if bad else "host not in STEPWISE_ENDPOINT_HOSTS",
        )
        raise EndpointRefused(URL_REFUSED)
    return str(addresses[0])


class _PinnedTransport(httpx.BaseTransport):
    """Sends requests for one URL's host to the address that passed ``checked_address``,
    resolved once for the client's life: the name is not looked up again between the check and
    the connection. TLS still checks the certificate against the host's name (SNI)."""

    def __init__(self, base: httpx.URL, **options: Any) -> None:
        self.inner = DeadlineTransport(**options)
        self.host = base.raw_host.decode("ascii")
        self.port = base.port or _default_port(base)
        self.scheme = base.scheme
        self.address: str | None = None
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        same = (url.scheme, url.raw_host.decode("ascii"), url.port or _default_port(url)) == (
            self.scheme,
            self.host,
            self.port,
        )
        if not same:  # a request to another origin than the checked one (no redirects either)
            log.warning("endpoint client refused a request to another origin: %s", url)
            raise EndpointRefused(URL_REFUSED)
        with self.lock:
            if self.address is None:
                self.address = checked_address(self.host, self.port)
        request.url = url.copy_with(host=self.address)
        if url.scheme == "https" and not _is_ip_literal(self.host):
            request.extensions = {**request.extensions, "sni_hostname": self.host}
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def scrub_secret(message: str, secret: str) -> str:
    """``message`` with ``secret`` replaced by ``[key]``: the whole of it, its percent-encoded
    form, and any stretch of the message that quotes 8 or more characters of it in a row (an
    error that echoes a key cut short or wrapped still does not give it away)."""
    if not secret:
        return message
    for form in {secret, quote(secret, safe="")}:
        message = message.replace(form, "[key]")
    if len(secret) < 8:
        return message
    grams = {secret[i : i + 8] for i in range(len(secret) - 7)}
    marked = [False] * len(message)
    for i in range(len(message) - 7):
        if message[i : i + 8] in grams:
            for j in range(i, i + 8):
                marked[j] = True
    if not any(marked):
        return message
    out, i = [], 0
    while i < len(message):
        if marked[i]:
            while i < len(message) and marked[i]:
                i += 1
            out.append("[key]")
        else:
            out.append(message[i])
            i += 1
    return "".join(out)
