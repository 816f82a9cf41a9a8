"""Endpoints for the generation tests: a tiny scripted OpenAI-compatible HTTP server, and a real
``transformers serve`` on a tiny random model built here (NOTES.md's recipe; nothing downloaded).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.waiting import answers, wait_until

# serve_forever's poll interval: shutdown() waits up to one (the default, 0.5 s, per server).
POLL_S = 0.02


def canned_text(n: int, problem: str) -> str:
    """A PRM800K-shaped solution whose first step is unique to request ``n``."""
    return (
        f"Sample {n}. Let's add the numbers in: {problem[:40]}\n\n"
        "First we compute the sum:\n\\[1 + 1 = 2\\]\n"
        "Then we check it:\n\\[2 - 1 = 1\\]\n"
        "With a calculator note: 2 - 1 = <<2-1=1>>1\n\n"
        "# Answer\n\n2"
    )


@dataclass
class Script:
    """What the stub answers: ``statuses`` are answered first, one per request, then 200s."""

    statuses: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    retry_after: str | None = "0"
    error_message: str = "slow down"
    requests: list[dict] = field(default_factory=list)
    reply: Callable[[dict], str] | None = None  # the answer's text from the request body
    headers: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        script = self.server.script  # type: ignore[attr-defined]
        with script.lock:
            script.requests.append(body)
            script.headers.append(dict(self.headers))
            n = len(script.requests)
            status = script.statuses.pop(0) if script.statuses else 200
        if script.delay_s:
            time.sleep(script.delay_s)
        if not self.path.endswith("/chat/completions"):
            status = 404
        if status != 200:
            payload = json.dumps({"error": {"message": script.error_message}}).encode()
            self.send_response(status)
            if script.retry_after is not None:
                self.send_header("Retry-After", script.retry_after)
        else:
            prompt = body["messages"][-1]["content"]
            content = script.reply(body) if script.reply else canned_text(n, prompt)
            payload = json.dumps(
                {
                    "id": f"c{n}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
                }
            ).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class StubServer:
    """A scripted OpenAI-compatible server on 127.0.0.1 in a thread of the test."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.script = self.script  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL_S,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class Listener:
    """A plain TCP socket server on a local port that records every connection made to it (and
    the first bytes sent), answering nothing: the witness that a refused probe never connected.

    ``host`` may be ``127.0.0.1`` or ``::1``; ``port`` 0 takes a free one."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections: list[bytes] = []
        # Closing wakes the thread at once (a pipe it selects on beside the socket) instead of
        # waiting out an accept timeout: the tests make hundreds of these witnesses.
        self._wake_r, self._wake_w = socket.socketpair()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            readable, _, _ = select.select([self.sock, self._wake_r], [], [])
            if self.sock not in readable:
                return  # stopping, and no connection is waiting (those are recorded first)
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(0.5)
                try:
                    data = conn.recv(4096)
                except OSError:
                    data = b""
                self.connections.append(data)

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._wake_w.send(b"x")
        self.thread.join(timeout=5)
        self.sock.close()
        self._wake_r.close()
        self._wake_w.close()


# --- a real server -------------------------------------------------------------------------------


def build_tiny_model(folder: Path) -> Path:
    """A byte-level BPE tokenizer and a random 2-layer GPT-2, saved together (no download)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GenerationConfig,
        GPT2Config,
        GPT2LMHeadModel,
        PreTrainedTokenizerFast,
    )

    torch.manual_seed(0)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    texts = [
        "Let's think step by step.\n\nSo $x = 2$.\n\n# Answer\n\n2",
        "What is 1+1? The answer is \\boxed{2}.",
        "Step 1: add the numbers. Step 2: divide by two.",
    ] * 10
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant: "
    )
    eos = fast.eos_token_id
    config = GPT2Config(
        vocab_size=len(fast),
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=1024,
        eos_token_id=eos,
        bos_token_id=eos,
        pad_token_id=eos,
    )
    model = GPT2LMHeadModel(config)
    # A few tokens at least, so that a random model does not answer with nothing.
    model.generation_config = GenerationConfig(
        eos_token_id=eos, pad_token_id=eos, min_new_tokens=4, do_sample=True
    )
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TransformersServe:
    """``transformers serve FOLDER`` in a process group of its own, stopped (and killed if need
    be) on exit; the health check waits at most ``start_timeout`` seconds."""

    def __init__(self, folder: Path, log_path: Path, *, start_timeout: float = 120) -> None:
        self.folder = folder
        self.port = free_port()
        self.log_path = log_path
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> TransformersServe:
        import httpx

        exe = shutil.which("transformers", path=str(Path(sys.executable).parent))
        command = [exe, "serve"] if exe else [sys.executable, "-m", "transformers", "serve"]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [*command, str(self.folder), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        health = f"http://127.0.0.1:{self.port}/health"
        try:
            wait_until(
                answers(lambda: httpx.get(health, timeout=2).status_code == 200, httpx.HTTPError),
                what="transformers serve to start",
                seconds=self.start_timeout,
                every=0.5,
                processes=[self.proc],
                log=self.log_path.read_text,
            )
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        import signal

        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)


# --- answers no endpoint should give -------------------------------------------------------------

HOSTILE = ("huge", "gzip-bomb", "drip", "deep")


def _gzip_bomb(unpacked_mb: int) -> bytes:
    """A JSON answer of ``unpacked_mb`` MB of spaces, gzipped (about a thousandth of that)."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    parts = [packer.compress(b'{"choices": [], "pad": "')]
    parts += [packer.compress(block) for _ in range(unpacked_mb)]
    parts += [packer.compress(b'"}'), packer.flush()]
    return b"".join(parts)


class _HostileHandler(BaseHTTPRequestHandler):
    """Answers every POST as its server's ``mode`` says: ``huge`` (``huge_mb`` MB of JSON,
    streamed), ``gzip-bomb`` (a small gzip that unpacks to ``huge_mb`` MB), ``drip`` (headers,
    then a byte every ``drip_s`` for ever) or ``deep`` (100,000 nested brackets)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        with server.lock:  # type: ignore[attr-defined]
            server.requests += 1  # type: ignore[attr-defined]
        mode, huge_mb = server.mode, server.huge_mb  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        try:
            if mode == "huge":
                head = b'{"choices": [], "pad": "'
                self.send_header("Content-Length", str(len(head) + (huge_mb << 20)))
                self.end_headers()
                self.wfile.write(head)
                block = b"x" * (1 << 20)
                for _ in range(huge_mb):
                    self.wfile.write(block)
            elif mode == "gzip-bomb":
                payload = server.bomb  # type: ignore[attr-defined]
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            elif mode == "drip":
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                while not server.stopping.is_set():  # type: ignore[attr-defined]
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    server.stopping.wait(server.drip_s)  # type: ignore[attr-defined]
            else:  # deep
                payload = b"[" * 100_000 + b"]" * 100_000
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
            pass


def _quiet(request: object, client_address: object) -> None:
    """A server's error handler that says nothing."""


class HostileServer:
    """``with HostileServer("drip") as server:`` answers every POST on ``server.url`` (any
    path: chat completions, pooling, step scores) the way ``mode`` says (``HOSTILE``); counts
    the requests."""

    def __init__(self, mode: str, *, huge_mb: int = 150, drip_s: float = 0.5) -> None:
        assert mode in HOSTILE, mode
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _HostileHandler)
        self.httpd.daemon_threads = True
        self.httpd.mode = mode  # type: ignore[attr-defined]
        self.httpd.huge_mb = huge_mb  # type: ignore[attr-defined]
        self.httpd.drip_s = drip_s  # type: ignore[attr-defined]
        self.httpd.bomb = _gzip_bomb(huge_mb) if mode == "gzip-bomb" else b""  # type: ignore[attr-defined]
        self.httpd.requests = 0  # type: ignore[attr-defined]
        self.httpd.lock = threading.Lock()  # type: ignore[attr-defined]
        self.httpd.stopping = threading.Event()  # type: ignore[attr-defined]
        # A client that gives up mid-answer is what the tests want: no traceback for it.
        self.httpd.handle_error = _quiet  # type: ignore[method-assign]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL_S,), daemon=True)

    @property
    def requests(self) -> int:
        return self.httpd.requests  # type: ignore[attr-defined]

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.stopping.set()  # type: ignore[attr-defined]
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class PeakMemory:
    """The most this process's resident memory grew over its start while the block ran,
    sampled every 10 ms from a thread (psutil): ``with PeakMemory() as peak: ...``, then
    ``peak.grown_mb``."""

    def __init__(self) -> None:
        import psutil  # type: ignore[import-untyped]  # (no stub package is pinned)

        self.process = psutil.Process()
        self.stop = threading.Event()
        self.start = self.most = 0
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self.stop.wait(0.01):
            self.most = max(self.most, self.process.memory_info().rss)

    def __enter__(self) -> PeakMemory:
        import gc

        gc.collect()
        self.start = self.most = self.process.memory_info().rss
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.most = max(self.most, self.process.memory_info().rss)

    @property
    def grown_mb(self) -> float:
        return (self.most - self.start) / (1 << 20)
