"""A real local server speaking vLLM's ``/pooling`` protocol (and the plain ``/score`` one) with a
real tiny token-classification model built here: vLLM itself needs a GPU build that cannot be
installed on these machines (NOTES.md).

The model reads bytes (a tokenizer-free byte-level vocabulary of 256, plus one id for the step
token ``<extra_0>``): an embedding, a GRU and a two-class head with random weights from a fixed
seed, softmaxed at each step token, as vLLM's step pooler answers for Qwen2.5-Math-PRM: one
``[p_wrong, p_right]`` pair per step. ``Script`` makes it answer error statuses first, hold a
request until released, and records every request (inputs and headers).
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.generation_servers import POLL_S

STEP_TOKEN = "<extra_0>"
STEP_ID = 256


class TinyPRM:
    """A token-classification model over bytes; ``pairs(text)`` are its softmax outputs at the
    step tokens."""

    def __init__(self, seed: int = 0) -> None:
        import torch

        torch.manual_seed(seed)
        self.torch = torch
        self.embed = torch.nn.Embedding(STEP_ID + 1, 16)
        self.rnn = torch.nn.GRU(16, 16, batch_first=True)
        self.head = torch.nn.Linear(16, 2)
        self.lock = threading.Lock()

    @staticmethod
    def tokens(text: str) -> list[int]:
        ids: list[int] = []
        for k, part in enumerate(text.split(STEP_TOKEN)):
            if k:
                ids.append(STEP_ID)
            ids.extend(part.encode("utf-8"))
        return ids

    def pairs(self, text: str) -> list[list[float]]:
        torch = self.torch
        ids = self.tokens(text)
        with self.lock, torch.no_grad():
            x = self.embed(torch.tensor([ids]))
            hidden, _ = self.rnn(x)
            probs = torch.softmax(self.head(hidden[0]), dim=-1)
        at = [i for i, t in enumerate(ids) if t == STEP_ID]
        return [[round(float(a), 6), round(float(b), 6)] for a, b in probs[at].tolist()]


@dataclass
class Script:
    """``statuses`` are answered first, one per request, then 200s; from request number
    ``hold_at`` on (1-based), each waits until ``release`` is set (``held`` tells the test that
    one is waiting)."""

    statuses: list[int] = field(default_factory=list)
    retry_after: str | None = "0"
    hold_at: int | None = None
    hold_only: frozenset[int] = frozenset()  # these requests (1-based) only, held the same way
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def inputs(self) -> list[str]:
        """Every text the server was asked to score, in order (pooling inputs)."""
        with self.lock:
            return [text for body in self.requests for text in body.get("input", [])]


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        server = self.server
        script: Script = server.script  # type: ignore[attr-defined]
        model: TinyPRM = server.model  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with script.lock:
            script.requests.append(body)
            script.headers.append(dict(self.headers))
            n = len(script.requests)
            status = script.statuses.pop(0) if script.statuses else 200
        if (script.hold_at is not None and n >= script.hold_at) or n in script.hold_only:
            script.held.set()
            script.release.wait(60)
        if status != 200:
            payload = json.dumps({"error": {"message": "busy"}}).encode()
            self.send_response(status)
            if script.retry_after is not None:
                self.send_header("Retry-After", script.retry_after)
        elif self.path == "/pooling":
            data = [
                {"index": i, "object": "pooling", "data": model.pairs(text)}
                for i, text in enumerate(body["input"])
            ]
            payload = json.dumps({"object": "list", "model": body.get("model"), "data": data})
            payload = payload.encode()
            self.send_response(200)
        elif self.path == "/score":
            text = body["problem"] + "".join(s + STEP_TOKEN for s in body["steps"])
            scores = [p for _, p in model.pairs(text)]
            payload = json.dumps({"scores": scores}).encode()
            self.send_response(200)
        else:
            payload = b"{}"
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a killed client
            self.wfile.write(payload)


class PoolingServer:
    """``with PoolingServer() as server:`` serves on ``server.url`` (127.0.0.1, a free port)."""

    def __init__(self, script: Script | None = None, model: TinyPRM | None = None) -> None:
        self.script = script or Script()
        self.model = model or TinyPRM()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.script = self.script  # type: ignore[attr-defined]
        self.httpd.model = self.model  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL_S,), daemon=True)

    def __enter__(self) -> PoolingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.script.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
