"""A scripted fake of the OpenAI Responses, OpenAI Chat Completions and Anthropic Messages
APIs on 127.0.0.1.

One real HTTP server (stdlib ``ThreadingHTTPServer`` in a background thread) serves all three
at one base URL, so it can stand behind every endpoint variable:

- ``POST /responses`` and ``GET /models``        (``ARTIFACTIZE_OPENAI_BASE_URL=<base_url>``)
- ``POST /chat/completions``                     (``ARTIFACTIZE_OPENAI_CHAT_BASE_URL=<base_url>``)
- ``POST /v1/messages`` and ``GET /v1/models``   (``ARTIFACTIZE_ANTHROPIC_BASE_URL=<base_url>``)

Each POST takes the next queued :class:`Reply` whose ``route`` is None or its own path, so a
single-provider script is just a list, and replies built with the ``openai_*``, ``chat_*``
and ``anthropic_*`` helpers only ever answer their own protocol. A reply is a JSON body with
a status and headers, optionally after a delay; or "hang until the client closes"; or "drop
the connection without answering". When nothing matches, the ``responder`` (if given) is
asked, else the fake answers 500 with a message saying the script is exhausted (and counts
it in ``exhausted``). Every request is recorded (method, path, lower-cased headers, raw and
parsed JSON body).

Like the real APIs, a helper-built reply answers with the dated snapshot of the model the
request named (``gpt-5.1`` → ``gpt-5.1-2025-11-13``, ``claude-x`` → ``claude-x-20250929``;
``FakeProvider(dated_models=False)`` echoes the name instead), and when the request asked
for ``stream: true`` it is sent as that protocol's server-sent events, built from the final
body (``truncated`` cuts a stream short; ``stalled`` stops sending and holds it open).

The official SDKs are the reference: every turn request is validated with the SDK's request
type (unknown fields forbidden) into ``invalid_requests``, and every reply body and stream
event the helpers built with the SDK's response models into ``invalid_replies``; a test
asserts both stay empty (``assert_sdk_valid``).

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

Run as a program, it is the README tour's **stand-in** for a model provider, so an Agent
review can be tried without an API key::

    python3 tests/support/fake_provider.py -- artifactize verify calc/review

It serves both providers, runs the command with the environment pointing at itself (fake
keys included), answers every Agent review at once with the smallest GREEN result that the
eval's GREEN schema (from the prompt) accepts, and stops when the command ends, exiting
with its code. It reviews nothing: it shows the plumbing (keys, reuse, follow-ups), not a
verdict anyone should trust.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

# The README tour's stand-in (``artifactize stand-in``) builds its answers the same way.
from artifactize.entrypoints.stand_in import (
    green_result,
    messages_events,
    responses_events,
)

OPENAI_RESPONSES = "/responses"
OPENAI_CHAT = "/chat/completions"
OPENAI_MODELS = "/models"
ANTHROPIC_MESSAGES = "/v1/messages"
ANTHROPIC_MODELS = "/v1/models"
TURN_ROUTES = (OPENAI_RESPONSES, OPENAI_CHAT, ANTHROPIC_MESSAGES)
OPENAI_SNAPSHOT = "-2025-11-13"
ANTHROPIC_SNAPSHOT = "-20250929"
SNAPSHOTS = {
    OPENAI_RESPONSES: OPENAI_SNAPSHOT,
    OPENAI_CHAT: OPENAI_SNAPSHOT,
    ANTHROPIC_MESSAGES: ANTHROPIC_SNAPSHOT,
}

FAKE_OPENAI_KEY = "sk-fake-openai-0123456789"
FAKE_ANTHROPIC_KEY = "sk-ant-fake-0123456789"
FAKE_OPENAI_MODELS = ("gpt-fake", "gpt-fake-mini")
FAKE_ANTHROPIC_MODELS = ("claude-fake", "claude-fake-haiku")
PLACEHOLDER_MODEL = "fake-model"  # when echoing and the request named no model

OPENAI_USAGE: Mapping[str, Any] = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 120,
}
ANTHROPIC_USAGE: Mapping[str, Any] = {"input_tokens": 100, "output_tokens": 20}
CHAT_USAGE: Mapping[str, Any] = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}

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
    echo_model: bool = False  # replace body["model"] with the request's model (or snapshot)
    streamable: bool = False  # a protocol body: sent as events when the request streams
    stream_events: int | None = None  # send only this many events, then end the stream
    stall: bool = False  # after ``stream_events`` events, hold the stream open silently
    model: str | None = None  # only answer a request for this model; None answers any
    frames: Callable[[], Iterable[bytes]] | None = None  # a raw event stream, made as sent


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


def truncated(answer: Reply, events: int) -> Reply:
    """``answer``'s stream cut after its first ``events`` events: it ends cleanly, but
    before the final event (no ``response.completed``, ``message_stop``, finish reason)."""
    return dataclasses.replace(answer, stream_events=events)


def stalled(answer: Reply, events: int) -> Reply:
    """``answer``'s first ``events`` events, then silence on an open stream."""
    return dataclasses.replace(answer, stream_events=events, stall=True)


def for_model(model: str, *answers: Reply) -> list[Reply]:
    """``answers`` kept for requests naming ``model`` (two evals on one route, say)."""
    return [dataclasses.replace(answer, model=model) for answer in answers]


def unstreamed(answer: Reply) -> Reply:
    """``answer`` as one JSON body even when the request asked for a stream (as a server
    that ignores ``stream`` would)."""
    return dataclasses.replace(answer, streamable=False)


def event_stream(frames: Callable[[], Iterable[bytes]], *, route: str | None = None) -> Reply:
    """A ``text/event-stream`` answer of the bytes ``frames()`` yields, written as they are
    made, so a test can stream far more than it would hold (a runaway provider). Frames are
    sent as they are: build them with :func:`sse_frame`; nothing is checked."""
    return Reply(frames=frames, route=route, content_type="text/event-stream")


def sse_frame(event: str | None, data: str) -> bytes:
    """One server-sent event: ``event: NAME`` (unless None) and one ``data:`` line."""
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {data}\n\n".encode()


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
        "created_at": 1764547200,
        "status": status,
        "model": model or PLACEHOLDER_MODEL,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
    }
    if incomplete_reason is not None:
        body["incomplete_details"] = {"reason": incomplete_reason}
    if usage is not None:
        body["usage"] = dict(usage)
    return Reply(
        body=body,
        headers=dict(headers or {}),
        route=OPENAI_RESPONSES,
        echo_model=model is None,
        streamable=True,
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
        body=body,
        headers=dict(headers or {}),
        route=ANTHROPIC_MESSAGES,
        echo_model=model is None,
        streamable=True,
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


# --- reply builders: OpenAI Chat Completions ---------------------------------------------


def chat_tool_call_item(
    call_id: str, name: str, arguments: str | Mapping[str, Any]
) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else _compact(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def chat_response(
    message: Mapping[str, Any],
    *,
    finish_reason: str | None = "stop",
    model: str | None = None,
    usage: Mapping[str, Any] | None = CHAT_USAGE,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """A ``chat.completion`` with one choice. ``model=None`` answers with the snapshot of
    the requested model; ``usage=None`` omits the usage object."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1764547200,
        "model": model or PLACEHOLDER_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **dict(message)},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return Reply(
        body=body,
        headers=dict(headers or {}),
        route=OPENAI_CHAT,
        echo_model=model is None,
        streamable=True,
    )


def chat_text(
    text: str, *, model: str | None = None, usage: Mapping[str, Any] | None = CHAT_USAGE
) -> Reply:
    """A final text answer (``finish_reason: stop``)."""
    return chat_response({"content": text}, model=model, usage=usage)


def chat_tool_call(
    call_id: str,
    name: str,
    arguments: str | Mapping[str, Any],
    *,
    text: str | None = None,
    model: str | None = None,
    usage: Mapping[str, Any] | None = CHAT_USAGE,
) -> Reply:
    """One tool call (``finish_reason: tool_calls``), after optional text."""
    message = {"content": text, "tool_calls": [chat_tool_call_item(call_id, name, arguments)]}
    return chat_response(message, finish_reason="tool_calls", model=model, usage=usage)


# --- stream events, built from a final body -------------------------------------------------


def chat_events(completion: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Chat Completions stream of ``completion``: a role chunk, content in two
    pieces, each tool call opened then given its arguments, the finish reason, and a last
    chunk with the usage and no choices."""
    head = {key: completion[key] for key in ("id", "created", "model") if key in completion}
    head["object"] = "chat.completion.chunk"
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content")
    if isinstance(text, str) and text:
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
            events.append(chunk({"content": piece}))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.get("id"),
                            "type": "function",
                            "function": {"name": function.get("name"), "arguments": ""},
                        }
                    ]
                }
            )
        )
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "function": {"arguments": function.get("arguments")}}
                    ]
                }
            )
        )
    if isinstance(message.get("refusal"), str):
        events.append(chunk({"refusal": message["refusal"]}))
    events.append(chunk({}, choice.get("finish_reason")))
    if "usage" in completion:
        events.append({**head, "choices": [], "usage": completion["usage"]})
    return events


EVENT_BUILDERS: Mapping[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]] = {
    OPENAI_RESPONSES: responses_events,
    ANTHROPIC_MESSAGES: messages_events,
    OPENAI_CHAT: chat_events,
}


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
        dated_models: bool = True,
        check_sdk: bool = True,
    ) -> None:
        """``responder`` answers POSTs the script does not cover. A ``required_*_key``
        makes the fake answer 401 to a request of that provider without that exact key.
        ``dated_models``: helper replies name the requested model's dated snapshot, as the
        real APIs do (False: they echo the requested name)."""
        self._responder = responder
        self._dated_models = dated_models
        self._check_sdk = check_sdk  # False: no SDK validation (a benchmark's fake)
        self._required_keys = {
            OPENAI_RESPONSES: required_openai_key,
            OPENAI_CHAT: required_openai_key,
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
        self.invalid_requests: list[tuple[str, str]] = []  # (path, what the SDK refused)
        self.invalid_replies: list[tuple[str, str]] = []  # (path, what the SDK refused)

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
        """Environment variables pointing every backend at this fake, with fake keys."""
        return {
            "ARTIFACTIZE_OPENAI_BASE_URL": self.base_url,
            "ARTIFACTIZE_ANTHROPIC_BASE_URL": self.base_url,
            "ARTIFACTIZE_OPENAI_CHAT_BASE_URL": self.base_url,
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

    def assert_sdk_valid(self) -> None:
        """Every turn request passed the SDK's request type, every helper reply and stream
        event the SDK's response models."""
        assert self.invalid_requests == [], self.invalid_requests
        assert self.invalid_replies == [], self.invalid_replies

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
        problem = None
        if handler.command == "POST" and path in TURN_ROUTES and self._check_sdk:
            from tests.support.sdk_types import request_problem

            problem = request_problem(path, body)
        with self._lock:
            self._requests.append(received)
            if problem is not None:
                self.invalid_requests.append((path, problem))
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
        if request.path not in TURN_ROUTES:
            message = f"Fake provider has no route POST {request.path}."
            self._send(handler, 404, _error_body("not_found_error", message))
            return
        self._answer(handler, request, self._next_reply(request))

    def _authorized(self, request: ReceivedRequest) -> bool:
        required = self._required_keys.get(request.path)
        if required is None:
            return True
        if request.path in (OPENAI_RESPONSES, OPENAI_CHAT, OPENAI_MODELS):
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
            requested = request.body.get("model") if isinstance(request.body, dict) else None
            for index, candidate in enumerate(self._script):
                if candidate.route in (None, request.path) and candidate.model in (None, requested):
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
        if answer.frames is not None:
            self._send_frames(handler, answer.frames())
            return
        if answer.raw is not None:
            payload = answer.raw
        else:
            body = answer.body
            if answer.echo_model and isinstance(body, dict) and isinstance(request.body, dict):
                requested = request.body.get("model")
                if isinstance(requested, str):
                    suffix = SNAPSHOTS.get(request.path, "") if self._dated_models else ""
                    body = {**body, "model": requested + suffix}
            if answer.streamable and answer.route is not None:
                self._check_reply(answer.route, body)
                streaming = isinstance(request.body, dict) and request.body.get("stream") is True
                if streaming and answer.status == 200:
                    self._stream(handler, answer, EVENT_BUILDERS[answer.route](body))
                    return
            payload = _compact(body).encode()
        self._send(handler, answer.status, payload, answer.headers, answer.content_type)

    def _check_reply(self, route: str, body: Any) -> None:
        if not self._check_sdk:
            return
        from tests.support.sdk_types import reply_problem

        problem = reply_problem(route, body)
        if problem is not None:
            with self._lock:
                self.invalid_replies.append((route, problem))

    def _stream(self, handler: _Handler, answer: Reply, events: list[dict[str, Any]]) -> None:
        """``events`` as server-sent events (each checked with the SDK's event models), cut
        or stalled as ``answer`` says; the connection closes after the stream."""
        from tests.support.sdk_types import event_problem

        route = answer.route or ""
        for event in events if self._check_sdk else ():
            problem = event_problem(route, event)
            if problem is not None:
                with self._lock:
                    self.invalid_replies.append((route, f"{event.get('type')}: {problem}"))
        complete = answer.stream_events is None
        sent = events if complete else events[: answer.stream_events]
        handler.close_connection = True
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Connection", "close")
            for name, value in answer.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            for event in sent:
                if route == OPENAI_CHAT:
                    frame = f"data: {_compact(event)}\n\n"
                else:
                    frame = f"event: {event['type']}\ndata: {_compact(event)}\n\n"
                handler.wfile.write(frame.encode())
                if route == ANTHROPIC_MESSAGES and event["type"] == "message_start":
                    handler.wfile.write(b'event: ping\ndata: {"type": "ping"}\n\n')
                handler.wfile.flush()
            if route == OPENAI_CHAT and complete:
                handler.wfile.write(b"data: [DONE]\n\n")
                handler.wfile.flush()
        except OSError:
            return
        if answer.stall:
            self._hang(handler)

    def _send_frames(self, handler: _Handler, frames: Iterable[bytes]) -> None:
        """A 200 event stream of ``frames``, each written as soon as it is made; it ends
        when they do, when the fake stops or when the client goes away."""
        handler.close_connection = True
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            for frame in frames:
                if self._stopping.is_set():
                    return
                handler.wfile.write(frame)
            handler.wfile.flush()
        except OSError:
            return  # the client stopped reading: what a bounded client does

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


# --- the stand-in reviewer (``python3 tests/support/fake_provider.py -- COMMAND``) ------------

STAND_IN_USAGE = "usage: python3 tests/support/fake_provider.py -- COMMAND [ARG...]"


def stand_in_verdict(request: ReceivedRequest) -> Reply:
    """A GREEN answer to any Agent review: the least the prompt's GREEN schema accepts."""
    answer = json.dumps(green_result(request.body))
    return anthropic_text(answer) if request.path == ANTHROPIC_MESSAGES else openai_text(answer)


def main(argv: Sequence[str]) -> int:
    """Serve the stand-in, run ``argv`` (after ``--``) against it, exit with its code."""
    import os
    import subprocess
    import sys

    command = list(argv[1:] if argv[:1] == ["--"] else argv)
    if not command:
        print(STAND_IN_USAGE, file=sys.stderr)
        return 2
    with FakeProvider(responder=stand_in_verdict) as fake:
        child = subprocess.Popen(command, env={**os.environ, **fake.env()})
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.terminate()
            return child.wait()


if __name__ == "__main__":
    # Run as a script (the README tour): the checkout's root makes ``tests.support`` (the
    # SDK request checks) importable, as it is under pytest.
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    raise SystemExit(main(sys.argv[1:]))


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A started :class:`FakeProvider`, closed after the test."""
    with FakeProvider() as fake:
        yield fake
