"""A real local HTTP server speaking the Anthropic Messages and OpenAI Chat Completions wire formats.

Tests point the real ``anthropic`` / ``openai`` SDKs at it (``base_url=server.url``) and script, per request,
what the "vendor" does: answer, fail with a status, stall, or send a broken body::

    with FakeAnthropic() as server:
        server.script(Status(429, retry_after=0.05), Reply("hi"))
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test-key")

Only 127.0.0.1 is used; the standard library is the only dependency.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

__all__ = ["Behaviour", "Delay", "FakeAnthropic", "FakeLLMServer", "FakeOpenAI", "Malformed", "Reply", "Status"]


@dataclass(frozen=True)
class Reply:
    """A 200 with a well-formed completion carrying ``text`` and this usage."""

    text: str
    input_tokens: int = 100
    output_tokens: int = 50
    cached_tokens: int = 0


@dataclass(frozen=True)
class Status:
    """An error response in the vendor's error JSON, with a ``retry-after`` header (seconds) when given."""

    code: int
    retry_after: float | None = None
    message: str = "scripted error from the fake LLM server"


@dataclass(frozen=True)
class Delay:
    """Sleep ``seconds`` before answering with ``then`` (to make a client time out)."""

    seconds: float
    then: Reply


@dataclass(frozen=True)
class Malformed:
    """A 200 whose ``application/json`` body is not valid JSON."""


Behaviour = Reply | Status | Delay | Malformed

MALFORMED_BODY = b'{"oops'


class _Handler(BaseHTTPRequestHandler):
    """Routes every request to the owning :class:`FakeLLMServer`."""

    protocol_version = "HTTP/1.1"
    timeout = 5.0  # idle keep-alive connections are dropped after this long
    server: _Server

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests do not want access logs on stderr."""


def _client_gone(handler: _Handler) -> bool:
    """Whether the client closed its end of the connection (e.g. it timed out while we slept)."""
    try:
        readable, _, _ = select.select([handler.connection], [], [], 0)
        return bool(readable) and handler.connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeLLMServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)


class FakeLLMServer:
    """Base fake vendor server: scripted behaviours, request recording, lifecycle.

    Subclasses define the endpoint path, the base URL handed to the SDK and the wire formats.
    """

    path: str = ""

    def __init__(self, responder: Callable[[dict], str] | None = None) -> None:
        self.responder = responder
        self.requests: list[dict] = []
        self.usage_reported: list[dict] = []
        self._script: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._stop.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{type(self).__name__}-{self.port}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # wakes any Delay still sleeping
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    @property
    def port(self) -> int:
        """The TCP port the server listens on (only while started)."""
        if self._server is None:
            raise RuntimeError("server not started; use it as a context manager")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """The base URL to hand to the SDK."""
        return f"http://127.0.0.1:{self.port}"

    # scripting -------------------------------------------------------------------------------------------

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours, consumed one per request to the endpoint, in order."""
        with self._lock:
            self._script.extend(behaviours)

    @property
    def pending(self) -> int:
        """How many scripted behaviours have not been consumed yet."""
        with self._lock:
            return len(self._script)

    def _next(self, body: dict | None) -> Behaviour:
        with self._lock:
            if self._script:
                return self._script.popleft()
        text = self.responder(body or {}) if self.responder is not None else "ok"
        return Reply(text)

    # request handling ------------------------------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        route = handler.path.split("?", 1)[0]
        with self._lock:
            self.requests.append({"path": handler.path, "headers": {k.lower(): v for k, v in handler.headers.items()},
                                  "body": body})
        try:
            if handler.command != "POST" or route != self.path:
                self._send_json(handler, 404, self.error_body(404, f"Not found: {handler.command} {handler.path}"))
                return
            behaviour = self._next(body)
            if isinstance(behaviour, Delay):
                if self._stop.wait(behaviour.seconds) or _client_gone(handler):
                    handler.close_connection = True  # shutting down, or the client gave up: answer nobody
                    return
                behaviour = behaviour.then
            if isinstance(behaviour, Reply):
                model = str(body.get("model", "unknown-model")) if isinstance(body, dict) else "unknown-model"
                payload, usage = self.success_body(behaviour, model)
                with self._lock:  # recorded before the client can see the reply, so tests never race it
                    self.usage_reported.append(usage)
                try:
                    self._send_json(handler, 200, payload)
                except OSError:
                    with self._lock:
                        self.usage_reported.remove(usage)
                    raise
            elif isinstance(behaviour, Status):
                headers = {} if behaviour.retry_after is None else {"retry-after": f"{behaviour.retry_after:g}"}
                self._send_json(handler, behaviour.code, self.error_body(behaviour.code, behaviour.message), headers)
            elif isinstance(behaviour, Malformed):
                self._send_raw(handler, 200, MALFORMED_BODY)
            else:
                raise TypeError(f"unknown behaviour {behaviour!r}")
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            handler.close_connection = True  # the client hung up (e.g. it timed out): nothing to do

    def _send_json(self, handler: _Handler, code: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._send_raw(handler, code, json.dumps(payload).encode(), headers)

    def _send_raw(self, handler: _Handler, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        handler.send_response(code)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for name, value in {**self.extra_headers(), **(headers or {})}.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    # vendor formats (subclasses) -------------------------------------------------------------------------

    def success_body(self, reply: Reply, model: str) -> tuple[dict, dict]:
        """The 200 body for ``reply`` and the usage dict it reports."""
        raise NotImplementedError

    def error_body(self, code: int, message: str) -> dict:
        """The vendor's error JSON for HTTP status ``code``."""
        raise NotImplementedError

    def extra_headers(self) -> dict[str, str]:
        """Headers added to every response."""
        return {}


class FakeAnthropic(FakeLLMServer):
    """Anthropic Messages API: ``POST /v1/messages``; ``url`` is what ``AsyncAnthropic(base_url=...)`` wants."""

    path = "/v1/messages"
    _ERROR_TYPES: ClassVar[dict[int, str]] = {
        400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
        413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error",
    }

    def success_body(self, reply: Reply, model: str) -> tuple[dict, dict]:
        usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
                 "cache_read_input_tokens": reply.cached_tokens, "cache_creation_input_tokens": 0}
        body = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": reply.text}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": usage}
        return body, usage

    def error_body(self, code: int, message: str) -> dict:
        kind = self._ERROR_TYPES.get(code) or ("api_error" if code >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message},
                "request_id": f"req_{uuid.uuid4().hex[:24]}"}

    def extra_headers(self) -> dict[str, str]:
        return {"request-id": f"req_{uuid.uuid4().hex[:24]}"}


class FakeOpenAI(FakeLLMServer):
    """OpenAI Chat Completions API: ``POST /v1/chat/completions``; ``url`` ends in ``/v1`` as ``AsyncOpenAI`` wants."""

    path = "/v1/chat/completions"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def success_body(self, reply: Reply, model: str) -> tuple[dict, dict]:
        usage = {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
                 "total_tokens": reply.input_tokens + reply.output_tokens,
                 "prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
        body = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                                             "finish_reason": "stop"}], "usage": usage}
        return body, usage

    def error_body(self, code: int, message: str) -> dict:
        if code == 429:
            kind, err_code = "requests", "rate_limit_exceeded"
        else:
            kind, err_code = ("server_error" if code >= 500 else "invalid_request_error"), None
        return {"error": {"message": message, "type": kind, "param": None, "code": err_code}}

    def extra_headers(self) -> dict[str, str]:
        return {"x-request-id": f"req_{uuid.uuid4().hex[:24]}"}
