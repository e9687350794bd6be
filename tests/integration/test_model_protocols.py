"""What real providers do that the first backends missed, against the fake provider over real
HTTP: Chat Completions, streams (complete, cut short, stalled), store-false replays, usage
counters, SDK-style retry hints and error codes, keyless local servers and proxies.

Every request body is checked with the official SDK's request type (``assert_sdk_valid``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import anyio
import pytest

from artifactize.adapters.llm.backends import EnvModelBackends
from artifactize.adapters.llm.errors import parse_retry_after
from artifactize.adapters.llm.http import MAX_STREAM_EVENT_BYTES, new_provider_client, post_turn
from artifactize.adapters.llm.openai_chat import IMAGES_INTRO
from artifactize.adapters.llm.proxies import proxy_for, without_credentials
from artifactize.adapters.llm.turns import ProviderBackend
from artifactize.ports.model import (
    AssistantTurn,
    BackendUnavailable,
    FailureKind,
    ModelBackend,
    ProviderFailure,
    ToolCall,
    ToolOutput,
    ToolSpec,
    TurnRequest,
    TurnResponse,
    UserText,
)
from tests.support.fake_provider import (
    ANTHROPIC_MESSAGES,
    FAKE_OPENAI_KEY,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    FakeProvider,
    Reply,
    anthropic_response,
    anthropic_text,
    anthropic_text_block,
    anthropic_tool_use,
    chat_response,
    chat_text,
    chat_tool_call,
    error,
    openai_response,
    openai_text,
    openai_tool_call,
    stalled,
    truncated,
    unstreamed,
)
from tests.support.images import PNG1, b64

pytestmark = pytest.mark.anyio
IMAGE = b64(PNG1)
TOOLS = (
    ToolSpec(
        "read_docs",
        "Read a file of the docs Artifact.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
)
PROVIDER_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "openai-chat": "OpenAI-compatible server",
}
TEXT_REPLIES = {"openai": openai_text, "anthropic": anthropic_text, "openai-chat": chat_text}


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@contextlib.asynccontextmanager
async def opened(fake: FakeProvider, name: str, **env: str) -> AsyncIterator[ModelBackend]:
    backend = EnvModelBackends({**fake.env(), **env}).open(name)
    try:
        yield backend
    finally:
        await backend.aclose()


def request(**changes: Any) -> TurnRequest:
    fields: dict[str, Any] = {
        "model": "m-1",
        "instructions": "Be strict.",
        "items": (UserText("Review the docs."),),
        "tools": TOOLS,
    }
    fields.update(changes)
    return TurnRequest(**fields)


async def one_turn(fake: FakeProvider, name: str, *replies: Reply, **env: str) -> TurnResponse:
    fake.enqueue(*replies)
    async with opened(fake, name, **env) as backend:
        return await backend.turn(request())


async def one_failure(fake: FakeProvider, name: str, *replies: Reply) -> ProviderFailure:
    fake.enqueue(*replies)
    async with opened(fake, name) as backend:
        with pytest.raises(ProviderFailure) as caught:
            await backend.turn(request())
    return caught.value


# --- Chat Completions ---------------------------------------------------------------------


async def test_chat_request_is_the_chat_completions_wire_format(fake: FakeProvider) -> None:
    fake.enqueue(
        chat_tool_call("call_2", "read_docs", {"path": "b.md"}, text="Next."),
        chat_text("done"),
    )
    async with opened(fake, "openai-chat") as backend:
        first = await backend.turn(request(reasoning="low"))
        conversation = (
            UserText("Review the docs."),
            AssistantTurn(
                "",
                (
                    ToolCall("call_0", "read_docs", '{"path":"a.md"}'),
                    ToolCall("call_1", "read_docs", '{"path":"c.md"}'),
                ),
            ),
            ToolOutput(
                "call_0",
                (
                    {"type": "text", "text": "line 1"},
                    {"type": "json", "data": {"lines": 1}},
                    {"type": "image", "mimeType": "image/png", "data": IMAGE},
                ),
                is_error=False,
            ),
            ToolOutput("call_1", ({"type": "text", "text": "No such file."},), is_error=True),
            first.turn,
            ToolOutput("call_2", ({"type": "text", "text": "B"},), is_error=False),
        )
        await backend.turn(request(items=conversation, tool_choice="none"))
    assert first.turn.text == "Next."
    assert first.turn.tool_calls == (ToolCall("call_2", "read_docs", '{"path":"b.md"}'),)
    assert first.model == "m-1-2025-11-13" and first.finish == "tool_calls"
    sent_first, sent_second = fake.posts(OPENAI_CHAT)
    assert sent_first.header("authorization") == f"Bearer {FAKE_OPENAI_KEY}"
    tool_json = {
        "type": "function",
        "function": {
            "name": "read_docs",
            "description": "Read a file of the docs Artifact.",
            "parameters": TOOLS[0].input_schema,
        },
    }
    system = {"role": "system", "content": "Be strict."}
    user = {"role": "user", "content": "Review the docs."}
    assert sent_first.body == {
        "model": "m-1",
        "messages": [system, user],
        "tools": [tool_json],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning_effort": "low",
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert sent_second.body["messages"] == [
        system,
        user,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "read_docs", "arguments": '{"path":"a.md"}'},
                },
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_docs", "arguments": '{"path":"c.md"}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_0",
            "content": [
                {"type": "text", "text": "line 1"},
                {"type": "text", "text": '{"lines":1}'},
                {"type": "text", "text": "[image 1: attached in the next user message]"},
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": [{"type": "text", "text": "No such file."}],
        },
        {  # a tool message holds no image: the images follow the turn's tool messages
            "role": "user",
            "content": [
                {"type": "text", "text": IMAGES_INTRO},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{IMAGE}"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Next.",
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_docs", "arguments": '{"path":"b.md"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "B"}]},
    ]
    assert sent_second.body["tool_choice"] == "none"
    assert "reasoning_effort" not in sent_second.body  # only when the profile declares it
    fake.assert_sdk_valid()


async def test_chat_without_a_key_sends_no_authorization(fake: FakeProvider) -> None:
    env = {**fake.env()}
    env.pop("OPENAI_API_KEY")
    fake.enqueue(chat_text("{}"))
    backend = EnvModelBackends(env).open("openai-chat")
    try:
        response = await backend.turn(request())
    finally:
        await backend.aclose()
    assert response.turn.text == "{}"
    (sent,) = fake.posts()
    assert sent.header("authorization") is None
    fake.assert_sdk_valid()


def test_chat_at_the_public_default_needs_no_key_but_openai_does() -> None:
    endpoint = EnvModelBackends({}).endpoint("openai-chat")
    assert (endpoint.base_url, endpoint.source) == ("https://api.openai.com/v1", "default")
    assert (endpoint.key_set, endpoint.key_required) == (False, False)
    with pytest.raises(BackendUnavailable, match=r"^OPENAI_API_KEY is required"):
        EnvModelBackends({}).open("openai")


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_non_default_endpoint_makes_the_key_optional(name: str) -> None:
    backends = EnvModelBackends({})
    endpoint = backends.endpoint(name, "http://localhost:4000")
    assert (endpoint.source, endpoint.key_required, endpoint.loopback) == ("profile", False, True)
    assert backends.open(name, "http://localhost:4000").name == name


def test_the_variable_wins_over_the_profile_base_url() -> None:
    backends = EnvModelBackends({"ARTIFACTIZE_OPENAI_CHAT_BASE_URL": "http://127.0.0.1:9/v1"})
    endpoint = backends.endpoint("openai-chat", "https://gateway.example.com/v1")
    assert (endpoint.base_url, endpoint.source) == (
        "http://127.0.0.1:9/v1",
        "ARTIFACTIZE_OPENAI_CHAT_BASE_URL",
    )
    assert endpoint.loopback and endpoint.proxy is None


@pytest.mark.parametrize(
    ("finish_reason", "finish", "detail"),
    [
        ("stop", "stop", ""),
        ("length", "length", "length"),
        ("content_filter", "content_filter", "content_filter"),
        ("something_new", "other", "something_new"),
    ],
)
async def test_chat_finish_reasons(
    fake: FakeProvider, finish_reason: str, finish: str, detail: str
) -> None:
    response = await one_turn(
        fake, "openai-chat", chat_response({"content": "x"}, finish_reason=finish_reason)
    )
    assert (response.finish, response.finish_detail) == (finish, detail)


async def test_chat_answer_without_a_stream_is_read_too(fake: FakeProvider) -> None:
    response = await one_turn(fake, "openai-chat", unstreamed(chat_text("plain")))
    assert response.turn.text == "plain"
    assert response.usage == {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120}


# --- usage counters -----------------------------------------------------------------------


async def test_openai_cache_write_and_reasoning_counters(fake: FakeProvider) -> None:
    usage = {
        "input_tokens": 50,
        "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 12},
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 4},
        "total_tokens": 59,
    }
    response = await one_turn(fake, "openai", openai_text("{}", usage=usage))
    assert response.usage == {
        "inputTokens": 50,
        "outputTokens": 9,
        "totalTokens": 59,
        "cacheReadTokens": 30,
        "cacheWriteTokens": 12,
        "reasoningTokens": 4,
    }
    fake.assert_sdk_valid()


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {
                "prompt_tokens": 40,
                "completion_tokens": 8,
                "total_tokens": 48,
                "prompt_tokens_details": {"cached_tokens": 32},
                "completion_tokens_details": {"reasoning_tokens": 5},
            },
            {
                "inputTokens": 40,
                "outputTokens": 8,
                "totalTokens": 48,
                "cacheReadTokens": 32,
                "reasoningTokens": 5,
            },
        ),
        (  # a gateway that reports reported zeros: zero stays zero
            {
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "total_tokens": 0,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
            {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0, "cacheReadTokens": 0},
        ),
        (None, {}),  # a local server that reports nothing: absent stays absent
    ],
)
async def test_chat_usage_counters(
    fake: FakeProvider, usage: Mapping[str, Any] | None, expected: dict[str, int]
) -> None:
    response = await one_turn(fake, "openai-chat", chat_text("{}", usage=usage))
    assert response.usage == expected


async def test_anthropic_usage_comes_from_the_final_event(fake: FakeProvider) -> None:
    usage = {
        "input_tokens": 7,
        "output_tokens": 321,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 50,
        "cache_creation": {"ephemeral_1h_input_tokens": 50, "ephemeral_5m_input_tokens": 0},
    }
    response = await one_turn(fake, "anthropic", anthropic_text("{}", usage=usage))
    assert response.usage == {
        "inputTokens": 7,
        "outputTokens": 321,  # message_start said 1; message_delta has the final count
        "totalTokens": 328,
        "cacheReadTokens": 1000,
        "cacheWriteTokens": 50,
        "cacheWrite1hTokens": 50,
    }
    fake.assert_sdk_valid()


async def test_anthropic_context_window_exceeded_is_a_length_finish(fake: FakeProvider) -> None:
    response = await one_turn(
        fake,
        "anthropic",
        anthropic_response(
            [anthropic_text_block("{")], stop_reason="model_context_window_exceeded"
        ),
    )
    assert (response.finish, response.finish_detail) == (
        "length",
        "model_context_window_exceeded",
    )


# --- streams ------------------------------------------------------------------------------

FULL = {
    "openai": lambda: openai_tool_call("call_1", "read_docs", {"path": "a"}),
    "anthropic": lambda: anthropic_tool_use("toolu_1", "read_docs", {"path": "a"}),
    "openai-chat": lambda: chat_tool_call("call_1", "read_docs", {"path": "a"}),
}


@pytest.mark.parametrize("name", list(FULL))
async def test_a_streamed_tool_call_is_assembled(fake: FakeProvider, name: str) -> None:
    response = await one_turn(fake, name, FULL[name]())
    assert response.finish == "tool_calls"
    (call,) = response.turn.tool_calls
    assert (call.name, call.arguments) == ("read_docs", '{"path":"a"}')
    (sent,) = fake.posts()
    assert sent.body["stream"] is True
    fake.assert_sdk_valid()


@pytest.mark.parametrize("name", list(FULL))
@pytest.mark.parametrize("events", [0, 1, 3])
async def test_a_stream_that_ends_before_its_final_event_is_an_error(
    fake: FakeProvider, name: str, events: int
) -> None:
    failure = await one_failure(fake, name, truncated(FULL[name](), events))
    assert failure.kind is FailureKind.TRANSIENT
    assert failure.message.startswith(f"{PROVIDER_NAMES[name]} stream ended before its final event")
    assert failure.streamed  # never retried: the provider may have done the work


@pytest.mark.parametrize("name", list(FULL))
async def test_a_stalled_stream_hits_the_idle_read_timeout(fake: FakeProvider, name: str) -> None:
    fake.enqueue(stalled(FULL[name](), 3))
    async with opened(fake, name) as backend:
        assert isinstance(backend, ProviderBackend)
        backend.stream_idle_timeout = 0.3
        with anyio.fail_after(10), pytest.raises(ProviderFailure) as caught:
            await backend.turn(request())
    assert caught.value.kind is FailureKind.TRANSIENT
    assert "(ReadTimeout)" in caught.value.message
    assert caught.value.streamed  # output had begun: no retry


@pytest.mark.parametrize(
    ("name", "event", "kind"),
    [
        (
            "openai",
            {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down."},
            FailureKind.RATE_LIMIT,
        ),
        (
            "anthropic",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            FailureKind.TRANSIENT,
        ),
        (
            "openai-chat",
            {"error": {"message": "Out of credits.", "code": "insufficient_quota"}},
            FailureKind.QUOTA,
        ),
    ],
)
async def test_an_error_event_in_a_stream_is_classified_by_its_code(
    fake: FakeProvider, name: str, event: dict[str, Any], kind: FailureKind
) -> None:
    route = {"openai": OPENAI_RESPONSES, "anthropic": ANTHROPIC_MESSAGES}.get(name, OPENAI_CHAT)
    failure = await one_failure(
        fake, name, Reply(raw=_sse(event, name), content_type="text/event-stream", route=route)
    )
    assert failure.kind is kind
    assert f"{PROVIDER_NAMES[name]} stream reported an error: " in failure.message


def _sse(event: dict[str, Any], name: str) -> bytes:
    import json

    data = json.dumps(event)
    if name == "openai-chat":
        return f"data: {data}\n\n".encode()
    return f"event: error\ndata: {data}\n\n".encode()


# --- store: false replays -----------------------------------------------------------------


async def test_openai_replays_without_server_item_ids(fake: FakeProvider) -> None:
    fake.enqueue(
        openai_tool_call("call_1", "read_docs", {"path": "a"}, reasoning="enc-1"),
        openai_response(
            [
                {
                    "type": "message",
                    "id": "msg_1",
                    "status": "completed",
                    "role": "assistant",
                    "content": [
                        {"type": "output_text", "text": "Thinking aloud.", "annotations": []}
                    ],
                },
                {
                    "type": "function_call",
                    "id": "fc_2",
                    "call_id": "call_2",
                    "name": "read_docs",
                    "arguments": "{}",
                    "status": "completed",
                },
            ]
        ),
        openai_text("{}"),
    )
    async with opened(fake, "openai") as backend:
        first = await backend.turn(request())
        items: tuple[Any, ...] = (
            UserText("Review the docs."),
            first.turn,
            ToolOutput("call_1", ({"type": "text", "text": "A"},), is_error=False),
        )
        second = await backend.turn(request(items=items))
        items = (*items, second.turn, ToolOutput("call_2", ({"type": "text", "text": "B"},), False))
        await backend.turn(request(items=items))
    replayed = fake.posts()[-1].body["input"]
    assert replayed[1] == {
        "type": "reasoning",
        "id": "rs_fake",
        "summary": [],
        "encrypted_content": "enc-1",
    }
    assert replayed[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "read_docs",
        "arguments": '{"path":"a"}',
    }
    assert replayed[4] == {"type": "message", "role": "assistant", "content": "Thinking aloud."}
    assert replayed[5] == {
        "type": "function_call",
        "call_id": "call_2",
        "name": "read_docs",
        "arguments": "{}",
    }
    for item in replayed:
        assert not str(item.get("id", "")).startswith(("msg_", "fc_"))
    fake.assert_sdk_valid()


# --- retries and error codes --------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("false", False), ("maybe", None)])
async def test_x_should_retry_is_read(
    fake: FakeProvider, value: str, expected: bool | None
) -> None:
    failure = await one_failure(fake, "openai", error(400, "Odd.", {"x-should-retry": value}))
    assert failure.should_retry is expected


async def test_an_http_date_retry_after_in_the_future() -> None:
    now = 1_000_000_000.0
    header = {"Retry-After": "Sun, 09 Sep 2001 01:47:10 GMT"}  # now + 30 s
    assert parse_retry_after(header, now=lambda: now) == pytest.approx(30.0)


async def test_each_failure_draws_its_own_backoff_jitter(fake: FakeProvider) -> None:
    jitters = set()
    for _ in range(5):
        failure = await one_failure(fake, "openai", error(503, "Busy."))
        assert 0.75 < failure.backoff_jitter <= 1.0
        jitters.add(failure.backoff_jitter)
    assert len(jitters) > 1


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (  # Anthropic says to branch on the code, not the words
            Reply(
                status=400,
                body={
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "Your request could not be processed.",
                        "details": {"error_code": "credit_balance_too_low"},
                    },
                },
            ),
            FailureKind.QUOTA,
        ),
        (
            error(
                400,
                "Billing words but a plain bad request.",
                error_type="invalid_request_error",
                code="context_length_exceeded",
            ),
            FailureKind.PROVIDER_ERROR,
        ),
        (error(429, "Quota-ish words.", code="rate_limit_exceeded"), FailureKind.RATE_LIMIT),
        (error(429, "Too many.", code="insufficient_quota"), FailureKind.QUOTA),
        (error(400, "Nope.", error_type="billing_error"), FailureKind.QUOTA),
        (
            error(403, "Not for this org.", error_type="permission_error"),
            FailureKind.AUTHENTICATION,
        ),
        (error(400, "x", error_type="authentication_error"), FailureKind.AUTHENTICATION),
    ],
)
async def test_codes_decide_before_words(
    fake: FakeProvider, answer: Reply, kind: FailureKind
) -> None:
    failure = await one_failure(fake, "anthropic", answer)
    assert failure.kind is kind


# --- proxies ------------------------------------------------------------------------------


class RecordingProxy:
    """An HTTP proxy on 127.0.0.1 that records what it is asked and refuses to tunnel."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen()
        self._server.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(2)
                data = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in data:
                        chunk = connection.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                self.received.append(data)
                with contextlib.suppress(OSError):
                    connection.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._server.close()


SECRET = "sk-proj-PROXY-SECRET-0123456789"


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY"])
async def test_a_remote_endpoint_goes_through_the_proxy_without_the_key(variable: str) -> None:
    with RecordingProxy() as proxy:
        env = {
            variable: proxy.url,
            "OPENAI_API_KEY": SECRET,
            "ARTIFACTIZE_OPENAI_BASE_URL": "https://api.example.test/v1",
        }
        backends = EnvModelBackends(env)
        assert backends.endpoint("openai").proxy == proxy.url
        backend = backends.open("openai")
        try:
            with pytest.raises(ProviderFailure) as caught:
                await backend.turn(request())
        finally:
            await backend.aclose()
    (asked,) = proxy.received
    assert asked.startswith(b"CONNECT api.example.test:443 HTTP/1.1\r\n")
    assert SECRET.encode() not in asked  # the key travels inside the tunnel, never to the proxy
    assert caught.value.kind is FailureKind.TRANSIENT
    assert SECRET not in caught.value.message


async def test_a_loopback_endpoint_never_goes_through_the_proxy(fake: FakeProvider) -> None:
    with RecordingProxy() as proxy:
        env = {"HTTPS_PROXY": proxy.url, "HTTP_PROXY": proxy.url, "ALL_PROXY": proxy.url}
        response = await one_turn(fake, "openai-chat", chat_text("direct"), **env)
        assert EnvModelBackends({**fake.env(), **env}).endpoint("openai-chat").proxy is None
    assert response.turn.text == "direct"
    assert proxy.received == []


@pytest.mark.parametrize(
    ("no_proxy", "bypassed"),
    [
        ("api.example.test", True),
        (".example.test", True),
        ("example.test", True),
        ("*", True),
        ("other.test, api.example.test:443", True),
        ("api.example.test:8443", False),
        ("xample.test", False),
        ("", False),
    ],
)
def test_no_proxy(no_proxy: str, bypassed: bool) -> None:
    env = {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": no_proxy}
    chosen = proxy_for("https://api.example.test/v1", env)
    assert chosen == (None if bypassed else "http://proxy.corp:3128")


def test_proxy_choice_by_scheme_and_credentials_hidden() -> None:
    env = {"HTTP_PROXY": "http://a:3128", "ALL_PROXY": "http://user:pw@b:3128"}
    assert proxy_for("https://api.example.test", env) == "http://user:pw@b:3128"
    assert without_credentials("http://user:pw@b:3128") == "http://b:3128"
    assert proxy_for("https://api.example.test", {"HTTPS_PROXY": "proxy.corp:3128"}) == (
        "http://proxy.corp:3128"
    )
    with pytest.raises(BackendUnavailable, match=r"^HTTPS_PROXY is not a proxy URL"):
        proxy_for("https://api.example.test", {"HTTPS_PROXY": "ftp://x:1"})
    endpoint = EnvModelBackends({**env, "OPENAI_API_KEY": "k"}).endpoint("openai")
    assert endpoint.proxy == "http://b:3128"  # shown without its credentials


# --- limits and hostile streams -----------------------------------------------------------


class _Final:
    """A minimal assembler: the last event's data is the answer."""

    def __init__(self) -> None:
        self.started = False
        self.last: dict[str, Any] | None = None

    def feed(self, event: str, data: Any) -> None:
        self.started = True
        self.last = data

    def finish(self) -> dict[str, Any]:
        assert self.last is not None
        return self.last


async def test_stream_event_size_at_the_limit_and_one_past(fake: FakeProvider) -> None:
    data = '{"padding": "' + "x" * 200 + '"}'
    frame = f"event: e\ndata: {data}\n\n".encode()
    size = len("event: e") + len(f"data: {data}")  # the lines of the event, as counted
    stream = Reply(raw=frame, content_type="text/event-stream")
    fake.enqueue(stream, stream)
    async with new_provider_client() as client:
        url = f"{fake.base_url}/responses"
        ok = await post_turn(
            client, url, {}, {}, _Final(), provider="OpenAI", secret="k", max_event_bytes=size
        )
        assert ok == {"padding": "x" * 200}
        with pytest.raises(ProviderFailure) as caught:
            await post_turn(
                client,
                url,
                {},
                {},
                _Final(),
                provider="OpenAI",
                secret="k",
                max_event_bytes=size - 1,
            )
    assert caught.value.kind is FailureKind.PROVIDER_ERROR
    assert caught.value.message == (
        f"OpenAI response is malformed: a stream event exceeds {size - 1} bytes."
    )
    assert MAX_STREAM_EVENT_BYTES == 8 * 1024 * 1024


@pytest.mark.parametrize("name", ["openai", "anthropic", "openai-chat"])
async def test_a_stream_error_event_echoing_the_key_is_redacted(name: str) -> None:
    secret = "sk-SECRET-stream-0123456789abcdef"
    with FakeProvider() as fake:
        env = {
            **fake.env(openai_key=secret, anthropic_key=secret),
        }
        event = {"type": "error", "error": {"type": "api_error", "message": f"bad key {secret}"}}
        if name == "openai":
            event = {"type": "error", "code": "server_error", "message": f"bad key {secret}"}
        if name == "openai-chat":
            event = {"error": {"message": f"bad key {secret}", "code": "server_error"}}
        route = {"openai": OPENAI_RESPONSES, "anthropic": ANTHROPIC_MESSAGES}.get(name, OPENAI_CHAT)
        fake.enqueue(Reply(raw=_sse(event, name), content_type="text/event-stream", route=route))
        backend = EnvModelBackends(env).open(name)
        try:
            with pytest.raises(ProviderFailure) as caught:
                await backend.turn(request())
        finally:
            await backend.aclose()
    assert secret not in caught.value.message and "[REDACTED]" in caught.value.message
    assert caught.value.kind is FailureKind.TRANSIENT
