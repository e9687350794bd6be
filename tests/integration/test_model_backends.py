"""The OpenAI and Anthropic backends against the fake provider over real loopback HTTP.

Covers the exact request JSON, response parsing (text, tool calls, finish reasons, usage keys
only when reported), every error mapping, the test endpoint rules, the API key rules, and a
hostile server that echoes our headers back: the key must never surface.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import anyio
import httpx2
import pytest

from artifactize.adapters.llm.anthropic_messages import (
    MAX_TOKENS_PER_TURN,
    AnthropicMessagesBackend,
)
from artifactize.adapters.llm.backends import EnvModelBackends
from artifactize.adapters.llm.errors import MAX_PROVIDER_MESSAGE_CHARS, UnsupportedReasoning
from artifactize.adapters.llm.http import new_provider_client, post_json
from artifactize.adapters.llm.openai_responses import OpenAIResponsesBackend
from artifactize.ports.model import (
    AssistantTurn,
    BackendUnavailable,
    FailureKind,
    ModelBackend,
    ModelBackends,
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
    FAKE_ANTHROPIC_KEY,
    FAKE_OPENAI_KEY,
    OPENAI_RESPONSES,
    FakeProvider,
    ReceivedRequest,
    Reply,
    anthropic_response,
    anthropic_text,
    anthropic_text_block,
    anthropic_tool_use,
    anthropic_tool_use_block,
    chat_text,
    delayed,
    disconnect,
    error,
    hang,
    openai_function_call_item,
    openai_message_item,
    openai_response,
    openai_text,
    openai_tool_call,
    raw,
    reply,
)
from tests.support.images import PNG1, b64

pytestmark = pytest.mark.anyio

BACKENDS = ("openai", "anthropic", "openai-chat")
PROVIDER_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "openai-chat": "OpenAI-compatible server",
}
ENDPOINT_VARIABLES = {
    "openai": "ARTIFACTIZE_OPENAI_BASE_URL",
    "anthropic": "ARTIFACTIZE_ANTHROPIC_BASE_URL",
    "openai-chat": "ARTIFACTIZE_OPENAI_CHAT_BASE_URL",
}
TOOLS = (
    ToolSpec(
        name="read_docs",
        description="Read a file of the docs Artifact.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
)
IMAGE = b64(PNG1)
RESULT_BLOCKS: tuple[dict[str, Any], ...] = (
    {"type": "text", "text": "line 1\nline 2"},
    {"type": "json", "data": {"lines": 2, "name": "é"}},
    {"type": "image", "mimeType": "image/png", "data": IMAGE},
)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


@contextlib.asynccontextmanager
async def opened_on(environment: Mapping[str, str], name: str) -> AsyncIterator[ModelBackend]:
    backend = EnvModelBackends(environment).open(name)
    try:
        yield backend
    finally:
        await backend.aclose()


def opened(
    fake: FakeProvider, name: str, **env_overrides: str
) -> contextlib.AbstractAsyncContextManager[ModelBackend]:
    return opened_on({**fake.env(), **env_overrides}, name)


def simple_request(model: str = "m-1", **changes: Any) -> TurnRequest:
    fields: dict[str, Any] = {
        "model": model,
        "instructions": "Be strict.",
        "items": (UserText("Review the docs."),),
        "tools": TOOLS,
    }
    fields.update(changes)
    return TurnRequest(**fields)


async def turn_failure(
    backend: ModelBackend, request: TurnRequest | None = None
) -> ProviderFailure:
    """The ``ProviderFailure`` one turn of ``backend`` raises."""
    with pytest.raises(ProviderFailure) as caught:
        await backend.turn(simple_request() if request is None else request)
    return caught.value


async def failure_of(fake: FakeProvider, name: str, *replies: Reply) -> ProviderFailure:
    fake.enqueue(*replies)
    async with opened(fake, name) as backend:
        return await turn_failure(backend)


async def response_of(
    fake: FakeProvider, name: str, *replies: Reply, request: TurnRequest | None = None
) -> TurnResponse:
    """The response to one turn of ``name`` (``request``, else a simple one) once ``replies``
    are queued."""
    fake.enqueue(*replies)
    async with opened(fake, name) as backend:
        return await backend.turn(simple_request() if request is None else request)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- request wire format ------------------------------------------------------------------


async def test_openai_request_is_exactly_the_responses_wire_format(fake: FakeProvider) -> None:
    fake.enqueue(
        openai_tool_call("call_2", "read_docs", {"path": "b.md"}, reasoning="enc-1"),
        openai_text("done"),
    )
    async with opened(fake, "openai") as backend:
        first = await backend.turn(simple_request(reasoning="high"))
        conversation = (
            UserText("Review the docs."),
            AssistantTurn(
                text="Looking.",
                tool_calls=(ToolCall("call_1", "read_docs", '{"path":"a.md"}'),),
            ),
            ToolOutput("call_1", RESULT_BLOCKS, is_error=False),
            first.turn,
            ToolOutput("call_2", ({"type": "text", "text": "No such file."},), is_error=True),
        )
        await backend.turn(simple_request(items=conversation, tool_choice="none"))

    sent_first, sent_second = fake.posts(OPENAI_RESPONSES)
    assert sent_first.header("authorization") == f"Bearer {FAKE_OPENAI_KEY}"
    assert sent_first.header("content-type") == "application/json"
    tool_json = {
        "type": "function",
        "name": "read_docs",
        "description": "Read a file of the docs Artifact.",
        "parameters": TOOLS[0].input_schema,
        "strict": False,
    }
    user = {"role": "user", "content": [{"type": "input_text", "text": "Review the docs."}]}
    assert sent_first.body == {
        "model": "m-1",
        "instructions": "Be strict.",
        "input": [user],
        "tools": [tool_json],
        "tool_choice": "auto",
        "store": False,
        "stream": True,
        "parallel_tool_calls": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high"},
    }
    reasoning_item = {
        "type": "reasoning",
        "id": "rs_fake",
        "summary": [],
        "encrypted_content": "enc-1",
    }
    assert sent_second.body == {
        "model": "m-1",
        "instructions": "Be strict.",
        "input": [
            user,
            {"type": "message", "role": "assistant", "content": "Looking."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "read_docs",
                "arguments": '{"path":"a.md"}',
            },
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": [
                    {"type": "input_text", "text": "line 1\nline 2"},
                    {"type": "input_text", "text": '{"lines":2,"name":"é"}'},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{IMAGE}"},
                ],
            },
            reasoning_item,  # replayed with its ID and encrypted content, as store:false needs
            {  # without its server item ID (fc_…) and status: nothing is stored
                "type": "function_call",
                "call_id": "call_2",
                "name": "read_docs",
                "arguments": '{"path":"b.md"}',
            },
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": [{"type": "input_text", "text": "No such file."}],
            },
        ],
        "tools": [tool_json],
        "tool_choice": "none",
        "store": False,
        "stream": True,
        "parallel_tool_calls": False,
        "include": ["reasoning.encrypted_content"],
    }
    assert openai_function_call_item("call_2", "read_docs", {"path": "b.md"})["id"] == "fc_call_2"
    fake.assert_sdk_valid()


async def test_anthropic_request_is_exactly_the_messages_wire_format(fake: FakeProvider) -> None:
    thinking = {"type": "thinking", "thinking": "Check b.md.", "signature": "sig-1"}
    fake.enqueue(
        anthropic_response(
            [thinking, anthropic_tool_use_block("toolu_2", "read_docs", {"path": "b.md"})],
            stop_reason="tool_use",
        ),
        anthropic_text("done"),
    )
    async with opened(fake, "anthropic") as backend:
        first = await backend.turn(simple_request(reasoning="max"))
        conversation = (
            UserText("Review the docs."),
            AssistantTurn(
                text="Looking.",
                tool_calls=(
                    ToolCall("toolu_0", "read_docs", '{"path":"a.md"}'),
                    ToolCall("toolu_1", "read_docs", '{"path":"c.md"}'),
                ),
            ),
            ToolOutput("toolu_0", RESULT_BLOCKS, is_error=False),
            ToolOutput("toolu_1", ({"type": "text", "text": "No such file."},), is_error=True),
            first.turn,
            ToolOutput("toolu_2", ({"type": "text", "text": "B"},), is_error=False),
        )
        await backend.turn(simple_request(items=conversation, tool_choice="none"))

    sent_first, sent_second = fake.posts(ANTHROPIC_MESSAGES)
    assert sent_first.header("x-api-key") == FAKE_ANTHROPIC_KEY
    assert sent_first.header("anthropic-version") == "2023-06-01"
    assert sent_first.header("authorization") is None
    tool_json = {
        "name": "read_docs",
        "description": "Read a file of the docs Artifact.",
        "input_schema": TOOLS[0].input_schema,
    }
    user = {"role": "user", "content": [{"type": "text", "text": "Review the docs."}]}
    assert sent_first.body == {
        "model": "m-1",
        "max_tokens": MAX_TOKENS_PER_TURN,
        "system": "Be strict.",
        "messages": [user],
        "stream": True,
        "tools": [tool_json],
        "tool_choice": {"type": "auto"},
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "max"},
    }
    assert MAX_TOKENS_PER_TURN == 16384
    assert sent_second.body == {
        "model": "m-1",
        "max_tokens": 16384,
        "system": "Be strict.",
        "messages": [
            user,
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_0",
                        "name": "read_docs",
                        "input": {"path": "a.md"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "read_docs",
                        "input": {"path": "c.md"},
                    },
                ],
            },
            {  # both results of the turn in one user message
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_0",
                        "content": [
                            {"type": "text", "text": "line 1\nline 2"},
                            {"type": "text", "text": '{"lines":2,"name":"é"}'},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": IMAGE,
                                },
                            },
                        ],
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "No such file."}],
                        "is_error": True,
                    },
                ],
            },
            {  # replayed verbatim: the signed thinking block comes first
                "role": "assistant",
                "content": [
                    thinking,
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "read_docs",
                        "input": {"path": "b.md"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "B"}],
                        "is_error": False,
                    }
                ],
            },
        ],
        "stream": True,
        "tools": [tool_json],
        "tool_choice": {"type": "none"},
    }
    fake.assert_sdk_valid()


@pytest.mark.parametrize("name", BACKENDS)
async def test_without_tools_neither_tools_nor_tool_choice_is_sent(
    fake: FakeProvider, name: str
) -> None:
    fake.enqueue(openai_text("{}"), anthropic_text("{}"), chat_text("{}"))
    async with opened(fake, name) as backend:
        await backend.turn(simple_request(tools=(), tool_choice="none", instructions=""))
    (sent,) = fake.posts()
    assert "tools" not in sent.body
    assert "tool_choice" not in sent.body
    assert "instructions" not in sent.body and "system" not in sent.body
    assert "reasoning" not in sent.body and "thinking" not in sent.body


@pytest.mark.parametrize(
    ("name", "accepted", "refused"),
    [
        (
            "openai",
            ["none", "minimal", "low", "medium", "high", "xhigh", "max"],
            ["adaptive", "HIGH", ""],
        ),
        ("anthropic", ["low", "medium", "high", "xhigh", "max"], ["none", "minimal", "Max"]),
        (
            "openai-chat",
            ["none", "minimal", "low", "medium", "high", "xhigh"],
            ["max", "adaptive", ""],
        ),
    ],
)
async def test_reasoning_values_are_checked_before_connecting(
    fake: FakeProvider, name: str, accepted: list[str], refused: list[str]
) -> None:
    async with opened(fake, name) as backend:
        for value in refused:
            with pytest.raises(UnsupportedReasoning) as caught:
                await backend.turn(simple_request(reasoning=value))
            assert isinstance(caught.value, BackendUnavailable)
            assert isinstance(caught.value, ValueError)
            assert repr(value) in str(caught.value) and name in str(caught.value)
        assert fake.requests == []
        for value in accepted:
            fake.enqueue(openai_text("{}"), anthropic_text("{}"), chat_text("{}"))
            await backend.turn(simple_request(reasoning=value))
    efforts = [
        r.body.get("reasoning_effort")
        or (r.body.get("reasoning") or r.body.get("output_config") or {}).get("effort")
        for r in fake.posts()
    ]
    assert efforts == accepted
    fake.assert_sdk_valid()  # xhigh included: the SDK types take it


async def test_anthropic_refuses_to_replay_arguments_that_are_not_an_object(
    fake: FakeProvider,
) -> None:
    turn = AssistantTurn(text="", tool_calls=(ToolCall("toolu_9", "read_docs", "[1]"),))
    async with opened(fake, "anthropic") as backend:
        failure = await turn_failure(backend, simple_request(items=(UserText("x"), turn)))
    assert failure.kind is FailureKind.PROVIDER_ERROR
    assert "'toolu_9'" in failure.message
    assert fake.requests == []


# --- response parsing ---------------------------------------------------------------------


async def test_openai_text_answer_and_full_usage(fake: FakeProvider) -> None:
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": 15,
    }
    two_messages = [openai_message_item('{"verdict":'), openai_message_item(' "GREEN"}')]
    response = await response_of(
        fake, "openai", openai_response(two_messages, usage=usage, model="gpt-other")
    )
    assert response.model == "gpt-other"  # reported as is: the loop compares
    assert response.finish == "stop" and response.finish_detail == ""
    assert response.turn.text == '{"verdict": "GREEN"}'
    assert response.turn.tool_calls == ()
    assert response.turn.provider_items == tuple(two_messages)
    assert response.usage == {
        "inputTokens": 10,
        "cacheReadTokens": 0,
        "outputTokens": 5,
        "reasoningTokens": 3,
        "totalTokens": 15,
    }


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, {}),
        ({}, {}),
        ({"input_tokens": 7}, {"inputTokens": 7}),
        (
            {
                "input_tokens": None,
                "output_tokens": "5",
                "total_tokens": True,
                "input_tokens_details": None,
            },
            {},
        ),
        ({"output_tokens": -1, "total_tokens": 0}, {"totalTokens": 0}),
    ],
)
async def test_openai_usage_keys_only_when_reported(
    fake: FakeProvider, usage: dict[str, Any] | None, expected: dict[str, int]
) -> None:
    response = await response_of(fake, "openai", openai_text("{}", usage=usage))
    assert response.usage == expected


async def test_openai_tool_call_answer(fake: FakeProvider) -> None:
    response = await response_of(
        fake,
        "openai",
        openai_tool_call("call_7", "read_docs", '{"path": "x"}', reasoning="enc"),
        request=simple_request(model="gpt-x"),
    )
    assert response.model == "gpt-x-2025-11-13"  # the fake answers as the API: a snapshot
    assert response.finish == "tool_calls"
    assert response.turn.text == ""
    assert response.turn.tool_calls == (ToolCall("call_7", "read_docs", '{"path": "x"}'),)
    assert [item["type"] for item in response.turn.provider_items] == ["reasoning", "function_call"]


@pytest.mark.parametrize(
    ("status", "reason", "output", "finish", "detail"),
    [
        (
            "incomplete",
            "max_output_tokens",
            [openai_message_item("{")],
            "length",
            "max_output_tokens",
        ),
        (
            "incomplete",
            "max_output_tokens",
            [openai_function_call_item("c", "read_docs", '{"pa')],
            "length",
            "max_output_tokens",
        ),
        ("incomplete", "content_filter", [], "content_filter", "content_filter"),
        ("incomplete", "something_new", [], "other", "something_new"),
        ("failed", None, [], "other", "status failed"),
        ("in_progress", None, [], "other", "status in_progress"),
    ],
)
async def test_openai_finish_reasons(
    fake: FakeProvider,
    status: str,
    reason: str | None,
    output: list[dict[str, Any]],
    finish: str,
    detail: str,
) -> None:
    response = await response_of(
        fake, "openai", openai_response(output, status=status, incomplete_reason=reason)
    )
    assert (response.finish, response.finish_detail) == (finish, detail)


async def test_openai_refusal_is_a_content_filter_finish(fake: FakeProvider) -> None:
    refusal = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    response = await response_of(fake, "openai", openai_response([refusal]))
    assert response.finish == "content_filter"
    assert response.finish_detail == "refusal: I can't help with that."
    assert response.turn.text == ""


async def test_anthropic_text_tool_use_and_usage(fake: FakeProvider) -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 4,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
    }
    response = await response_of(
        fake,
        "anthropic",
        anthropic_response(
            [
                anthropic_text_block("Reading "),
                anthropic_text_block("two files."),
                anthropic_tool_use_block("toolu_1", "read_docs", {"path": "é.md", "n": [1, 2]}),
            ],
            stop_reason="tool_use",
            usage=usage,
        ),
        request=simple_request(model="claude-x"),
    )
    assert response.model == "claude-x-20250929"
    assert response.finish == "tool_calls"
    assert response.turn.text == "Reading two files."
    assert response.turn.tool_calls == (
        ToolCall("toolu_1", "read_docs", '{"path":"é.md","n":[1,2]}'),
    )
    assert len(response.turn.provider_items) == 3
    assert response.usage == {
        "inputTokens": 12,
        "outputTokens": 4,
        "totalTokens": 16,
        "cacheReadTokens": 100,
        "cacheWriteTokens": 0,
        "cacheWrite1hTokens": 0,
    }


async def test_anthropic_tool_use_after_thinking(fake: FakeProvider) -> None:
    response = await response_of(
        fake,
        "anthropic",
        anthropic_tool_use("toolu_5", "read_docs", {"path": "a"}, thinking="Hmm."),
    )
    assert response.finish == "tool_calls"
    assert response.turn.tool_calls == (ToolCall("toolu_5", "read_docs", '{"path":"a"}'),)
    assert [block["type"] for block in response.turn.provider_items] == ["thinking", "tool_use"]
    assert response.usage == {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120}


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, {}),
        ({"input_tokens": 3}, {"inputTokens": 3}),  # no total without both halves
        ({"output_tokens": 2}, {"outputTokens": 2}),
        (
            {"input_tokens": 0, "output_tokens": 0},
            {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
        ),
        (
            {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": None},
            {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
        ),
    ],
)
async def test_anthropic_usage_keys_only_when_reported(
    fake: FakeProvider, usage: dict[str, Any] | None, expected: dict[str, int]
) -> None:
    response = await response_of(fake, "anthropic", anthropic_text("{}", usage=usage))
    assert response.usage == expected


@pytest.mark.parametrize(
    ("stop_reason", "finish", "detail"),
    [
        ("end_turn", "stop", ""),
        ("tool_use", "tool_calls", ""),
        ("max_tokens", "length", "max_tokens"),
        ("refusal", "content_filter", "refusal"),
        ("pause_turn", "other", "pause_turn"),
        ("stop_sequence", "other", "stop_sequence"),
        (None, "other", "none"),
    ],
)
async def test_anthropic_finish_reasons(
    fake: FakeProvider, stop_reason: str | None, finish: str, detail: str
) -> None:
    response = await response_of(
        fake, "anthropic", anthropic_response([anthropic_text_block("x")], stop_reason=stop_reason)
    )
    assert (response.finish, response.finish_detail) == (finish, detail)


@pytest.mark.parametrize(
    ("name", "body", "detail"),
    [
        ("openai", {"output": []}, "no string 'model'"),
        ("openai", {"model": "m-1", "output": "x"}, "no 'output' list"),
        (
            "openai",
            {"model": "m-1", "output": [{"type": "function_call", "call_id": 1}]},
            "output[0] has no string 'call_id'",
        ),
        ("anthropic", {"model": "m-1"}, "no 'content' list"),
        (
            "anthropic",
            {
                "model": "m-1",
                "content": [{"type": "tool_use", "id": "t", "name": "n", "input": "x"}],
            },
            "content[0] has no 'input' object",
        ),
        ("anthropic", {"model": "m-1", "content": ["text"]}, "content[0] is not an object"),
    ],
)
async def test_malformed_answers_are_provider_errors_that_keep_usage(
    fake: FakeProvider, name: str, body: dict[str, Any], detail: str
) -> None:
    fake.enqueue(reply({**body, "usage": {"input_tokens": 9}}))
    failure = await failure_of(fake, name)
    assert failure.kind is FailureKind.PROVIDER_ERROR
    assert failure.message.startswith(f"{PROVIDER_NAMES[name]} response is malformed: ")
    assert detail in failure.message
    assert failure.usage == {"inputTokens": 9}
    assert failure.retry_after is None and failure.streamed is False


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        (raw(b"<html>ok</html>", 200), "the answer is not JSON."),
        (raw(b"\xff\xfe", 200), "the answer is not JSON."),
        (reply([1, 2]), "the answer is not a JSON object."),
    ],
)
async def test_2xx_answers_that_are_not_a_json_object(
    fake: FakeProvider, name: str, answer: Reply, detail: str
) -> None:
    failure = await failure_of(fake, name, answer)
    assert failure.kind is FailureKind.PROVIDER_ERROR
    assert failure.message == f"{PROVIDER_NAMES[name]} response is malformed: {detail}"


async def test_answer_size_limit_at_the_limit_and_one_past(fake: FakeProvider) -> None:
    body = b'{"padding":"' + b"x" * 100 + b'"}'
    fake.enqueue(raw(body), raw(body))
    async with new_provider_client() as client:
        url = f"{fake.base_url}/responses"
        ok = await post_json(client, url, {}, {}, provider="OpenAI", secret="k", limit=len(body))
        assert ok == {"padding": "x" * 100}
        with pytest.raises(ProviderFailure) as caught:
            await post_json(client, url, {}, {}, provider="OpenAI", secret="k", limit=len(body) - 1)
    assert caught.value.kind is FailureKind.PROVIDER_ERROR
    assert caught.value.message == (
        f"OpenAI response is malformed: the answer exceeds {len(body) - 1} bytes."
    )


# --- error mapping ------------------------------------------------------------------------


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (error(401, "Invalid API key."), FailureKind.AUTHENTICATION),
        (error(403, "Forbidden."), FailureKind.AUTHENTICATION),
        (error(429, "Rate limit reached for requests."), FailureKind.RATE_LIMIT),
        (error(429, "You exceeded your current quota."), FailureKind.QUOTA),
        (error(429, "Check your plan and billing details."), FailureKind.QUOTA),
        (error(429, "No more credit."), FailureKind.QUOTA),
        (error(429, "Too many.", code="insufficient_quota"), FailureKind.QUOTA),
        (error(400, "Your credit balance is too low."), FailureKind.QUOTA),
        (error(402, "Payment required."), FailureKind.QUOTA),
        (error(408, "Request timeout."), FailureKind.TRANSIENT),
        (error(409, "Lock conflict."), FailureKind.TRANSIENT),
        (error(500, "Internal error."), FailureKind.TRANSIENT),
        (error(502, "Bad gateway."), FailureKind.TRANSIENT),
        (error(503, "Unavailable."), FailureKind.TRANSIENT),
        (error(504, "Gateway timeout."), FailureKind.TRANSIENT),
        (error(529, "Overloaded", error_type="overloaded_error"), FailureKind.TRANSIENT),
        (error(499, "Busy.", error_type="overloaded_error"), FailureKind.TRANSIENT),
        (error(400, "Insufficient context for this call."), FailureKind.PROVIDER_ERROR),
        (error(400, "Bad request."), FailureKind.PROVIDER_ERROR),
        (error(404, "No such model."), FailureKind.PROVIDER_ERROR),
        (error(422, "Unprocessable."), FailureKind.PROVIDER_ERROR),
        (reply({}, 302, {"Location": "/elsewhere"}), FailureKind.PROVIDER_ERROR),
    ],
)
async def test_http_error_kinds(
    fake: FakeProvider, name: str, answer: Reply, kind: FailureKind
) -> None:
    failure = await failure_of(fake, name, answer)
    assert failure.kind is kind
    assert failure.message.startswith(f"{PROVIDER_NAMES[name]} returned HTTP {answer.status}: ")
    assert len(fake.requests) == 1  # no retry, no redirect followed


@pytest.mark.parametrize("name", BACKENDS)
async def test_error_message_is_the_providers_message(fake: FakeProvider, name: str) -> None:
    failure = await failure_of(fake, name, error(400, "model: field required"))
    assert failure.message == f"{PROVIDER_NAMES[name]} returned HTTP 400: model: field required"
    assert str(failure) == failure.message


@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "0"}, 0.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "Retry-After": "1"}, 0.25),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date past: no wait
        ({"Retry-After": "-3"}, None),
        ({"Retry-After": "nan"}, None),
        ({}, None),
    ],
)
async def test_retry_after(
    fake: FakeProvider, headers: dict[str, str], retry_after: float | None
) -> None:
    failure = await failure_of(fake, "openai", error(429, "Slow down.", headers))
    assert failure.kind is FailureKind.RATE_LIMIT
    assert failure.retry_after == retry_after


async def test_retry_after_on_an_overload(fake: FakeProvider) -> None:
    answer = error(529, "Overloaded", {"retry-after": "2"}, error_type="overloaded_error")
    failure = await failure_of(fake, "anthropic", answer)
    assert (failure.kind, failure.retry_after) == (FailureKind.TRANSIENT, 2.0)


@pytest.mark.parametrize(
    ("answer", "kind", "message"),
    [
        (
            raw(b"<html>\n<b>502</b> Bad Gateway</html>", 502, "text/html"),
            FailureKind.TRANSIENT,
            "OpenAI returned HTTP 502: <html> <b>502</b> Bad Gateway</html>",
        ),
        (raw(b"nope", 400), FailureKind.PROVIDER_ERROR, "OpenAI returned HTTP 400: nope"),
        (raw(b"", 418), FailureKind.PROVIDER_ERROR, "OpenAI returned HTTP 418: no error message"),
        (
            reply({"error": "plain string"}, 400),
            FailureKind.PROVIDER_ERROR,
            "OpenAI returned HTTP 400: plain string",
        ),
    ],
)
async def test_error_bodies_that_are_not_the_usual_json(
    fake: FakeProvider, answer: Reply, kind: FailureKind, message: str
) -> None:
    failure = await failure_of(fake, "openai", answer)
    assert (failure.kind, failure.message) == (kind, message)


async def test_error_message_is_cleaned_of_control_characters(fake: FakeProvider) -> None:
    nasty = "bad\x1b[31m red\x00\u202e\r\nnext\tline"
    failure = await failure_of(fake, "anthropic", error(400, nasty))
    assert failure.message == "Anthropic returned HTTP 400: bad [31m red next line"


@pytest.mark.parametrize("name", BACKENDS)
async def test_error_message_bound_at_the_limit_and_one_past(fake: FakeProvider, name: str) -> None:
    prefix = f"{PROVIDER_NAMES[name]} returned HTTP 400: "
    room = MAX_PROVIDER_MESSAGE_CHARS - len(prefix)
    at_limit = await failure_of(fake, name, error(400, "a" * room))
    assert at_limit.message == prefix + "a" * room
    assert len(at_limit.message) == MAX_PROVIDER_MESSAGE_CHARS == 4096
    one_past = await failure_of(fake, name, error(400, "a" * (room + 1)))
    assert len(one_past.message) == MAX_PROVIDER_MESSAGE_CHARS
    assert one_past.message == prefix + "a" * (room - 1) + "…"


@pytest.mark.parametrize("name", BACKENDS)
async def test_a_closed_port_is_transient(fake: FakeProvider, name: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    overrides = {variable: url for variable in ENDPOINT_VARIABLES.values()}
    async with opened(fake, name, **overrides) as backend:
        failure = await turn_failure(backend)
    assert failure.kind is FailureKind.TRANSIENT
    assert failure.message.startswith(f"{PROVIDER_NAMES[name]} request failed (ConnectError): ")
    # Nothing chained: an httpx2 exception would carry the request and its key header.
    assert failure.__cause__ is None and failure.__context__ is None


@pytest.mark.parametrize("name", BACKENDS)
async def test_a_dropped_connection_is_transient(fake: FakeProvider, name: str) -> None:
    failure = await failure_of(fake, name, disconnect())
    assert failure.kind is FailureKind.TRANSIENT
    assert "(RemoteProtocolError)" in failure.message


@pytest.mark.parametrize("name", BACKENDS)
async def test_cancellation_interrupts_a_hung_turn_and_closes_the_connection(
    fake: FakeProvider, name: str
) -> None:
    fake.enqueue(hang())
    async with opened(fake, name) as backend:
        with anyio.move_on_after(0.1) as scope:
            await backend.turn(simple_request())
        assert scope.cancelled_caught
    with anyio.fail_after(3):
        while fake.disconnects < 1:
            await anyio.sleep(0.01)


async def test_a_delayed_answer_is_awaited(fake: FakeProvider) -> None:
    response = await response_of(fake, "openai", delayed(0.05, openai_text("late")))
    assert response.turn.text == "late"


async def test_proxy_variables_are_ignored(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(variable, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    response = await response_of(fake, "openai", openai_text("direct"))
    assert response.turn.text == "direct"


async def test_the_fake_reports_an_exhausted_script(fake: FakeProvider) -> None:
    failure = await failure_of(fake, "openai")
    assert failure.kind is FailureKind.TRANSIENT
    assert "Fake provider script exhausted: no reply queued for POST /responses" in failure.message
    assert fake.exhausted == 1


async def test_the_fake_routes_replies_to_their_provider(fake: FakeProvider) -> None:
    fake.enqueue(anthropic_text("for anthropic"), openai_text("for openai"))
    async with opened(fake, "openai") as openai, opened(fake, "anthropic") as anthropic:
        assert (await openai.turn(simple_request())).turn.text == "for openai"
        assert (await anthropic.turn(simple_request())).turn.text == "for anthropic"
    assert fake.pending == 0


async def test_the_fake_serves_model_lists(fake: FakeProvider) -> None:
    async with httpx2.AsyncClient(trust_env=False) as client:
        openai = (await client.get(f"{fake.base_url}/models")).json()
        anthropic = (await client.get(f"{fake.base_url}/v1/models")).json()
        missing = await client.get(f"{fake.base_url}/v2/models")
    assert [m["id"] for m in openai["data"]] == ["gpt-fake", "gpt-fake-mini"]
    assert [m["id"] for m in anthropic["data"]] == ["claude-fake", "claude-fake-haiku"]
    assert missing.status_code == 404
    assert [r.method for r in fake.requests] == ["GET", "GET", "GET"]


# --- environment: keys, test endpoints ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_api_key(name: str, variable: str, value: str | None) -> None:
    environment = {} if value is None else {variable: value}
    with pytest.raises(BackendUnavailable) as caught:
        EnvModelBackends(environment).open(name)
    assert str(caught.value) == f"{variable} is required for this Agent backend."


def test_a_key_of_the_other_provider_does_not_count() -> None:
    with pytest.raises(BackendUnavailable, match=r"^ANTHROPIC_API_KEY is required"):
        EnvModelBackends({"OPENAI_API_KEY": "sk-1"}).open("anthropic")


def test_a_key_that_cannot_be_a_header_is_refused_without_echo() -> None:
    with pytest.raises(BackendUnavailable) as caught:
        EnvModelBackends({"OPENAI_API_KEY": "sk-sécret\n"}).open("openai")
    assert "OPENAI_API_KEY contains characters" in str(caught.value)
    assert "sécret" not in str(caught.value)


@pytest.mark.parametrize("name", ["", "codex", "OpenAI", "openai "])
def test_unknown_backend(name: str) -> None:
    backends = EnvModelBackends({"OPENAI_API_KEY": "k"})
    with pytest.raises(BackendUnavailable) as caught:
        backends.open(name)
    assert str(caught.value) == (
        f"Unknown Agent backend: {name}; use one of: openai, anthropic, openai-chat."
    )
    with pytest.raises(BackendUnavailable):
        backends.test_endpoint(name)


async def test_defaults_are_the_real_apis() -> None:
    backends: ModelBackends = EnvModelBackends({"OPENAI_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2"})
    assert backends.test_endpoint("openai") is None
    assert backends.test_endpoint("anthropic") is None
    openai = backends.open("openai")
    anthropic = backends.open("anthropic")
    assert isinstance(openai, OpenAIResponsesBackend) and openai.name == "openai"
    assert isinstance(anthropic, AnthropicMessagesBackend) and anthropic.name == "anthropic"
    assert repr(openai) == "OpenAIResponsesBackend(url='https://api.openai.com/v1/responses')"
    assert (
        repr(anthropic) == "AnthropicMessagesBackend(url='https://api.anthropic.com/v1/messages')"
    )
    await openai.aclose()
    await anthropic.aclose()


@pytest.mark.parametrize(
    ("backend", "value", "expected"),
    [
        ("openai", "", None),
        ("openai", "http://127.0.0.2:1", "http://127.0.0.2:1"),
        ("openai", "http://127.0.0.1:8080/", "http://127.0.0.1:8080"),
        ("openai", "https://127.255.255.254/base/", "https://127.255.255.254/base"),
        ("openai", "http://localhost:9", "http://localhost:9"),
        ("openai", "HTTP://LocalHost:9", "http://LocalHost:9"),
        ("openai", "http://[::1]:9", "http://[::1]:9"),
        # The Anthropic variable names the root, but a trailing /v1 is tolerated.
        ("anthropic", "http://127.0.0.1:9", "http://127.0.0.1:9"),
        ("anthropic", "http://127.0.0.1:9/v1", "http://127.0.0.1:9"),
        ("anthropic", "http://127.0.0.1:9/v1/", "http://127.0.0.1:9"),
        ("anthropic", "http://127.0.0.1:9/proxy/v1", "http://127.0.0.1:9/proxy"),
        # Remote endpoints over https: Azure's v1 API, OpenRouter, a gateway.
        (
            "openai",
            "https://my-resource.openai.azure.com/openai/v1/",
            "https://my-resource.openai.azure.com/openai/v1",
        ),
        ("openai-chat", "https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"),
        ("openai-chat", "http://localhost:11434/v1", "http://localhost:11434/v1"),
        ("anthropic", "https://llm-gateway.example.com/v1", "https://llm-gateway.example.com"),
    ],
)
def test_accepted_test_endpoints(backend: str, value: str, expected: str | None) -> None:
    backends = EnvModelBackends({ENDPOINT_VARIABLES[backend]: value})
    assert backends.test_endpoint(backend) == expected


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("http://example.com", "host 'example.com' is not loopback, so it needs https://"),
        ("http://128.0.0.1", "host '128.0.0.1' is not loopback"),
        ("http://10.0.0.1:80", "is not loopback"),
        ("http://[::2]", "host '::2' is not loopback"),
        ("http://[::ffff:127.0.0.1]", "is not loopback"),
        ("http://localhost.example.com", "is not loopback"),
        ("http://127.1", "is not loopback"),
        ("ftp://127.0.0.1", "its scheme is not https (or http on a loopback host)"),
        ("127.0.0.1:8080", "its scheme is not https"),
        ("http://user:pw@127.0.0.1", "must not contain credentials"),
        ("https://token@api.example.com", "must not contain credentials"),
        ("http://127.0.0.1/?a=1", "must not contain a query"),
        ("https://api.example.com/v1?api-version=1", "must not contain a query"),
        ("http://127.0.0.1/?", "must not contain a query"),
        ("http://127.0.0.1/#x", "must not contain a fragment"),
        ("http:///path", "it has no host"),
        ("http://127.0.0.1:99999", "it is not a valid URL"),
        ("http://127.0.0.1\n.evil.com", "whitespace, control characters or a backslash"),
        (" http://127.0.0.1", "whitespace, control characters or a backslash"),
        ("http://127.0.0.1\\@evil.com", "whitespace, control characters or a backslash"),
    ],
)
@pytest.mark.parametrize(("backend", "variable"), list(ENDPOINT_VARIABLES.items()))
def test_refused_test_endpoints(value: str, rule: str, backend: str, variable: str) -> None:
    backends = EnvModelBackends({variable: value, "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})
    for attempt in (backends.test_endpoint, backends.open, backends.endpoint):
        with pytest.raises(BackendUnavailable) as caught:
            attempt(backend)
        message = str(caught.value)
        assert message.startswith(
            f"{variable} must be an https:// URL, or an http:// URL on localhost, "
            "127.0.0.0/8 or [::1], without credentials, query or fragment; "
        )
        assert rule in message
        assert message.endswith("Correct or unset it.")


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("http://ollama.lan:11434/v1", "is not loopback, so it needs https://"),
        ("https://user:pw@gateway.example.com", "must not contain credentials"),
    ],
)
def test_a_refused_profile_base_url_names_the_key(value: str, rule: str) -> None:
    backends = EnvModelBackends({"OPENAI_API_KEY": "k"})
    with pytest.raises(BackendUnavailable) as caught:
        backends.open("openai-chat", value)
    assert str(caught.value).startswith("base_url must be an https:// URL")
    assert rule in str(caught.value)
    assert "pw" not in str(caught.value)


def test_a_refused_endpoint_does_not_echo_credentials() -> None:
    backends = EnvModelBackends({"ARTIFACTIZE_OPENAI_BASE_URL": "http://admin:hunter2@example.com"})
    with pytest.raises(BackendUnavailable) as caught:
        backends.test_endpoint("openai")
    assert "hunter2" not in str(caught.value)


async def test_each_backend_owns_a_client_closed_by_aclose() -> None:
    created: list[httpx2.AsyncClient] = []

    def factory(proxy: str | None = None) -> httpx2.AsyncClient:
        created.append(new_provider_client(proxy))
        return created[-1]

    backends = EnvModelBackends({"OPENAI_API_KEY": "a", "ANTHROPIC_API_KEY": "b"}, factory)
    first, second = backends.open("openai"), backends.open("anthropic")
    assert len(created) == 2 and created[0] is not created[1]
    await first.aclose()
    assert created[0].is_closed and not created[1].is_closed
    await second.aclose()
    assert created[1].is_closed


def test_the_client_has_no_read_cap_no_redirects_and_ignores_the_environment() -> None:
    client = new_provider_client()
    assert client.timeout.connect == 10.0
    assert client.timeout.read is None and client.timeout.write is None
    assert client.follow_redirects is False
    assert client.trust_env is False


# --- hostile: the key never surfaces ------------------------------------------------------

SECRET_OPENAI = "sk-proj-SECRET-0123456789abcdef"
SECRET_ANTHROPIC = "sk-ant-SECRET-0123456789abcdef"


def echo_headers(status: int) -> Any:
    """A responder that puts every header it received into its error message and body."""

    def respond(request: ReceivedRequest) -> Reply:
        dump = json.dumps(request.headers)
        return error(status, f"Request headers were {dump}", {"X-Echo": "1"})

    return respond


def assert_no_secret(failure: BaseException, secret: str) -> None:
    for text in (str(failure), repr(failure), *map(str, failure.args)):
        assert secret not in text
        assert secret[:12] not in text  # not even a truncated prefix
    assert getattr(failure, "message", "") and secret not in failure.message  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", [400, 401, 429, 500])
@pytest.mark.parametrize(
    ("name", "secret"), [("openai", SECRET_OPENAI), ("anthropic", SECRET_ANTHROPIC)]
)
async def test_an_echoing_server_never_gets_the_key_into_a_message(
    name: str, secret: str, status: int
) -> None:
    with FakeProvider(responder=echo_headers(status)) as fake:
        env = {**fake.env(openai_key=secret, anthropic_key=secret)}
        async with opened_on(env, name) as backend:
            failure = await turn_failure(backend)
        (received,) = fake.posts()
    assert secret in json.dumps(received.headers)  # the server really had it to echo
    assert "[REDACTED]" in failure.message
    assert_no_secret(failure, secret)
    assert secret not in repr(backend)


@pytest.mark.parametrize("name", BACKENDS)
async def test_a_key_echoed_in_a_long_raw_body_is_redacted_before_truncation(name: str) -> None:
    secret = "sk-LONG-SECRET-0123456789abcdefghijklmnop"

    def respond(request: ReceivedRequest) -> Reply:
        # The key straddles the truncation point: cutting first would leave its prefix.
        head = "x" * (MAX_PROVIDER_MESSAGE_CHARS - 40)
        return raw(f"{head}{secret} tail".encode(), 500)

    with FakeProvider(responder=respond) as fake:
        async with opened_on(fake.env(openai_key=secret, anthropic_key=secret), name) as backend:
            failure = await turn_failure(backend)
    assert_no_secret(failure, secret)
    assert len(failure.message) <= MAX_PROVIDER_MESSAGE_CHARS


async def test_a_transport_failure_message_never_holds_the_key() -> None:
    secret = "sk-TRANSPORT-SECRET-0123456789"
    url = f"http://127.0.0.1:{closed_port()}"
    env = {"ARTIFACTIZE_OPENAI_BASE_URL": url, "OPENAI_API_KEY": secret}
    async with opened_on(env, "openai") as backend:
        failure = await turn_failure(backend)
    assert_no_secret(failure, secret)
    assert failure.__context__ is None
