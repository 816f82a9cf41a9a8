"""Model endpoints (``machines.endpoints``): declared by the operator, a key only to its endpoint,
free-form URLs only to listed hosts after resolution, nothing connected for a refused probe.

Every probe aims at a real socket server of the test on 127.0.0.1 (or ::1): it records each
connection made to it, so "refused before any connection" is what it saw, not what we hope.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured

from machines import endpoints
from machines.client import UNREACHABLE, endpoint_error_message
from machines.endpoints import (
    CHAT,
    URL_REFUSED,
    Endpoint,
    EndpointRefused,
    address_allowed,
    endpoint_choices,
    endpoint_for_url,
    endpoint_get,
    endpoints_check,
    endpoints_declared,
    scrub_secret,
)
from tests.generation_servers import POLL_S, Listener, StubServer

SECRET = "sk-operator-secret-0123456789abcdef"


def declare(settings, *entries: dict) -> None:
    settings.STEPWISE_ENDPOINTS = list(entries)


def chat(name: str, base_url: str, **extra) -> dict:
    return {"name": name, "kind": "chat", "base_url": base_url, "models": ["m1", "m2"]} | extra


def _listener_on_ipv6_loopback(port: int) -> Listener | None:
    """A witness on [::1] at ``port`` too, where this machine has IPv6 loopback."""
    try:
        return Listener("::1", port).__enter__()
    except OSError:
        return None


# --- the declaration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"kind": "chat", "base_url": "http://a/v1", "models": ["m"]}, r"\[0\], field 'name'"),
        (chat("Bad Name", "http://a/v1"), r"field 'name'"),
        (chat("a", "http://a/v1", kind="grpc"), r"\('a'\), field 'kind'"),
        (chat("a", "file:///etc/passwd"), r"field 'base_url': .*http"),
        (chat("a", "http://user:pw@a/v1"), r"field 'base_url': .*credentials"),
        (chat("a", "http://a/v1", models=[]), r"field 'models'"),
        (chat("a", "http://a/v1", key_env="NOT A NAME"), r"field 'key_env'"),
        (chat("a", "http://a/v1", timeout_s=0), r"field 'timeout_s'"),
        (chat("a", "http://a/v1", max_concurrency=True), r"field 'max_concurrency'"),
        (chat("a", "http://a/v1", api_key="sk-..."), r"field 'api_key': unknown field"),
        ("http://a/v1", r"\[0\]: each endpoint is a JSON object"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_entry_and_the_field(settings, entry, message):
    declare(settings, entry)
    with pytest.raises(ImproperlyConfigured, match=message):
        endpoints_check()


def test_a_name_declared_twice_is_refused(settings):
    declare(settings, chat("a", "http://a/v1"), chat("a", "http://b/v1"))
    with pytest.raises(ImproperlyConfigured, match=r"\[1\] \('a'\): the name is declared twice"):
        endpoints_check()


def test_free_form_urls_on_without_hosts_is_refused(settings):
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = []
    with pytest.raises(ImproperlyConfigured, match="STEPWISE_ENDPOINT_HOSTS lists no host"):
        endpoints_check()


def test_the_settings_read_the_declaration_from_the_environment_and_a_file(tmp_path):
    """The variables as an operator sets them, read by a fresh settings module in a child."""
    import json
    import os
    import subprocess
    import sys

    path = tmp_path / "endpoints.json"
    path.write_text(json.dumps([chat("from-file", "http://a:8000/v1")]))
    env = {
        **os.environ,
        "STEPWISE_ENDPOINTS_FILE": str(path),
        "STEPWISE_ENDPOINTS": json.dumps([chat("from-env", "http://b:8000/v1", label="B")]),
        "DJANGO_SETTINGS_MODULE": "stepwise.settings",
    }
    code = (
        "import django; django.setup();"
        "from machines.endpoints import endpoint_choices; print(endpoint_choices('chat'))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "[('from-file', 'from-file'), ('from-env', 'B (from-env)')]"

    env["STEPWISE_ENDPOINTS"] = json.dumps([chat("x", "http://b/v1", kind="?")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "STEPWISE_ENDPOINTS[1] ('x'), field 'kind'" in out.stderr


def test_endpoints_are_offered_by_name_and_kind(settings):
    declare(
        settings,
        chat("vllm", "http://gpu:8000/v1/", label="Qwen on the GPU box"),
        {"name": "prm", "kind": "pooling", "base_url": "http://gpu:8001", "models": ["p"]},
    )
    assert endpoint_choices(CHAT) == [("vllm", "Qwen on the GPU box (vllm)")]
    assert endpoint_choices("pooling") == [("prm", "prm")]
    vllm = endpoint_get("vllm", kind=CHAT)
    assert (vllm.base_url, vllm.url("chat/completions")) == (
        "http://gpu:8000/v1",
        "http://gpu:8000/v1/chat/completions",
    )
    assert (vllm.model(""), vllm.model("m2")) == ("m1", "m2")
    with pytest.raises(EndpointRefused, match="serves m1, m2"):
        vllm.model("gpt-5")
    with pytest.raises(
        EndpointRefused, match="No endpoint 'prm' is declared; the endpoints are: vllm"
    ):
        endpoint_get("prm", kind=CHAT)
    with pytest.raises(EndpointRefused, match="No endpoint 'http://x' is declared"):
        endpoint_get("http://x", kind=CHAT)


# --- a declared endpoint, its key -----------------------------------------------------------


def test_a_declared_endpoint_works_and_its_key_reaches_only_it(settings, monkeypatch):
    monkeypatch.setenv("OPERATOR_KEY", SECRET)
    with StubServer() as keyed, StubServer() as plain:
        declare(
            settings,
            chat("keyed", keyed.base_url, key_env="OPERATOR_KEY"),
            chat("plain", plain.base_url),
        )
        body = {"model": "m1", "messages": [{"role": "user", "content": "1+1?"}]}
        for name in ("keyed", "plain"):
            endpoint = endpoint_get(name, kind=CHAT)
            with endpoint.client() as client:
                response = client.post(endpoint.url("chat/completions"), json=body)
            assert response.status_code == 200
            assert response.json()["choices"][0]["message"]["content"].startswith("Sample 1.")
        # A free-form URL to the very same server (the operator lists its address) gets no key.
        settings.STEPWISE_ENDPOINT_URLS = True
        settings.STEPWISE_ENDPOINT_HOSTS = ["127.0.0.1/32"]
        free = endpoint_for_url(keyed.base_url, kind=CHAT)
        with free.client() as client:
            assert client.post(free.url("chat/completions"), json=body).status_code == 200

    assert keyed.script.headers[0]["Authorization"] == f"Bearer {SECRET}"
    assert "Authorization" not in keyed.script.headers[1]
    assert [h.get("Authorization") for h in plain.script.headers] == [None]


class _Redirect(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.send_response(307)
        self.send_header("Location", self.server.target)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_a_redirect_is_not_followed_so_the_key_goes_nowhere_else(settings, monkeypatch):
    monkeypatch.setenv("OPERATOR_KEY", SECRET)
    with Listener() as elsewhere:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
        httpd.target = f"http://127.0.0.1:{elsewhere.port}/steal"  # type: ignore[attr-defined]
        thread = threading.Thread(target=httpd.serve_forever, args=(POLL_S,), daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
            declare(settings, chat("a", url, key_env="OPERATOR_KEY"))
            endpoint = endpoint_get("a", kind=CHAT)
            with endpoint.client() as client:
                response = client.post(endpoint.url("chat/completions"), json={})
        finally:
            httpd.shutdown()
            httpd.server_close()
    assert response.status_code == 307
    assert elsewhere.connections == []


def test_the_key_is_scrubbed_also_when_quoted_in_part_or_encoded():
    from urllib.parse import quote

    assert scrub_secret(f"bad key {SECRET}!", SECRET) == "bad key [key]!"
    assert scrub_secret(f"bad key '{SECRET[:12]}...'", SECRET) == "bad key '[key]...'"
    assert scrub_secret(f"key={quote(SECRET)}", SECRET) == "key=[key]"
    assert SECRET[3:20] not in scrub_secret(f"…{SECRET[3:20]}…", SECRET)
    assert scrub_secret("nothing here", SECRET) == "nothing here"


# --- free-form URLs ---------------------------------------------------------------------------


def test_free_form_urls_are_off_unless_the_operator_turns_them_on(settings):
    with Listener() as listener, pytest.raises(EndpointRefused, match="choose one by name"):
        endpoint_for_url(f"http://127.0.0.1:{listener.port}/v1", kind=CHAT)
    assert listener.connections == []


LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "0x7f000001",
    "2130706433",
    "127.1",
    "0x7f.1",
    "127.0.1",
    "localhost",
    "LocalHost",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "0.0.0.0",
    "0",
    "[::]",
]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_each_loopback_spelling_is_refused_before_any_connection(settings, host):
    """The operator lists ``localhost`` (say, to mean a proxy there) and a public host: each
    spelling of a loopback address is refused, since loopback is not listed as an address."""
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["localhost", "api.example.com"]
    with Listener() as v4:
        port = v4.port
        six = _listener_on_ipv6_loopback(port)
        try:
            url = f"http://{host}:{port}/v1"
            with pytest.raises(EndpointRefused) as refused:
                endpoint_for_url(url, kind=CHAT)
            assert str(refused.value) in (URL_REFUSED, "The endpoint is not a valid URL.")
            # The client refuses too, at connection time, for an endpoint built without the check.
            unchecked = Endpoint(name="", kind=CHAT, base_url=url, declared=False)
            try:
                client = unchecked.client()
            except (httpx.InvalidURL, ValueError):
                client = None
            if client is not None:
                with client, pytest.raises(EndpointRefused, match="not allowed"):
                    client.post(unchecked.url("chat/completions"), json={})
        finally:
            if six is not None:
                six.__exit__()
    assert v4.connections == []
    if six is not None:
        assert six.connections == []


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "127.0.0.2",
        "224.0.0.1",
        "224.0.1.1",
        "240.0.0.1",
        "255.255.255.255",
        "198.18.0.1",
        "fe80::1",
        "fc00::1",
        "::",
        "::1",
        "ff02::1",
        "ff0e::1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::",
        "2001:db8::1",
    ],
)
def test_private_link_local_and_other_special_addresses_are_refused(address):
    assert not address_allowed(ipaddress.ip_address(address), [])


def test_public_addresses_pass_and_a_listed_network_lets_its_addresses_through():
    for public in ("8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"):
        assert address_allowed(ipaddress.ip_address(public), [])
    gpu = [ipaddress.ip_network("10.1.0.0/16")]
    assert address_allowed(ipaddress.ip_address("10.1.2.3"), gpu)
    assert not address_allowed(ipaddress.ip_address("10.2.0.1"), gpu)
    assert not address_allowed(ipaddress.ip_address("169.254.169.254"), gpu)


def test_a_host_that_is_not_listed_is_refused_even_at_a_public_address(settings):
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["api.example.com"]
    with pytest.raises(EndpointRefused, match="STEPWISE_ENDPOINT_HOSTS"):
        endpoint_for_url("http://8.8.8.8/v1", kind=CHAT)


def test_a_listed_address_is_reached_at_the_address_that_was_checked(settings, monkeypatch):
    """``localhost`` listed with its network: the name is resolved once for the client (by the
    check), and every request goes to that address, so a DNS answer that changes later (a
    rebinding attack) is never asked for."""
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["localhost", "127.0.0.0/8"]
    looked_up = []
    real = socket.getaddrinfo

    def counting(host, *args, **kwargs):
        looked_up.append(host)
        return real(host, *args, **kwargs)

    with StubServer() as server:
        port = server.httpd.server_address[1]
        endpoint = endpoint_for_url(f"http://localhost:{port}/v1", kind=CHAT)
        monkeypatch.setattr(socket, "getaddrinfo", counting)
        with endpoint.client() as client:
            for _ in range(3):
                response = client.post(endpoint.url("chat/completions"), json=_body())
                assert response.status_code == 200
    assert looked_up.count("localhost") == 1
    assert len(server.script.requests) == 3
    assert {h["Host"] for h in server.script.headers} == {f"localhost:{port}"}


def _body() -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def test_a_free_form_url_says_the_same_for_a_closed_port_and_a_protocol_error(settings):
    """The operator allowed loopback here; still, what a manager reads does not tell a closed
    port from a server that speaks something else, or from one that never answers."""
    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["127.0.0.1/32"]
    messages = set()
    with Listener() as silent:  # accepts, reads, closes without an HTTP answer
        closed = Listener()
        closed_port = closed.port
        closed.sock.close()
        for port in (silent.port, closed_port):
            endpoint = endpoint_for_url(f"http://127.0.0.1:{port}/v1", kind=CHAT)
            with endpoint.client(timeout_s=5) as client:
                try:
                    client.post(endpoint.url("chat/completions"), json=_body())
                except httpx.HTTPError as error:
                    messages.add(endpoint_error_message(endpoint, error))
        timeout = httpx.ReadTimeout("timed out")
        messages.add(endpoint_error_message(endpoint, timeout))
    assert messages == {UNREACHABLE}


def test_a_declared_endpoints_failures_are_told_apart_for_its_managers(settings):
    declare(settings, chat("box", "http://127.0.0.1:1/v1", timeout_s=30))
    endpoint = endpoint_get("box", kind=CHAT)
    assert endpoint_error_message(endpoint, httpx.ConnectError("x")) == "could not connect to box"
    assert (
        endpoint_error_message(endpoint, httpx.ReadTimeout("x")) == "no answer from box within 30 s"
    )


def test_endpoints_declared_is_read_each_time(settings):
    declare(settings, chat("a", "http://a/v1"))
    assert list(endpoints_declared()) == ["a"]
    declare(settings)
    assert endpoints_declared() == {}
    assert endpoints.endpoints_of(CHAT) == []


def _certificate(folder, name: str):
    """A self-signed certificate for ``name`` (openssl, made here)."""
    import subprocess

    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={name}",
            "-addext",
            f"subjectAltName=DNS:{name}",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.mark.parametrize(("served_as", "works"), [("localhost", True), ("elsewhere.test", False)])
def test_tls_to_a_pinned_address_still_checks_the_certificate_against_the_name(
    settings, tmp_path, served_as, works
):
    """Connected at the checked address, the TLS handshake still names the host (SNI) and
    checks its certificate against it: a certificate for another name is refused."""
    import ssl

    settings.STEPWISE_ENDPOINT_URLS = True
    settings.STEPWISE_ENDPOINT_HOSTS = ["localhost", "127.0.0.0/8"]
    cert, key = _certificate(tmp_path, served_as)
    with StubServer() as server:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
        port = server.httpd.server_address[1]
        endpoint = endpoint_for_url(f"https://localhost:{port}/v1", kind=CHAT)
        with endpoint.client(verify=ssl.create_default_context(cafile=str(cert))) as client:
            if works:
                response = client.post(endpoint.url("chat/completions"), json=_body())
                assert response.status_code == 200
            else:
                with pytest.raises(httpx.ConnectError, match=r"certificate|hostname"):
                    client.post(endpoint.url("chat/completions"), json=_body())
    assert len(server.script.requests) == (1 if works else 0)
