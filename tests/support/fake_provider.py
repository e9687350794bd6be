"""A scripted fake of the OpenAI Responses and Anthropic Messages APIs on 127.0.0.1.

One real HTTP server (stdlib ``ThreadingHTTPServer`` in a background thread) serves both
providers at one base URL, so it can stand behind both test endpoint variables:

- ``POST /responses`` and ``GET /models``        (``ARTIFACTIZE_OPENAI_BASE_URL=<base_url>``)
- ``POST /v1/messages`` and ``GET /v1/models``   (``ARTIFACTIZE_ANTHROPIC_BASE_URL=<base_url>``)

Each POST takes the next queued :class:`Reply` whose ``route`` is None or its own path, so a
single-provider script is just a list, and replies built with the ``openai_*`` and
``anthropic_*`` helpers only ever answer their own provider. A reply is a JSON body with a
status and headers, optionally after a delay; or "hang until the client closes"; or "drop
the connection without answering". When nothing matches, the ``responder`` (if given) is
asked, else the fake answers 500 with a message saying the script is exhausted (and counts
it in ``exhausted``). Every request is recorded (method, path, lower-cased headers, raw and
parsed JSON body). By default a reply's ``model`` echoes the model the request asked for.

Example::

    from tests.support.fake_provider import FakeProvider, error, openai_text, openai_tool_call

    with FakeProvider() as fake:
        fake.enqueue(
            error(429, "Slow down", {"Retry-After": "0"}),
            openai_tool_call("call_1", "read_docs", {"path": "README.md"}),
            openai_text('{"verdict": "GREEN"}', usage={"input_tokens": 5}),
        )
        env = {**os.environ, **fake.env()}      # test endpoints + fake API keys
        subprocess.run(["artifactize", "verify", "--json"], env=env, ...)
        first, second, third = fake.posts()
        assert third.body["input"][-1]["type"] == "function_call_output"
        assert fake.pending == 0 and fake.exhausted == 0

In a test module, ``from tests.support.fake_provider import fake_provider`` and take the
``fake_provider`` fixture as an argument for the same thing with automatic cleanup.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

OPENAI_RESPONSES = "/responses"
OPENAI_MODELS = "/models"
ANTHROPIC_MESSAGES = "/v1/messages"
ANTHROPIC_MODELS = "/v1/models"

FAKE_OPENAI_KEY = "sk-fake-openai-0123456789"
FAKE_ANTHROPIC_KEY = "sk-ant-fake-0123456789"
FAKE_OPENAI_MODELS = ("gpt-fake", "gpt-fake-mini")
FAKE_ANTHROPIC_MODELS = ("claude-fake", "claude-fake-haiku")
PLACEHOLDER_MODEL = "fake-model"  # when echoing and the request named no model

OPENAI_USAGE: Mapping[str, Any] = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
ANTHROPIC_USAGE: Mapping[str, Any] = {"input_tokens": 100, "output_tokens": 20}

HANG_POLL_SECONDS = 0.02
SHUTDOWN_POLL_SECONDS = 0.005  # how soon close() returns; tests start many fakes


# --- replies and requests -----------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the helpers below rather than by hand."""

    status: int = 200
    body: Any = None  # JSON-able; ignored when ``raw`` is set
    headers: Mapping[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # a non-JSON body, sent as is
    content_type: str = "application/json"
    delay: float = 0.0  # seconds to wait before answering (cut short by close())
    action: Literal["respond", "hang", "disconnect"] = "respond"
    route: str | None = None  # only answer this path; None answers any POST
    echo_model: bool = False  # replace body["model"] with the request's model


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: Mapping[str, str]  # lower-cased names
    raw_body: bytes
    body: Any  # parsed JSON, or None when the body was empty or not JSON

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


Responder = Callable[[ReceivedRequest], Reply]


# --- reply builders: generic --------------------------------------------------------------


def reply(
    body: Any,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    *,
    route: str | None = None,
) -> Reply:
    """Any JSON body with any status."""
    return Reply(status=status, body=body, headers=dict(headers or {}), route=route)


def error(
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    *,
    error_type: str = "api_error",
    code: str | None = None,
    route: str | None = None,
) -> Reply:
    """An error both adapters read: ``{"type": "error", "error": {"type", "message", "code"}}``
    (Anthropic's shape, with OpenAI's ``code``)."""
    payload: dict[str, Any] = {"type": error_type, "message": message}
    if code is not None:
        payload["code"] = code
    return reply({"type": "error", "error": payload}, status, headers, route=route)


def raw(
    body: bytes,
    status: int = 200,
    content_type: str = "text/plain",
    *,
    route: str | None = None,
) -> Reply:
    """A body that is not JSON (an HTML proxy page, a truncated answer)."""
    return Reply(status=status, raw=body, content_type=content_type, route=route)


def delayed(seconds: float, answer: Reply) -> Reply:
    """``answer`` after ``seconds``."""
    return dataclasses.replace(answer, delay=seconds)


def hang(*, route: str | None = None) -> Reply:
    """Never answer; hold the connection until the client closes it (or the fake stops)."""
    return Reply(action="hang", route=route)


def disconnect(*, route: str | None = None) -> Reply:
    """Close the connection without answering (the client sees a protocol error)."""
    return Reply(action="disconnect", route=route)


# --- reply builders: OpenAI Responses -----------------------------------------------------


def openai_message_item(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_fake",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def openai_function_call_item(
    call_id: str, name: str, arguments: str | Mapping[str, Any]
) -> dict[str, Any]:
    """``arguments`` as a JSON string, or a mapping dumped compactly."""
    text = arguments if isinstance(arguments, str) else _compact(arguments)
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": text,
        "status": "completed",
    }


def openai_reasoning_item(encrypted_content: str, item_id: str = "rs_fake") -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [],
        "encrypted_content": encrypted_content,
    }


def openai_response(
    output: Sequence[Mapping[str, Any]],
    *,
    model: str | None = None,
    usage: Mapping[str, Any] | None = OPENAI_USAGE,
    status: str = "completed",
    incomplete_reason: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """A Responses answer. ``model=None`` echoes the requested model; ``usage=None`` omits
    the usage object; ``incomplete_reason`` sets ``incomplete_details.reason``."""
    body: dict[str, Any] = {
        "id": "resp_fake",
        "object": "response",
        "status": status,
        "model": model or PLACEHOLDER_MODEL,
        "output": [dict(item) for item in output],
    }
    if incomplete_reason is not None:
        body["incomplete_details"] = {"reason": incomplete_reason}
    if usage is not None:
        body["usage"] = dict(usage)
    return Reply(
        body=body, headers=dict(headers or {}), route=OPENAI_RESPONSES, echo_model=model is None
    )


def openai_text(
    text: str,
    *,
    model: str | None = None,
    usage: Mapping[str, Any] | None = OPENAI_USAGE,
    reasoning: str | None = None,
) -> Reply:
    """A final text answer, after an encrypted reasoning item when ``reasoning`` is given."""
    items = [openai_reasoning_item(reasoning)] if reasoning is not None else []
    return openai_response([*items, openai_message_item(text)], model=model, usage=usage)


def openai_tool_call(
    call_id: str,
    name: str,
    arguments: str | Mapping[str, Any],
    *,
    model: str | None = None,
    usage: Mapping[str, Any] | None = OPENAI_USAGE,
    reasoning: str | None = None,
) -> Reply:
    """One function call, after an encrypted reasoning item when ``reasoning`` is given."""
    items = [openai_reasoning_item(reasoning)] if reasoning is not None else []
    call = openai_function_call_item(call_id, name, arguments)
    return openai_response([*items, call], model=model, usage=usage)


# --- reply builders: Anthropic Messages ---------------------------------------------------


def anthropic_text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def anthropic_tool_use_block(
    call_id: str, name: str, tool_input: Mapping[str, Any]
) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": dict(tool_input)}


def anthropic_thinking_block(thinking: str, signature: str = "sig_fake") -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def anthropic_response(
    content: Sequence[Mapping[str, Any]],
    *,
    stop_reason: str | None = "end_turn",
    model: str | None = None,
    usage: Mapping[str, Any] | None = ANTHROPIC_USAGE,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """A Messages answer. ``model=None`` echoes the requested model; ``usage=None`` omits
    the usage object."""
    body: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model or PLACEHOLDER_MODEL,
        "content": [dict(block) for block in content],
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return Reply(
        body=body, headers=dict(headers or {}), route=ANTHROPIC_MESSAGES, echo_model=model is None
    )


def anthropic_text(
    text: str,
    *,
    model: str | None = None,
    usage: Mapping[str, Any] | None = ANTHROPIC_USAGE,
    thinking: str | None = None,
) -> Reply:
    """A final text answer (``end_turn``), after a thinking block when ``thinking`` is given."""
    blocks = [anthropic_thinking_block(thinking)] if thinking is not None else []
    return anthropic_response([*blocks, anthropic_text_block(text)], model=model, usage=usage)


def anthropic_tool_use(
    call_id: str,
    name: str,
    tool_input: Mapping[str, Any],
    *,
    model: str | None = None,
    usage: Mapping[str, Any] | None = ANTHROPIC_USAGE,
    thinking: str | None = None,
) -> Reply:
    """One ``tool_use`` block (``stop_reason: tool_use``), after optional thinking."""
    blocks = [anthropic_thinking_block(thinking)] if thinking is not None else []
    call = anthropic_tool_use_block(call_id, name, tool_input)
    return anthropic_response([*blocks, call], stop_reason="tool_use", model=model, usage=usage)


# --- the server ---------------------------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _error_body(kind: str, message: str) -> bytes:
    return _compact({"type": "error", "error": {"type": kind, "message": message}}).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeProvider


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs
    disable_nagle_algorithm = True  # else headers and body cost a 40 ms delayed-ACK wait
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is for the test."""

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._untrack(self.connection)

    def do_GET(self) -> None:
        self.server.fake._handle(self)

    def do_POST(self) -> None:
        self.server.fake._handle(self)


class FakeProvider:
    """The fake server. Use it as a context manager (or the ``fake_provider`` fixture)."""

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        required_openai_key: str | None = None,
        required_anthropic_key: str | None = None,
        openai_models: Sequence[str] = FAKE_OPENAI_MODELS,
        anthropic_models: Sequence[str] = FAKE_ANTHROPIC_MODELS,
    ) -> None:
        """``responder`` answers POSTs the script does not cover. A ``required_*_key``
        makes the fake answer 401 to a request of that provider without that exact key."""
        self._responder = responder
        self._required_keys = {
            OPENAI_RESPONSES: required_openai_key,
            OPENAI_MODELS: required_openai_key,
            ANTHROPIC_MESSAGES: required_anthropic_key,
            ANTHROPIC_MODELS: required_anthropic_key,
        }
        self._models = {
            OPENAI_MODELS: tuple(openai_models),
            ANTHROPIC_MODELS: tuple(anthropic_models),
        }
        self._lock = threading.Condition()
        self._script: list[Reply] = []
        self._requests: list[ReceivedRequest] = []
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.exhausted = 0  # POSTs answered 500 because nothing was scripted for them
        self.disconnects = 0  # hung requests released because the client closed

    # lifecycle

    def start(self) -> FakeProvider:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, release hung and delayed requests, close every open connection."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # what tests use

    @property
    def port(self) -> int:
        assert self._server is not None, "start the fake first"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the OpenAI base and the Anthropic root at once."""
        return f"http://127.0.0.1:{self.port}"

    def env(
        self, openai_key: str = FAKE_OPENAI_KEY, anthropic_key: str = FAKE_ANTHROPIC_KEY
    ) -> dict[str, str]:
        """Environment variables pointing both backends at this fake, with fake keys."""
        return {
            "ARTIFACTIZE_OPENAI_BASE_URL": self.base_url,
            "ARTIFACTIZE_ANTHROPIC_BASE_URL": self.base_url,
            "OPENAI_API_KEY": openai_key,
            "ANTHROPIC_API_KEY": anthropic_key,
        }

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the script, answered in order (per route, see module doc)."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received so far, GETs included, in arrival order."""
        with self._lock:
            return list(self._requests)

    def posts(self, path: str | None = None) -> list[ReceivedRequest]:
        """The POSTs received so far, optionally only those to ``path``."""
        return [r for r in self.requests if r.method == "POST" and path in (None, r.path)]

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[ReceivedRequest]:
        """Block until ``count`` requests arrived; AssertionError after ``timeout`` seconds."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self._requests)}")
            return list(self._requests)

    # server side

    def _track(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def _untrack(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def _receive(self, handler: _Handler) -> ReceivedRequest:
        length = int(handler.headers.get("Content-Length") or 0)
        raw_body = handler.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in handler.headers.items()}
        path = handler.path.split("?", 1)[0]
        received = ReceivedRequest(handler.command, path, headers, raw_body, body)
        with self._lock:
            self._requests.append(received)
            self._lock.notify_all()
        return received

    def _handle(self, handler: _Handler) -> None:
        request = self._receive(handler)
        if not self._authorized(request):
            message = f"Fake provider: missing or wrong API key for {request.path}."
            self._send(handler, 401, _error_body("authentication_error", message))
            return
        if request.method == "GET":
            self._serve_models(handler, request)
            return
        if request.path not in (OPENAI_RESPONSES, ANTHROPIC_MESSAGES):
            message = f"Fake provider has no route POST {request.path}."
            self._send(handler, 404, _error_body("not_found_error", message))
            return
        self._answer(handler, request, self._next_reply(request))

    def _authorized(self, request: ReceivedRequest) -> bool:
        required = self._required_keys.get(request.path)
        if required is None:
            return True
        if request.path in (OPENAI_RESPONSES, OPENAI_MODELS):
            return request.header("authorization") == f"Bearer {required}"
        return request.header("x-api-key") == required

    def _serve_models(self, handler: _Handler, request: ReceivedRequest) -> None:
        models = self._models.get(request.path)
        if models is None:
            message = f"Fake provider has no route GET {request.path}."
            self._send(handler, 404, _error_body("not_found_error", message))
            return
        if request.path == OPENAI_MODELS:
            data: list[dict[str, Any]] = [
                {"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in models
            ]
            body: dict[str, Any] = {"object": "list", "data": data}
        else:
            data = [
                {
                    "type": "model",
                    "id": name,
                    "display_name": name,
                    "created_at": "2025-01-01T00:00:00Z",
                }
                for name in models
            ]
            body = {
                "data": data,
                "has_more": False,
                "first_id": models[0] if models else None,
                "last_id": models[-1] if models else None,
            }
        self._send(handler, 200, _compact(body).encode())

    def _next_reply(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            for index, candidate in enumerate(self._script):
                if candidate.route in (None, request.path):
                    return self._script.pop(index)
            number = len(self._requests)
        if self._responder is not None:
            return self._responder(request)
        with self._lock:
            self.exhausted += 1
        message = (
            f"Fake provider script exhausted: no reply queued for POST {request.path} "
            f"(request #{number})."
        )
        return Reply(status=500, raw=_error_body("fake_script_exhausted", message))

    def _answer(self, handler: _Handler, request: ReceivedRequest, answer: Reply) -> None:
        if answer.delay > 0 and self._stopping.wait(answer.delay):
            handler.close_connection = True
            return
        if answer.action == "hang":
            self._hang(handler)
            return
        if answer.action == "disconnect":
            handler.close_connection = True
            return
        if answer.raw is not None:
            payload = answer.raw
        else:
            body = answer.body
            if answer.echo_model and isinstance(body, dict) and isinstance(request.body, dict):
                requested = request.body.get("model")
                if isinstance(requested, str):
                    body = {**body, "model": requested}
            payload = _compact(body).encode()
        self._send(handler, answer.status, payload, answer.headers, answer.content_type)

    def _hang(self, handler: _Handler) -> None:
        """Hold the request until the client closes its end or the fake stops."""
        handler.close_connection = True
        connection = handler.connection
        while not self._stopping.is_set():
            readable, _, _ = select.select([connection], [], [], HANG_POLL_SECONDS)
            if not readable:
                continue
            try:
                peeked = connection.recv(1, socket.MSG_PEEK)
            except OSError:
                peeked = b""
            if not peeked:
                with self._lock:
                    self.disconnects += 1
                return
            time.sleep(HANG_POLL_SECONDS)  # the client sent more bytes; keep holding

    @staticmethod
    def _send(
        handler: _Handler,
        status: int,
        payload: bytes,
        headers: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except OSError:
            handler.close_connection = True  # the client went away; nothing to tell it


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A started :class:`FakeProvider`, closed after the test."""
    with FakeProvider() as fake:
        yield fake
